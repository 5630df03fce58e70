package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program"
)

// builder translates one method's op list, for B sessions at once (a batched graph;
// B = 1 is the method's own graph). Activations are 2-D values [rows, width] (rows = R =
// B·S, the slots one after another, or B after a last_row linear); a program buffer written
// in place gets a new value each time (cur holds the latest). Attention and the cache rows
// are per slot: slot b has its own position, mask and caches.
type builder struct {
	g       *graph
	w       *weights
	md      *program.Metadata
	m       *program.Method
	B, S, C int
	cache   ElemType
	cur     map[string]string // program buffer → its current value
	width   map[string]int    // program buffer → last dimension
	rows    map[string]string // slot cache name (SlotName) → the rows output value (cache_write)
	kvRows  map[[2]string]string
	slots   []*slot
	gemmF32 bool // f32 weights through Gemm(transB=1) over the program's bytes (hf_encode graphs)

	// Values computed once per graph, on first use.
	posFlat, ids, last string
}

// slot holds the values of one session of a (batched) graph, computed on first use.
type slot struct {
	b            int
	first        int64             // its rows are first … first+S-1 of the activations
	pos1, mask2d string            // pos = position_ids[b][0] as [1]; attention_mask[b] as [S, C]
	visible      map[[2]int]string // (cache rows, window) → [S, m+S] bool
	held         map[int64]string  // cache rows L → min(pos, L) as [1]
}

// SlotName is the name of a per-session input or output of a batched graph: name for
// slot b (k_cache_3 of slot 2 is k_cache_3.2, k_rows_3 is k_rows_3.2). A graph of one
// session (B = 1) uses the names themselves.
func SlotName(name string, b, B int) string {
	if B == 1 {
		return name
	}
	return fmt.Sprintf("%s.%d", name, b)
}

func buildMethod(md *program.Metadata, m *program.Method, w *weights, B int) (*graph, error) {
	cache, ok := elemType(md.CacheDType)
	if !ok || (cache != Float && cache != Float16) {
		return nil, fmt.Errorf("onnx: cache dtype %q is not f32 or f16", md.CacheDType)
	}
	if B < 1 {
		return nil, fmt.Errorf("onnx: %d sessions in a graph", B)
	}
	b := newBuilder(md, m, w, m.Step, md.MaxContext)
	b.cache = cache
	if B > 1 {
		b.g = newGraph(fmt.Sprintf("%s.batch%d", m.Name, B))
		b.B, b.slots = B, nil
		for i := range B {
			b.slots = append(b.slots, &slot{b: i, first: int64(i * m.Step), visible: map[[2]int]string{}, held: map[int64]string{}})
		}
	}
	S, C := int64(b.S), int64(b.C)
	b.g.input(program.InputIDs, Int64, int64(B), S)
	b.g.input(program.AttentionMask, Bool, int64(B), 1, S, C)
	b.g.input(program.PositionIDs, Int64, int64(B), S)
	for s := range B {
		for l, ly := range md.Layers {
			H, L := int64(ly.KVHeads), int64(ly.CacheRows)
			b.g.input(SlotName(program.KCache(l), s, B), cache, 1, H, L, int64(ly.KHeadDim))
			b.g.input(SlotName(program.VCache(l), s, B), cache, 1, H, L, int64(ly.VHeadDim))
		}
	}
	for i := range m.Ops {
		op := &m.Ops[i]
		if err := b.op(op); err != nil {
			return nil, &OpError{Method: m.Name, Index: i, Kind: op.Kind, Problem: err.Error()}
		}
	}
	return b.g, b.outputs()
}

// R is the rows of the activations: every slot's S rows.
func (b *builder) R() int64 { return int64(b.B * b.S) }

// newBuilder starts the graph of method m over rows rows of a program of context c, for
// one session (buildMethod widens it to B).
func newBuilder(md *program.Metadata, m *program.Method, w *weights, rows, c int) *builder {
	b := &builder{g: newGraph(m.Name), w: w, md: md, m: m, B: 1, S: rows, C: c,
		cur: map[string]string{}, width: map[string]int{}, rows: map[string]string{}, kvRows: map[[2]string]string{},
		slots: []*slot{{visible: map[[2]int]string{}, held: map[int64]string{}}}}
	for _, list := range [][]program.IO{m.Inputs, m.Outputs, m.Activations} {
		for _, io := range list {
			if len(io.Shape) > 0 {
				b.width[io.Name] = io.Shape[len(io.Shape)-1]
			}
		}
	}
	return b
}

// outputs names the graph's outputs: the logits [B, rows, V] and every slot's cache rows.
func (b *builder) outputs() error {
	out, ok := b.m.Output(program.Logits)
	logits, written := b.cur[program.Logits]
	if !ok || !written || len(out.Shape) != 3 {
		return fmt.Errorf("onnx: method %q writes no logits [1,rows,V]", b.m.Name)
	}
	dims := []int64{int64(b.B), int64(out.Shape[1]), int64(out.Shape[2])}
	b.g.opNamed("Reshape", program.Logits, []string{logits, b.g.ints(dims...)})
	b.g.outputs = append(b.g.outputs, valueInfo{name: program.Logits, typ: Float, dims: dims})
	renamed := map[string]string{} // rows value → the output it was renamed to
	for s := range b.B {
		for l, ly := range b.md.Layers {
			for _, c := range []struct {
				name string
				d    int
			}{{program.KCache(l), ly.KHeadDim}, {program.VCache(l), ly.VHeadDim}} {
				cache := SlotName(c.name, s, b.B)
				rows, ok := b.rows[cache]
				if !ok {
					return fmt.Errorf("onnx: method %q never writes %s", b.m.Name, c.name)
				}
				name := SlotName(RowsName(c.name), s, b.B)
				if r, ok := renamed[rows]; ok {
					b.g.opNamed("Identity", name, []string{r}) // rows two outputs share
				} else if b.g.rename(rows, name) {
					renamed[rows] = name
				} else {
					b.g.opNamed("Identity", name, []string{rows})
				}
				b.g.outputs = append(b.g.outputs, valueInfo{name: name, typ: b.cache, dims: []int64{1, int64(ly.KVHeads), int64(b.S), int64(c.d)}})
			}
		}
	}
	return nil
}

// value returns the current value of an op input: an activation or output written by an
// earlier op, a graph input, or a constant tensor (a raw initializer).
func (b *builder) value(name string) (string, error) {
	if v, ok := b.cur[name]; ok {
		return v, nil
	}
	if _, ok := b.m.Input(name); ok {
		return name, nil
	}
	if t, ok := b.w.tensors[name]; ok {
		if t.DType.Quantized() {
			return "", nil // a q8/q4 matrix: the op declares its MatMulNBits initializers
		}
		v, _, err := b.w.raw(b.g, name)
		return v, err
	}
	return "", fmt.Errorf("%q is read before any op writes it", name)
}

// values resolves every input of op, but the matrices linear and moe multiply by, which
// b.matmul declares in the layout it uses (an f32 matrix's transposed copy: its raw bytes
// would be an initializer no node reads).
func (b *builder) values(op *program.Op) ([]string, error) {
	vs := make([]string, len(op.In))
	for i, n := range op.In {
		if (op.Kind == program.OpLinear && i == 1 || op.Kind == program.OpMoE && i >= 1) && b.w.tensors[n].Name != "" {
			continue
		}
		v, err := b.value(n)
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	return vs, nil
}

func (b *builder) op(op *program.Op) error {
	in, err := b.values(op)
	if err != nil {
		return err
	}
	out := op.Out[0]
	g := b.g
	var y string
	switch op.Kind {
	case program.OpEmbed:
		y, err = b.embed(op, in)
	case program.OpRMSNorm:
		y, err = b.rmsNorm(op, in)
	case program.OpLinear:
		y, err = b.linear(op, in)
	case program.OpRoPE:
		y, err = b.rope(op, in)
	case program.OpAttention:
		y, err = b.attention(op, in)
	case program.OpCacheWrite:
		return b.cacheWrite(op, in)
	case program.OpAdvance:
		if io, ok := b.m.Input(op.In[0]); !ok || io.DType != program.I64 || len(io.Shape) != 0 {
			return fmt.Errorf("advance of %q, which is not an i64 counter input", op.In[0])
		}
		return nil // the caller advances the counters
	case program.OpAdd:
		y = g.binary("Add", in[0], in[1])
	case program.OpGLU:
		y, err = b.glu(op.Attr.Activation, in[0], in[1])
	case program.OpMoE:
		y, err = b.moe(op, in)
	case program.OpSoftCap:
		y = b.softCap(in[0], op.Attr.SoftCap)
	case program.OpScale:
		y = g.binary("Mul", in[0], g.f32(op.Attr.Scale))
	default:
		return fmt.Errorf("no ONNX translation for op kind %q", op.Kind)
	}
	if err != nil {
		return err
	}
	if _, isInput := b.m.Input(out); isInput {
		return fmt.Errorf("writes the input %q, which the graph reads only", out)
	}
	b.cur[out] = y
	return nil
}

// tensor returns a constant tensor's table entry.
func (b *builder) tensor(name string) (program.Tensor, error) {
	t, ok := b.w.tensors[name]
	if !ok || len(t.Shape) != 2 {
		return program.Tensor{}, fmt.Errorf("%q is not a constant 2-D tensor", name)
	}
	return t, nil
}

// embed gathers the rows of the ids: x = table[ids] * scale, [S, D] f32.
func (b *builder) embed(op *program.Op, in []string) (string, error) {
	g := b.g
	t, err := b.tensor(op.In[1])
	if err != nil {
		return "", err
	}
	ids := b.idsFlat()
	var x string
	switch t.DType {
	case program.F32, program.F16, program.BF16:
		table, typ, err := b.w.raw(g, t.Name)
		if err != nil {
			return "", err
		}
		x = g.op("Gather", []string{table, ids}, attrInt("axis", 0))
		if typ != Float {
			x = g.cast(x, Float)
		}
	case program.Q8, program.Q4:
		x = b.gatherQuantized(t, ids)
	default:
		return "", fmt.Errorf("embedding %q has dtype %s", t.Name, t.DType)
	}
	if op.Attr.Scale != 1 {
		x = g.binary("Mul", x, g.f32(op.Attr.Scale))
	}
	return x, nil
}

// gatherQuantized gathers and dequantizes rows ids of a q8 or q4 table from the
// MatMulNBits initializers (shared with a tied output matrix): [S, D] f32.
func (b *builder) gatherQuantized(t program.Tensor, ids string) string {
	g := b.g
	blocks, scales, bits := b.w.quantized(g, t)
	D := int64(t.Shape[1])
	nb := (D + kernels.BlockSize - 1) / kernels.BlockSize
	q := g.op("Gather", []string{blocks, ids}, attrInt("axis", 0)) // [S, nb, blob] u8
	var vals string
	if bits == 8 {
		vals = g.binary("Sub", g.cast(q, Float), g.f32(128))
	} else {
		// byte i holds column 2i in its low nibble, 2i+1 in its high one (each q+8)
		hi := g.cast(g.op("BitShift", []string{q, g.u8(4)}, attrString("direction", "RIGHT")), Float)
		lo := g.binary("Sub", g.cast(q, Float), g.binary("Mul", hi, g.f32(16)))
		pairs := g.op("Concat", []string{g.op("Unsqueeze", []string{lo, g.ints(-1)}), g.op("Unsqueeze", []string{hi, g.ints(-1)})}, attrInt("axis", -1))
		vals = g.binary("Sub", g.reshape(pairs, b.R(), nb, kernels.BlockSize), g.f32(8))
	}
	d := g.op("Unsqueeze", []string{g.op("Gather", []string{scales, ids}, attrInt("axis", 0)), g.ints(-1)}) // [S, nb, 1]
	x := g.reshape(g.binary("Mul", vals, d), b.R(), nb*kernels.BlockSize)
	if nb*kernels.BlockSize != D {
		x = g.slice(x, 1, 0, D)
	}
	return x
}

// rmsNorm normalizes each group of width values: x · 1/sqrt(mean(x²)+eps) · weight, as
// ONNX Runtime's SimplifiedLayerNormalization (x / sqrt(mean(x²)+eps) · weight, one node;
// ORT fuses it with a residual Add before it into SkipSimplifiedLayerNormalization). A norm
// without a weight multiplies by ones.
func (b *builder) rmsNorm(op *program.Op, in []string) (string, error) {
	g, w := b.g, op.Attr.Width
	W := b.width[op.In[0]]
	if W == 0 || W%w != 0 {
		return "", fmt.Errorf("norm width %d does not divide %q's width %d", w, op.In[0], W)
	}
	x := in[0]
	if w != W {
		x = g.reshape(x, -1, int64(w))
	}
	scale := ""
	if len(in) == 2 {
		scale = in[1]
	} else {
		scale = g.constant(Float, []int64{int64(w)}, ones32(w))
	}
	y := g.op("SimplifiedLayerNormalization", []string{x, scale}, attrInt("axis", -1), attrFloat("epsilon", op.Attr.Eps), attrInt("stash_type", 1))
	if w != W {
		y = g.reshape(y, -1, int64(W))
	}
	return y, nil
}

// ones32 is n float32 ones, little-endian.
func ones32(n int) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(1))
	}
	return b
}

// linear is y = x Wᵀ + bias, over the last real row only with last_row.
func (b *builder) linear(op *program.Op, in []string) (string, error) {
	g := b.g
	t, err := b.tensor(op.In[1])
	if err != nil {
		return "", err
	}
	x := in[0]
	if op.Attr.LastRow && b.S > 1 {
		x = g.op("Gather", []string{x, b.lastRows()}, attrInt("axis", 0)) // [B, K]
	}
	bias := ""
	if len(in) == 3 {
		bias = in[2]
	}
	return b.matmul(x, t, bias)
}

// matmul is x Wᵀ (+ bias) for a constant matrix t [N, K] of any weight dtype.
func (b *builder) matmul(x string, t program.Tensor, bias string) (string, error) {
	g := b.g
	N, K := int64(t.Shape[0]), int64(t.Shape[1])
	switch t.DType {
	case program.F32, program.F16, program.BF16:
		if t.DType == program.F32 && !b.gemmF32 {
			// MatMul over the transposed copy rather than Gemm(transB=1) over the program's
			// [N, K] bytes: decode 1.25× on the f32 Qwen3-0.6B shape, prefill 0.79×
			// (BenchmarkLinearForms and the program, docs/delegate.md)
			y := g.op("MatMul", []string{x, b.w.transposed(g, t)})
			if bias != "" {
				y = g.binary("Add", y, bias)
			}
			return y, nil
		}
		w, typ, err := b.w.raw(g, t.Name)
		if err != nil {
			return "", err
		}
		if typ != Float {
			w = g.cast(w, Float)
		}
		ins := []string{x, w}
		if bias != "" {
			ins = append(ins, bias)
		}
		return g.op("Gemm", ins, attrInt("transB", 1)), nil
	case program.Q8, program.Q4:
		blocks, scales, bits := b.w.quantized(g, t)
		y := g.msOp("MatMulNBits", []string{x, blocks, scales},
			attrInt("K", K), attrInt("N", N), attrInt("bits", int64(bits)), attrInt("block_size", kernels.BlockSize), attrInt("accuracy_level", 4))
		if bias != "" {
			y = g.binary("Add", y, bias)
		}
		return y, nil
	}
	return "", fmt.Errorf("weight %q has dtype %s", t.Name, t.DType)
}

// rope rotates the first 2·half dims of each head by the row's position (rotate-half).
func (b *builder) rope(op *program.Op, in []string) (string, error) {
	g := b.g
	nin := len(op.In) // [x, position_ids, cos, sin], or [x, cos, sin] with implicit positions
	cos, err := b.tensor(op.In[nin-2])
	if err != nil {
		return "", err
	}
	hd, W, half := int64(op.Attr.HeadDim), int64(b.width[op.In[0]]), int64(cos.Shape[1])
	if hd <= 0 || W%hd != 0 || 2*half > hd {
		return "", fmt.Errorf("rope of width %d, head_dim %d, table width %d", W, hd, half)
	}
	// positions past the table (padding rows only) are clamped: their rows are never used
	pos := g.op("Min", []string{b.positions(), g.ints(int64(cos.Shape[0] - 1))})
	c := g.op("Unsqueeze", []string{g.op("Gather", []string{in[nin-2], pos}, attrInt("axis", 0)), g.ints(1)}) // [S, 1, half]
	s := g.op("Unsqueeze", []string{g.op("Gather", []string{in[nin-1], pos}, attrInt("axis", 0)), g.ints(1)})
	x := g.reshape(in[0], b.R(), W/hd, hd)
	x1, x2 := g.slice(x, 2, 0, half), g.slice(x, 2, half, 2*half)
	y1 := g.binary("Sub", g.binary("Mul", x1, c), g.binary("Mul", x2, s))
	y2 := g.binary("Add", g.binary("Mul", x2, c), g.binary("Mul", x1, s))
	parts := []string{y1, y2}
	if 2*half < hd {
		parts = append(parts, g.slice(x, 2, 2*half, hd))
	}
	return g.reshape(g.op("Concat", parts, attrInt("axis", 2)), b.R(), W), nil
}

// glu is act(gate) · up.
func (b *builder) glu(activation, gate, up string) (string, error) {
	g := b.g
	var act string
	switch activation {
	case program.ActSiLU:
		act = g.binary("Mul", gate, g.op("Sigmoid", []string{gate}))
	case program.ActGELUTanh:
		// ½·g·(1 + tanh(√(2/π)·(g + 0.044715·g³)))
		g3 := g.binary("Mul", g.binary("Mul", gate, gate), gate)
		inner := g.binary("Mul", g.binary("Add", gate, g.binary("Mul", g3, g.f32(0.044715))), g.f32(float32(math.Sqrt(2/math.Pi))))
		act = g.binary("Mul", g.binary("Mul", gate, g.f32(0.5)), g.binary("Add", g.f32(1), g.op("Tanh", []string{inner})))
	default:
		return "", fmt.Errorf("glu activation %q", activation)
	}
	return g.binary("Mul", act, up), nil
}

// softCap is c·tanh(x/c).
func (b *builder) softCap(x string, c float32) string {
	g := b.g
	return g.binary("Mul", g.op("Tanh", []string{g.binary("Div", x, g.f32(c))}), g.f32(c))
}

// cacheWrite records the rows the caller writes into cache: x as [1, H, S, D] in the
// cache dtype, per slot.
func (b *builder) cacheWrite(op *program.Op, in []string) error {
	cache := op.In[1]
	io, ok := b.m.Input(cache)
	if !ok || op.Out[0] != cache || len(io.Shape) != 4 {
		return fmt.Errorf("cache_write into %q, which is not an in-place [1,H,L,D] cache input", cache)
	}
	if b.width[op.In[0]] != io.Shape[1]*io.Shape[3] {
		return fmt.Errorf("cache_write of %q (width %d) into %q %v", op.In[0], b.width[op.In[0]], cache, io.Shape)
	}
	for _, sl := range b.slots {
		name := SlotName(cache, sl.b, b.B)
		if _, done := b.rows[name]; done {
			return fmt.Errorf("writes %q twice in one step", cache)
		}
		b.rows[name] = b.kvRowsOf(sl, in[0], int64(io.Shape[1]), int64(io.Shape[3]))
	}
	return nil
}

// kvRowsOf turns slot sl's current rows of x [R, H·D] into [1, H, S, D] in the cache
// dtype (rounded to f16 for f16 caches), once per value and slot.
func (b *builder) kvRowsOf(sl *slot, x string, H, D int64) string {
	key := [2]string{x, fmt.Sprint(sl.b)}
	if r, ok := b.kvRows[key]; ok {
		return r
	}
	g := b.g
	r := g.transpose(g.reshape(b.slotRows(sl, x), 1, int64(b.S), H, D), 0, 2, 1, 3)
	if b.cache != Float {
		r = g.cast(r, b.cache)
	}
	b.kvRows[key] = r
	return r
}

// slotRows is slot sl's S rows of the activation x [R, width] (x itself when B = 1).
func (b *builder) slotRows(sl *slot, x string) string {
	if b.B == 1 {
		return x
	}
	return b.g.slice(x, 0, sl.first, sl.first+int64(b.S))
}

// idsFlat is input_ids as [R].
func (b *builder) idsFlat() string {
	if b.ids == "" {
		b.ids = b.g.reshape(program.InputIDs, b.R())
	}
	return b.ids
}

// positions is position_ids as [R], clamped at 0.
func (b *builder) positions() string {
	if b.posFlat == "" {
		b.posFlat = b.g.op("Max", []string{b.g.reshape(program.PositionIDs, b.R()), b.g.ints(0)})
	}
	return b.posFlat
}

// position is slot sl's pos = position_ids[b][0] as [1].
func (b *builder) position(sl *slot) string {
	if sl.pos1 == "" {
		sl.pos1 = b.g.slice(b.positions(), 0, sl.first, sl.first+1)
	}
	return sl.pos1
}

// mask is slot sl's attention_mask as [S, C].
func (b *builder) mask(sl *slot) string {
	if sl.mask2d == "" {
		m := b.g.reshape(program.AttentionMask, b.R(), int64(b.C))
		if b.B > 1 {
			m = b.g.slice(m, 0, sl.first, sl.first+int64(b.S))
		}
		sl.mask2d = m
	}
	return sl.mask2d
}

// lastRows is, for every slot, the row of its last real token among the R rows, as [B]:
// b·S + n_b-1, where row i of slot b is real when pos+i < C and attention_mask[b][i][pos+i].
func (b *builder) lastRows() string {
	if b.last != "" {
		return b.last
	}
	g := b.g
	var parts []string
	for _, sl := range b.slots {
		abs := g.binary("Add", b.position(sl), g.ints(iota64(b.S)...)) // [S]
		inside := g.binary("Less", abs, g.ints(int64(b.C)))
		idx := g.reshape(g.op("Min", []string{abs, g.ints(int64(b.C - 1))}), int64(b.S), 1)
		diag := g.reshape(g.op("GatherElements", []string{b.mask(sl), idx}, attrInt("axis", 1)), int64(b.S))
		real := g.cast(g.op("And", []string{diag, inside}), Int64)
		n := g.op("ReduceSum", []string{real, g.ints(0)}, attrInt("keepdims", 1)) // [1]
		parts = append(parts, g.binary("Add", g.op("Max", []string{g.binary("Sub", n, g.ints(1)), g.ints(0)}), g.ints(sl.first)))
	}
	b.last = parts[0]
	if len(parts) > 1 {
		b.last = g.op("Concat", parts, attrInt("axis", 0))
	}
	return b.last
}

// iota64 is 0, 1, …, n-1.
func iota64(n int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i)
	}
	return v
}
