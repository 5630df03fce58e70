package exec

import (
	"bytes"
	"fmt"
	"github.com/hfstatic/hfstatic/internal/align"
	"math"

	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program"
)

// attentionOp implements OpAttention: each real row attends to its session's incoming
// cache (absolute positions a < pos, slot a mod L) and to its session's current rows up to
// itself, as the mask and window allow. With a float16 cache the current rows are rounded
// to float16 first, so a step sees exactly what a later step would read back from the
// cache. The (row, head) pairs of every session in the pass run in parallel on the
// program's pool, each with the arithmetic of a serial loop.
type attentionOp struct {
	m                   *Method
	q, k, v, out        operand // (rows, Hq*Dk), (rows, Hkv*Dk), (rows, Hkv*Dv), (rows, Hq*Dv)
	kc, vc, mask        int     // program indexes: (1, Hkv, L, Dk), (1, Hkv, L, Dv), (1, 1, S, C)
	Hq, Hkv, Dk, Dv     int
	group, L, C, stride int // heads per kv head, cache rows, context, scores per head
	window              int
	scale, softCap      float32
	f16, grouped        bool // float16 caches; heads sharing a kv head run together

	work                   []attnWorker // per pool thread
	headFn, groupFn, f16Fn func(worker, i int)

	// Of the running pass.
	ps             *pass
	qs, ks, vs, os []float32
}

func (m *Method) compileAttention(op *program.Op, in []operand, out operand) (op, error) {
	q, k, v, kc, vc, mask := in[0], in[1], in[2], in[3], in[4], in[5]
	at := op.Attr
	if err := wantF32(q, k, v, out); err != nil {
		return nil, err
	}
	if kc.dtype != vc.dtype || (kc.dtype != program.F32 && kc.dtype != program.F16) {
		return nil, fmt.Errorf("caches %q %s and %q %s must both be f32 or f16", kc.name, kc.dtype, vc.name, vc.dtype)
	}
	if kc.idx < 0 || vc.idx < 0 || mask.idx < 0 {
		return nil, fmt.Errorf("caches and mask must be buffers")
	}
	Hq, Hkv, Dk, Dv := at.Heads, at.KVHeads, at.HeadDim, at.VHeadDim
	if Hkv <= 0 || Hq%Hkv != 0 {
		return nil, fmt.Errorf("%d heads do not share %d kv heads evenly", Hq, Hkv)
	}
	rows, _ := rows2(q)
	want := func(o operand, width int) error {
		if r, w := rows2(o); r != rows || w != width {
			return fmt.Errorf("%q %v is not [%d,%d]", o.name, o.shape, rows, width)
		}
		return nil
	}
	for _, c := range []struct {
		o operand
		w int
	}{{q, Hq * Dk}, {k, Hkv * Dk}, {v, Hkv * Dv}, {out, Hq * Dv}} {
		if err := want(c.o, c.w); err != nil {
			return nil, err
		}
	}
	for _, o := range []operand{q, k, v} {
		if o.idx >= 0 && m.selected[o.idx] {
			return nil, fmt.Errorf("attention over %q, whose rows are selected by a last_row linear", o.name)
		}
	}
	if len(kc.shape) != 4 || kc.shape[1] != Hkv || kc.shape[3] != Dk {
		return nil, fmt.Errorf("k cache %q %v is not [1,%d,L,%d]", kc.name, kc.shape, Hkv, Dk)
	}
	L := kc.shape[2]
	if len(vc.shape) != 4 || vc.shape[1] != Hkv || vc.shape[2] != L || vc.shape[3] != Dv {
		return nil, fmt.Errorf("v cache %q %v is not [1,%d,%d,%d]", vc.name, vc.shape, Hkv, L, Dv)
	}
	if mask.dtype != program.Bool || len(mask.shape) != 4 || mask.shape[2] != rows {
		return nil, fmt.Errorf("mask %q %s %v is not bool [1,1,%d,C]", mask.name, mask.dtype, mask.shape, rows)
	}
	C := mask.shape[3]
	if L > C {
		return nil, fmt.Errorf("cache %q has %d rows, more than the context %d", kc.name, L, C)
	}
	p := m.prog
	a := &attentionOp{m: m, q: q, k: k, v: v, out: out, kc: kc.idx, vc: vc.idx, mask: mask.idx,
		Hq: Hq, Hkv: Hkv, Dk: Dk, Dv: Dv, group: Hq / Hkv, L: L, C: C, stride: L + p.maxStep,
		window: at.Window, scale: at.Scale, softCap: at.SoftCap, f16: kc.dtype == program.F16}
	a.grouped = a.f16 && a.group > 1 && !p.perHead
	if a.f16 {
		p.pass.f16Width = max(p.pass.f16Width, Hkv*Dk, Hkv*Dv)
	}
	a.work = make([]attnWorker, p.threads)
	for w := range a.work {
		// scratch shared by all attention ops (they run one at a time)
		a.work[w] = attnWorker{a: a, scores: align.AsF32(p.shared(fmt.Sprintf("attention scores %d", w), 4*a.group*a.stride))}
	}
	a.headFn, a.groupFn, a.f16Fn = a.head, a.groupHead, a.toF16
	return a, nil
}

func (a *attentionOp) check(s *Step) error {
	if s.pos+s.n > a.C {
		return fmt.Errorf("%w: rows up to position %d exceed the context %d", ErrStep, s.pos+s.n-1, a.C)
	}
	return nil
}

func (a *attentionOp) run(ps *pass) {
	a.ps = ps
	a.qs, a.ks, a.vs, a.os = ps.f32(a.q), ps.f32(a.k), ps.f32(a.v), ps.f32(a.out)
	for w := range a.work {
		a.work[w].seg = -1
	}
	pool := a.m.prog.pool
	if a.f16 {
		if ps.rows == 1 {
			a.toF16(0, 0)
		} else {
			pool.For(ps.rows, a.f16Fn) // rows the matmuls left in both threads' caches
		}
	}
	if a.grouped {
		pool.For(ps.rows*a.Hkv, a.groupFn)
	} else {
		pool.For(ps.rows*a.Hq, a.headFn)
	}
	a.ps = nil
}

// toF16 rounds current row i of k and v to float16, as the cache will hold them.
func (a *attentionOp) toF16(_, i int) {
	ps, kw, vw := a.ps, a.Hkv*a.Dk, a.Hkv*a.Dv
	kernels.F32ToF16(ps.cur16k[i*kw:(i+1)*kw], a.ks[i*kw:(i+1)*kw])
	kernels.F32ToF16(ps.cur16v[i*vw:(i+1)*vw], a.vs[i*vw:(i+1)*vw])
}

// head computes pass row r, head h: one item of the parallel loop.
func (a *attentionOp) head(w, item int) {
	r, h := item/a.Hq, item%a.Hq
	c := &a.work[w]
	end := c.row(r)
	Dk, Dv, g := a.Dk, a.Dv, h/a.group
	c.sc = c.scores[:end-c.first]
	c.qv = a.qs[r*a.Hq*Dk+h*Dk : r*a.Hq*Dk+(h+1)*Dk]
	c.span(g, c.lo, end, Dk, spanKeys)
	finishScores(c.sc, c.first, c.lo, c.mrow, a.scale, a.softCap)
	kernels.Softmax(c.sc)
	c.o = a.os[r*a.Hq*Dv+h*Dv : r*a.Hq*Dv+(h+1)*Dv]
	clear(c.o)
	c.span(g, c.lo, end, Dv, spanValues)
}

// groupHead computes pass row r for the group heads of kv head g (f16 caches): the same
// arithmetic per head as head, with each key and value read once.
func (a *attentionOp) groupHead(w, item int) {
	r, g := item/a.Hkv, item%a.Hkv
	c := &a.work[w]
	end := c.row(r)
	Dk, Dv, group, S := a.Dk, a.Dv, a.group, a.stride
	c.sc = c.scores
	c.qv = a.qs[r*a.Hq*Dk+g*group*Dk : r*a.Hq*Dk+(g+1)*group*Dk]
	c.span(g, c.lo, end, Dk, spanGroupKeys)
	for hq := range group {
		sc := c.sc[hq*S : hq*S+end-c.first]
		finishScores(sc, c.first, c.lo, c.mrow, a.scale, a.softCap)
		kernels.Softmax(sc)
	}
	c.o = a.os[r*a.Hq*Dv+g*group*Dv : r*a.Hq*Dv+(g+1)*group*Dv]
	clear(c.o)
	c.span(g, c.lo, end, Dv, spanGroupValues)
}

// spanKind says what attnWorker.do computes over a run of positions.
type spanKind int

const (
	spanKeys        spanKind = iota // scores of one head
	spanValues                      // weighted values of one head
	spanGroupKeys                   // scores of a kv head's group of heads (f16)
	spanGroupValues                 // weighted values of a kv head's group of heads (f16)
)

// attnWorker is one worker's state: the views of the session (segment) whose row it
// computes, and the query row and head(s) being computed.
type attnWorker struct {
	a      *attentionOp
	scores []float32 // (group, stride), this worker's

	seg             int // segment whose views are loaded (-1: none)
	k32, v32        []float32
	k16, v16        []uint16
	mask            []byte // (S, C)
	pos, first, off int    // position of the segment's row 0; oldest cached position; its first pass row

	sc, qv, o []float32
	lo        int    // lowest position inside the window
	mrow      []byte // the query row's mask row
}

// row prepares the worker for pass row r and returns the end of the positions it may
// see: [first, end), less those before the window and those masked.
func (c *attnWorker) row(r int) (end int) {
	a, ps := c.a, c.a.ps
	if si := int(ps.rowSeg[r]); si != c.seg {
		g := &ps.segs[si]
		kb, vb := g.s.bufs[a.kc], g.s.bufs[a.vc]
		c.seg, c.k32, c.v32, c.k16, c.v16 = si, align.AsF32(kb), align.AsF32(vb), align.AsU16(kb), align.AsU16(vb)
		c.mask, c.pos, c.first, c.off = g.s.bufs[a.mask], g.pos, max(0, g.pos-a.L), g.off
	}
	i := r - c.off
	c.mrow = c.mask[i*a.C : (i+1)*a.C]
	c.lo = c.first
	if a.window > 0 {
		c.lo = max(c.first, c.pos+i-a.window+1)
	}
	return c.pos + i + 1
}

// span calls do for the runs of absolute positions [a0, a1) that are stored contiguously
// (ld values apart, starting at off) for kv head g: cached positions (a < pos) in slots
// a mod L, wrapping at most once, then the segment's current rows, width values per head.
func (c *attnWorker) span(g, a0, a1, width int, kind spanKind) {
	at, pos, L := c.a, c.pos, c.a.L
	a := a0
	for a < min(a1, pos) {
		sl := a % L
		e := min(a1, pos, a+L-sl)
		c.do(kind, a, e, (g*L+sl)*width, width)
		a = e
	}
	if a = max(a, pos); a < a1 {
		c.do(kind, a, a1, (c.off+a-pos)*at.Hkv*width+g*width, at.Hkv*width)
	}
}

// do computes kind over positions [a, e), stored from off, ld values apart.
func (c *attnWorker) do(kind spanKind, a, e, off, ld int) {
	at, ps, cur := c.a, c.a.ps, a >= c.pos
	switch kind {
	case spanKeys:
		dst := c.sc[a-c.first : e-c.first]
		switch {
		case cur && at.f16:
			kernels.DotsF16(dst, c.qv, ps.cur16k[off:], ld)
		case cur:
			kernels.Dots(dst, c.qv, at.ks[off:], ld)
		case at.f16:
			kernels.DotsF16(dst, c.qv, c.k16[off:], ld)
		default:
			kernels.Dots(dst, c.qv, c.k32[off:], ld)
		}
	case spanValues:
		// runs of visible keys: masked ones add nothing, not even 0×v
		for j, r := c.nextRun(a, e); j < r; j, r = c.nextRun(r, e) {
			p, o := c.sc[j-c.first:r-c.first], off+(j-a)*ld
			switch {
			case cur && at.f16:
				kernels.AxpysF16(c.o, p, ps.cur16v[o:], ld)
			case cur:
				kernels.Axpys(c.o, p, at.vs[o:], ld)
			case at.f16:
				kernels.AxpysF16(c.o, p, c.v16[o:], ld)
			default:
				kernels.Axpys(c.o, p, c.v32[o:], ld)
			}
		}
	case spanGroupKeys:
		k := c.k16
		if cur {
			k = ps.cur16k
		}
		kernels.DotsF16N(c.sc[a-c.first:], at.stride, e-a, c.qv, at.Dk, at.group, at.Dk, k[off:], ld)
	case spanGroupValues:
		v := c.v16
		if cur {
			v = ps.cur16v
		}
		for j, r := c.nextRun(a, e); j < r; j, r = c.nextRun(r, e) {
			kernels.AxpysF16N(c.o, at.Dv, at.Dv, c.sc[j-c.first:], at.stride, at.group, r-j, v[off+(j-a)*ld:], ld)
		}
	}
}

// nextRun returns the first run [j, r) of visible positions in [a, e) (j == r if none).
func (c *attnWorker) nextRun(a, e int) (j, r int) {
	for a < e && (a < c.lo || c.mrow[a] == 0) {
		a++
	}
	if a >= e {
		return a, a
	}
	// the run ends at the next masked position (a byte scan: decode attention
	// at 2k tokens spent 2% of its time in a per-byte loop here)
	if z := bytes.IndexByte(c.mrow[a:e], 0); z >= 0 {
		return a, a + z
	}
	return a, e
}

// finishScores turns the raw dot products sc of positions [first, first+len(sc)) into
// attention logits: scaled (and soft-capped) where the row attends, -Inf before lo and
// where the mask row is 0. Runs of attended positions are scaled with one vector call.
func finishScores(sc []float32, first, lo int, mrow []byte, scale, softCap float32) {
	end := first + len(sc)
	for a := first; a < end; {
		if a < lo || mrow[a] == 0 {
			sc[a-first] = float32(math.Inf(-1))
			a++
			continue
		}
		e := end
		if z := bytes.IndexByte(mrow[a:end], 0); z >= 0 {
			e = a + z
		}
		run := sc[a-first : e-first]
		kernels.Scale(run, scale)
		if softCap > 0 {
			for i, d := range run {
				run[i] = softCap * float32(math.Tanh(float64(d/softCap)))
			}
		}
		a = e
	}
}
