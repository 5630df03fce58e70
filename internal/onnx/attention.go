package onnx

import (
	"fmt"
	"math"

	"github.com/hfstatic/hfstatic/program"
)

// attention translates the attention op, slot by slot (a batched graph concatenates the
// slots' outputs). Keys and values are the first m = min(pos, L) slots of the incoming
// cache (the others hold no position yet) followed by the S current rows (rounded to the
// cache dtype, as the cache will hold them): [Hkv, m+S, D], so a step early in a long
// context does not pay for the whole cache. Query head h = g·group + r reads kv head g,
// so the queries are laid out [Hkv, group·S, Dk] and one batched MatMul per kv head gives
// the scores. Which of the m+S columns row i sees is the same for every layer with the
// same cache rows and window (visibility).
func (b *builder) attention(op *program.Op, in []string) (string, error) {
	g, at := b.g, op.Attr
	kc, vc := op.In[3], op.In[4]
	for _, c := range []string{kc, vc} {
		if _, ok := b.m.Input(c); !ok {
			return "", fmt.Errorf("attention over %q, which is not a cache input", c)
		}
		if _, written := b.rows[SlotName(c, 0, b.B)]; written {
			return "", fmt.Errorf("attention reads %q after a cache_write of this step", c)
		}
	}
	if op.In[5] != program.AttentionMask {
		return "", fmt.Errorf("attention mask %q is not %s", op.In[5], program.AttentionMask)
	}
	kio, _ := b.m.Input(kc)
	if len(kio.Shape) != 4 {
		return "", fmt.Errorf("cache %q %v is not [1,H,L,D]", kc, kio.Shape)
	}
	Hq, Hkv, Dk, Dv := int64(at.Heads), int64(at.KVHeads), int64(at.HeadDim), int64(at.VHeadDim)
	S, L := int64(b.S), int64(kio.Shape[2])
	if Hkv <= 0 || Hq%Hkv != 0 || int64(kio.Shape[1]) != Hkv || int64(kio.Shape[3]) != Dk {
		return "", fmt.Errorf("%d heads over %d kv heads of dim %d, cache %q %v", Hq, Hkv, Dk, kc, kio.Shape)
	}
	for _, c := range []struct {
		name  string
		width int64
	}{{op.In[0], Hq * Dk}, {op.In[1], Hkv * Dk}, {op.In[2], Hkv * Dv}} {
		if int64(b.width[c.name]) != c.width {
			return "", fmt.Errorf("%q has width %d, want %d", c.name, b.width[c.name], c.width)
		}
	}
	group := Hq / Hkv
	var outs []string
	for _, sl := range b.slots {
		// keys and values: [Hkv, m+S, D] f32, where only the first m = min(pos, L) slots
		// of a cache can hold a position (every later slot would be masked anyway)
		m := b.heldSlots(sl, L)
		kv := func(cache, cur string, D int64) string {
			held := g.op("Slice", []string{g.reshape(SlotName(cache, sl.b, b.B), Hkv, L, D), g.ints(0), m, g.ints(1)})
			all := g.op("Concat", []string{held, g.reshape(b.kvRowsOf(sl, cur, Hkv, D), Hkv, S, D)}, attrInt("axis", 1))
			if b.cache != Float {
				all = g.cast(all, Float)
			}
			return all
		}
		keys, vals := kv(kc, in[1], Dk), kv(vc, in[2], Dv)

		q := g.reshape(g.transpose(g.reshape(b.slotRows(sl, in[0]), S, Hq, Dk), 1, 0, 2), Hkv, group*S, Dk)
		scores := g.op("MatMul", []string{q, g.transpose(keys, 0, 2, 1)}) // [Hkv, group·S, m+S]
		scores = g.binary("Mul", scores, g.f32(at.Scale))
		if at.SoftCap > 0 {
			scores = b.softCap(scores, at.SoftCap)
		}
		scores = g.reshape(scores, Hkv, group, S, -1)
		scores = g.op("Where", []string{b.visibility(sl, L, at.Window), scores, g.f32(float32(math.Inf(-1)))})
		p := g.reshape(g.op("Softmax", []string{scores}, attrInt("axis", -1)), Hkv, group*S, -1)
		o := g.op("MatMul", []string{p, vals}) // [Hkv, group·S, Dv]
		outs = append(outs, g.reshape(g.transpose(g.reshape(o, Hq, S, Dv), 1, 0, 2), S, Hq*Dv))
	}
	if len(outs) == 1 {
		return outs[0], nil
	}
	return g.op("Concat", outs, attrInt("axis", 0)), nil
}

// heldSlots is m = min(pos, L) as [1]: the cache slots that hold a position.
func (b *builder) heldSlots(sl *slot, L int64) string {
	if m, ok := sl.held[L]; ok {
		return m
	}
	m := b.g.op("Min", []string{b.position(sl), b.g.ints(L)})
	sl.held[L] = m
	return m
}

// visibility is the [S, m+S] bool mask of the columns (the m = min(pos, L) cache slots that
// hold a position, then S current rows) each row attends to, as internal/exec's attention
// computes it:
//
//   - slot s holds position a = pos-1 - ((pos-1-s) mod L), valid when a ≥ 0 (positions
//     a < pos that the cache still holds); current row j is position pos+j, valid for
//     j ≤ i (causal) and pos+j < C;
//   - the column's position must be allowed by attention_mask[i];
//   - with a window W, a > pos+i-W.
//
// Column j = i of row i is always kept, so that a padding row never has all its columns
// masked (softmax would make NaN, and NaN·0 would reach the real rows through the values).
// For a real row the column is visible anyway.
func (b *builder) visibility(sl *slot, L int64, window int) string {
	key := [2]int{int(L), window}
	if v, ok := sl.visible[key]; ok {
		return v
	}
	g := b.g
	S, C := int64(b.S), int64(b.C)
	pos := b.position(sl) // [1]
	pm1 := g.binary("Sub", pos, g.ints(1))
	slotPos := g.binary("Sub", pm1, g.op("Mod", []string{g.binary("Sub", pm1, g.ints(iota64(int(L))...)), g.ints(L)})) // [L]
	curPos := g.binary("Add", pos, g.ints(iota64(int(S))...))                                                          // [S]
	abs := g.op("Concat", []string{slotPos, curPos}, attrInt("axis", 0))                                               // [L+S]
	valid := g.op("Concat", []string{
		g.op("GreaterOrEqual", []string{slotPos, g.ints(0)}),
		g.binary("Less", curPos, g.ints(C)),
	}, attrInt("axis", 0))
	rel := g.binary("Sub", abs, pos)                  // a - pos: < 0 for the cache, j for row j
	row := g.reshape(g.ints(iota64(int(S))...), S, 1) // i
	inMask := g.op("Gather", []string{b.mask(sl), g.op("Max", []string{g.op("Min", []string{abs, g.ints(C - 1)}), g.ints(0)})}, attrInt("axis", 1))
	vis := g.op("And", []string{g.op("And", []string{valid, inMask}), g.op("LessOrEqual", []string{rel, row})})
	if window > 0 {
		// a > pos+i-W ⇔ (a-pos) - i > -W
		vis = g.op("And", []string{vis, g.op("Greater", []string{g.binary("Sub", rel, row), g.ints(-int64(window))})})
	}
	vis = g.op("Or", []string{vis, g.op("Equal", []string{rel, row})})
	// drop the slots past m: [S, L+S] → [S, m+S]
	vis = g.op("Concat", []string{
		g.op("Slice", []string{vis, g.ints(0), b.heldSlots(sl, L), g.ints(1)}),
		g.slice(vis, 1, L, L+S),
	}, attrInt("axis", 1))
	sl.visible[key] = vis
	return vis
}
