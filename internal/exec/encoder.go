package exec

import (
	"fmt"
	"math"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program"
)

// The ops op set 3 adds for encoders: layer_norm, activation, position_embed,
// self_attention, pool and l2_normalize. Row-wise ops work on every real row of the pass
// (or every pooled row); self_attention and pool on each sequence's own rows.

// layerNormOp normalizes each group of width values of every row: (x - mean)/std * w + b.
type layerNormOp struct {
	m              *Method
	x, out         operand // (rows, width)
	weight, bias   operand // (group)
	width, group   int
	eps            float32
	groupsFn       func(lo, hi int) // o.groups, bound once
	xs, ys, ws, bs []float32        // of the running pass
}

func (m *Method) compileLayerNorm(op *program.Op, in []operand, out operand) (op, error) {
	x, w, b := in[0], in[1], in[2]
	if err := wantF32(x, w, b, out); err != nil {
		return nil, err
	}
	_, width := rows2(x)
	g := op.Attr.Width
	if g <= 0 || width%g != 0 || x.elems() != out.elems() {
		return nil, fmt.Errorf("norm width %d does not divide %q %v or output %v differs", g, x.name, x.shape, out.shape)
	}
	if w.elems() != g || b.elems() != g {
		return nil, fmt.Errorf("layer norm weight %q and bias %q have %d and %d values, want %d", w.name, b.name, w.elems(), b.elems(), g)
	}
	m.propagate(x, out)
	o := &layerNormOp{m: m, x: x, out: out, weight: w, bias: b, width: width, group: g, eps: op.Attr.Eps}
	o.groupsFn = o.groups
	return o, nil
}

func (o *layerNormOp) run(ps *pass) {
	o.xs, o.ys, o.ws, o.bs = ps.f32(o.x), ps.f32(o.out), ps.f32(o.weight), ps.f32(o.bias)
	o.m.prog.parallel(o.m.rowsOf(ps, o.x)*o.width/o.group, o.group, o.groupsFn)
}

// groups normalizes groups [lo, hi).
func (o *layerNormOp) groups(lo, hi int) {
	g := o.group
	for i := lo; i < hi; i++ {
		layerNorm(o.ys[i*g:(i+1)*g], o.xs[i*g:(i+1)*g], o.ws, o.bs, o.eps)
	}
}

// activationOp is y = act(x), element-wise over every row.
type activationOp struct {
	m       *Method
	x, out  operand // (rows, width)
	width   int
	fn      func(dst, x []float32)
	rangeFn func(lo, hi int) // o.elems, bound once
	xs, ys  []float32        // of the running pass
}

func (m *Method) compileActivation(op *program.Op, in []operand, out operand) (op, error) {
	x := in[0]
	if err := wantF32(x, out); err != nil {
		return nil, err
	}
	if x.elems() != out.elems() {
		return nil, fmt.Errorf("activation of %v into %v", x.shape, out.shape)
	}
	var fn func(dst, x []float32)
	switch op.Attr.Activation {
	case program.ActGELU:
		fn = geluErf
	case program.ActGELUTanh:
		fn = geluTanh
	case program.ActSiLU:
		fn = silu
	case program.ActTanh:
		fn = tanh32
	case program.ActReLU:
		fn = relu
	default:
		return nil, fmt.Errorf("activation %q is not implemented", op.Attr.Activation)
	}
	_, width := rows2(x)
	m.propagate(x, out)
	o := &activationOp{m: m, x: x, out: out, width: width, fn: fn}
	o.rangeFn = o.elems
	return o, nil
}

func (o *activationOp) run(ps *pass) {
	o.xs, o.ys = ps.f32(o.x), ps.f32(o.out)
	o.m.prog.parallel(o.m.rowsOf(ps, o.x)*o.width, 1, o.rangeFn)
}

// elems applies the activation to elements [lo, hi).
func (o *activationOp) elems(lo, hi int) { o.fn(o.ys[lo:hi], o.xs[lo:hi]) }

// fuseActivations folds an in-place activation that follows a linear op on its output,
// where that product runs packed (an encoder's f32 feed-forward up projection), into the
// product as its epilogue (kernels.PackedMatMul.Epilogue): the activation runs on each
// block of the output while it is in cache rather than as a pass of its own over memory
// (25 MB each way per layer in a batch of 32 × 128 at all-MiniLM-L6-v2's width). The
// activation op's place is kept by a fusedOp, so that ops keep their indexes.
func (m *Method) fuseActivations() {
	for i := 0; i+1 < len(m.ops); i++ {
		lin, ok := m.ops[i].(*linearOp)
		if !ok || lin.packed == nil {
			continue
		}
		if act, ok := m.ops[i+1].(*activationOp); ok && act.x.name == lin.out.name && act.out.name == act.x.name {
			lin.packed.Epilogue = act.fn
			m.ops[i+1] = fusedOp{}
		}
	}
}

// fusedOp stands where an op was whose work the op before it does.
type fusedOp struct{}

func (fusedOp) run(*pass) {}

// positionEmbedOp adds the position embedding of each row's position: x[i] += table[p(i)].
type positionEmbedOp struct {
	x     operand        // (rows, dim), in place
	table kernels.Matrix // (positions, dim)
	f32   []float32      // the table when it is float32, else nil
	row   []float32      // (dim): a dequantized row
	width int
}

func (m *Method) compilePositionEmbed(_ *program.Op, in []operand, out operand) (op, error) {
	x, table := in[0], in[1]
	if err := wantF32(x); err != nil {
		return nil, err
	}
	if x.name != out.name {
		return nil, fmt.Errorf("position_embed is in place")
	}
	if x.idx >= 0 && m.selected[x.idx] {
		return nil, fmt.Errorf("position_embed of %q, whose rows are pooled or selected", x.name)
	}
	mat, err := table.matrix()
	if err != nil {
		return nil, err
	}
	_, width := rows2(x)
	if width != mat.Cols {
		return nil, fmt.Errorf("position table %v for rows of width %d", table.shape, width)
	}
	o := &positionEmbedOp{x: x, table: mat, width: width, row: make([]float32, width)}
	if mat.Type == kernels.F32 {
		o.f32 = align.AsF32(table.konst.data)
	}
	return o, nil
}

func (o *positionEmbedOp) check(s *Step) error {
	for i, p := range s.positions[:s.n] {
		if p < 0 || p >= int64(o.table.Rows) {
			return fmt.Errorf("%w: position %d at row %d is outside the position table [0,%d)", ErrStep, p, i, o.table.Rows)
		}
	}
	return nil
}

func (o *positionEmbedOp) run(ps *pass) {
	xs, w := ps.f32(o.x), o.width
	for i, p := range ps.positions[:ps.rows] {
		x := xs[i*w : (i+1)*w]
		row := o.row
		if o.f32 != nil {
			row = o.f32[int(p)*w : (int(p)+1)*w]
		} else {
			kernels.DequantizeRow(o.table, int(p), row)
		}
		kernels.Add(x, x, row)
	}
}

// selfAttentionOp: each real row attends to the real rows of its own sequence (all of them,
// or up to itself when causal). Each (sequence, query head) is an item of a parallel loop
// on the program's pool, computed on the item's thread: each query row's scores as a sum of
// the head's transposed key rows weighted by its values (kernels.Axpys: the row's scores
// stay in registers, no horizontal sums at a head size of 32 or 64), then softmax(scores)·V
// as a matrix product of a block of query rows through a one-thread kernels.Pool per pool
// thread (the tile kernels of the linear layers, on contiguous copies of the head's rows).
// A row's result does not depend on the rows beside it in its block or batch.
type selfAttentionOp struct {
	m                    *Method
	q, k, v, out         operand
	Hq, Hkv, Dk, Dv, grp int
	scale                float32
	causal               bool
	panels               bool          // the products by kernels.PanelMulAdd (headPanels)
	work                 []attnScratch // per pool thread
	fn                   func(worker, i int)

	ps             *pass // of the running pass
	qs, ks, vs, os []float32
}

// attnBlock is how many query rows one product of an attention item scores at once.
const attnBlock = 64

// attnScratch is one pool thread's attention scratch (S the method's sequence length, S16
// it rounded up to a multiple of 16).
type attnScratch struct {
	pool   *kernels.Pool // one thread: its products run on the calling goroutine
	kt     []float32     // the head's keys transposed [Dk][n16], zero past n
	vt     []byte        // the head's values transposed [Dv][S], f32
	scores []float32     // [attnBlock][n16]
	o      []float32     // [attnBlock][Dv]
	// With kernels.PanelMulAdd (a.panels): the head's keys and values in panels of
	// kernels.PanelWidth (key rows, value columns), k-major.
	kp, vp []float32 // [S32/32][Dk][32], [Dv32/32][S][32]
	sp     []float32 // [attnBlock][S32] scores
}

func (m *Method) compileSelfAttention(op *program.Op, in []operand, out operand) (op, error) {
	q, k, v, mask := in[0], in[1], in[2], in[3]
	if m.batch == 0 {
		return nil, fmt.Errorf("self_attention runs in methods over sequences only (an [B,S] attention_mask)")
	}
	if mask.name != program.AttentionMask || mask.dtype != program.Bool {
		return nil, fmt.Errorf("mask %q (%s) is not the bool %s input", mask.name, mask.dtype, program.AttentionMask)
	}
	if err := wantF32(q, k, v, out); err != nil {
		return nil, err
	}
	at := op.Attr
	Hq, Hkv, Dk, Dv := at.Heads, at.KVHeads, at.HeadDim, at.VHeadDim
	if Hkv <= 0 || Hq%Hkv != 0 {
		return nil, fmt.Errorf("%d heads do not share %d kv heads evenly", Hq, Hkv)
	}
	rows := m.batch * m.seqLen
	for _, c := range []struct {
		o operand
		w int
	}{{q, Hq * Dk}, {k, Hkv * Dk}, {v, Hkv * Dv}, {out, Hq * Dv}} {
		if r, w := rows2(c.o); r != rows || w != c.w {
			return nil, fmt.Errorf("%q %v is not [%d,%d]", c.o.name, c.o.shape, rows, c.w)
		}
		if c.o.idx >= 0 && m.selected[c.o.idx] {
			return nil, fmt.Errorf("self_attention over %q, whose rows are pooled or selected", c.o.name)
		}
	}
	p := m.prog
	a := &selfAttentionOp{m: m, q: q, k: k, v: v, out: out, Hq: Hq, Hkv: Hkv, Dk: Dk, Dv: Dv, grp: Hq / Hkv,
		scale: at.Scale, causal: at.Causal, work: make([]attnScratch, p.threads)}
	S := m.seqLen
	S16 := (S + 15) &^ 15
	for w := range a.work {
		// Scratch shared by all self_attention ops (they run one at a time).
		key := func(name string) string { return fmt.Sprintf("self_attention %s %d", name, w) }
		a.work[w] = attnScratch{pool: p.onePool(w),
			kt: align.AsF32(p.shared(key("kt"), 4*Dk*S16)), vt: p.shared(key("vt"), 4*Dv*S),
			scores: align.AsF32(p.shared(key("scores"), 4*attnBlock*S16)),
			o:      align.AsF32(p.shared(key("o"), 4*attnBlock*Dv))}
		if kernels.HasPacked() {
			const pw = kernels.PanelWidth
			S32, Dv32 := (S+pw-1)/pw*pw, (Dv+pw-1)/pw*pw
			c := &a.work[w]
			c.kp = align.AsF32(p.shared(key("kp"), 4*(S32*Dk+16*pw))) // PackPanel's slack
			c.vp = align.AsF32(p.shared(key("vp"), 4*Dv32*S))
			c.sp = align.AsF32(p.shared(key("sp"), 4*attnBlock*S32))
		}
	}
	a.panels = kernels.HasPacked()
	a.fn = a.head
	return a, nil
}

func (a *selfAttentionOp) run(ps *pass) {
	a.ps = ps
	a.qs, a.ks, a.vs, a.os = ps.f32(a.q), ps.f32(a.k), ps.f32(a.v), ps.f32(a.out)
	a.m.prog.pool.For(len(ps.segs)*a.Hq, a.fn)
	a.ps = nil
}

// head computes query head h of sequence (segment) s: one item of the parallel loop.
func (a *selfAttentionOp) head(w, item int) {
	g, h := &a.ps.segs[item/a.Hq], item%a.Hq
	c := &a.work[w]
	if a.panels {
		a.headPanels(c, g, h)
		return
	}
	n, kv, Dk, Dv := g.n, h/a.grp, a.Dk, a.Dv
	n16 := (n + 15) &^ 15
	qw, kw, vw := a.Hq*Dk, a.Hkv*Dk, a.Hkv*Dv
	// The head's keys transposed [Dk][n16] (zero past n) and values transposed [Dv][n].
	kt, vt := c.kt[:Dk*n16], align.AsF32(c.vt[:4*Dv*n])
	for j := range n {
		r := g.off + j
		for d, x := range a.ks[r*kw+kv*Dk : r*kw+(kv+1)*Dk] {
			kt[d*n16+j] = x
		}
		for d, x := range a.vs[r*vw+kv*Dv : r*vw+(kv+1)*Dv] {
			vt[d*n+j] = x
		}
	}
	if n16 > n {
		for d := range Dk {
			clear(kt[d*n16+n : (d+1)*n16])
		}
	}
	V := kernels.Matrix{Type: kernels.F32, Rows: Dv, Cols: n, Data: c.vt[:4*Dv*n]}
	for i0 := 0; i0 < n; i0 += attnBlock {
		m := min(attnBlock, n-i0)
		for i := range m {
			r := g.off + i0 + i
			row := c.scores[i*n : (i+1)*n]
			full := c.scores[i*n : i*n+n16] // the next row's start is rewritten after
			clear(full)
			kernels.Axpys(full, a.qs[r*qw+h*Dk:r*qw+(h+1)*Dk], kt, n16)
			kernels.Scale(row, a.scale)
			if a.causal {
				for j := i0 + i + 1; j < n; j++ {
					row[j] = float32(math.Inf(-1))
				}
			}
			kernels.Softmax(row)
		}
		c.pool.MatMul(c.o[:m*Dv], c.scores[:m*n], m, V, nil)
		for i := range m {
			r := g.off + i0 + i
			copy(a.os[r*a.Hq*Dv+h*Dv:r*a.Hq*Dv+(h+1)*Dv], c.o[i*Dv:(i+1)*Dv])
		}
	}
}

// headPanels is head with both products as products of query rows with panels of 32
// keys (scores) and of 32 value columns (softmax(scores)·V), by kernels.PanelMulAdd:
// the keys transposed into panels (kernels.PackPanel) and the values copied into panels once per head, the
// query rows and the scores read where they are, the output accumulated in place.
func (a *selfAttentionOp) headPanels(c *attnScratch, g *segment, h int) {
	const pw = kernels.PanelWidth
	n, kv, Dk, Dv := g.n, h/a.grp, a.Dk, a.Dv
	n32 := (n + pw - 1) / pw * pw
	qw, kw, vw, ow := a.Hq*Dk, a.Hkv*Dk, a.Hkv*Dv, a.Hq*Dv
	kp, vp := c.kp, c.vp[:(Dv+pw-1)/pw*pw*n]
	for j := 0; j < n; j += pw { // in order: a panel's slack runs into the next
		r := g.off + j
		kernels.PackPanel(kp[j*Dk:], a.ks[r*kw+kv*Dk:], kw, min(pw, n-j), Dk)
	}
	for j := range n {
		r := g.off + j
		v := a.vs[r*vw+kv*Dv : r*vw+(kv+1)*Dv]
		for c0 := 0; c0 < Dv; c0 += pw {
			copy(vp[c0*n+j*pw:c0*n+(j+1)*pw], v[c0:min(c0+pw, Dv)])
		}
	}
	for i0 := 0; i0 < n; i0 += attnBlock {
		m := min(attnBlock, n-i0)
		r0 := g.off + i0
		sc := c.sp[:m*n32]
		clear(sc)
		for p := 0; p < n; p += pw {
			kernels.PanelMulAdd(sc[p:], n32, a.qs[r0*qw+h*Dk:], qw, m, kp[p*Dk:(p+pw)*Dk], Dk, min(pw, n-p))
		}
		for i := range m {
			row := sc[i*n32 : i*n32+n]
			kernels.Scale(row, a.scale)
			if a.causal {
				for j := i0 + i + 1; j < n; j++ {
					row[j] = float32(math.Inf(-1))
				}
			}
			kernels.Softmax(row)
			clear(a.os[(r0+i)*ow+h*Dv : (r0+i)*ow+(h+1)*Dv])
		}
		for c0 := 0; c0 < Dv; c0 += pw {
			kernels.PanelMulAdd(a.os[r0*ow+h*Dv+c0:], ow, sc, n32, m, vp[c0*n:(c0+pw)*n], n, min(pw, Dv-c0))
		}
	}
}

// poolOp turns each sequence's real rows into one row.
type poolOp struct {
	x, out operand // (rows, width), (sequences, width)
	width  int
	mode   string
}

func (m *Method) compilePool(op *program.Op, in []operand, out operand) (op, error) {
	x, mask := in[0], in[1]
	if m.batch == 0 {
		return nil, fmt.Errorf("pool runs in methods over sequences only (an [B,S] attention_mask)")
	}
	if mask.name != program.AttentionMask || mask.dtype != program.Bool {
		return nil, fmt.Errorf("mask %q (%s) is not the bool %s input", mask.name, mask.dtype, program.AttentionMask)
	}
	if err := wantF32(x, out); err != nil {
		return nil, err
	}
	xr, width := rows2(x)
	or, ow := rows2(out)
	if xr != m.batch*m.seqLen || or != m.batch || ow != width {
		return nil, fmt.Errorf("pool of %q %v into %q %v: want [%d,w] into [%d,w]", x.name, x.shape, out.name, out.shape, m.batch*m.seqLen, m.batch)
	}
	if x.idx >= 0 && m.selected[x.idx] {
		return nil, fmt.Errorf("pool of %q, whose rows are pooled already", x.name)
	}
	if out.idx == x.idx {
		return nil, fmt.Errorf("pool writes into its input %q", x.name)
	}
	m.selected[out.idx], m.selects = true, true
	return &poolOp{x: x, out: out, width: width, mode: op.Attr.Pooling}, nil
}

func (o *poolOp) run(ps *pass) {
	xs, ys, w := ps.f32(o.x), ps.f32(o.out), o.width
	for i, g := range ps.segs {
		y := ys[i*w : (i+1)*w]
		rows := xs[g.off*w : (g.off+g.n)*w]
		switch o.mode {
		case program.PoolCLS:
			copy(y, rows[:w])
		case program.PoolLast:
			copy(y, rows[(g.n-1)*w:])
		case program.PoolMean:
			copy(y, rows[:w])
			for r := 1; r < g.n; r++ {
				kernels.Add(y, y, rows[r*w:(r+1)*w])
			}
			n := float32(g.n)
			for j := range y {
				y[j] /= n
			}
		case program.PoolMax:
			copy(y, rows[:w])
			for r := 1; r < g.n; r++ {
				for j, v := range rows[r*w : (r+1)*w] {
					y[j] = max(y[j], v)
				}
			}
		}
	}
}

// l2NormalizeOp divides each row by its Euclidean norm (at least eps).
type l2NormalizeOp struct {
	m      *Method
	x, out operand
	width  int
	eps    float32
}

func (m *Method) compileL2Normalize(op *program.Op, in []operand, out operand) (op, error) {
	x := in[0]
	if err := wantF32(x, out); err != nil {
		return nil, err
	}
	if x.elems() != out.elems() {
		return nil, fmt.Errorf("l2_normalize of %v into %v", x.shape, out.shape)
	}
	_, width := rows2(x)
	m.propagate(x, out)
	return &l2NormalizeOp{m: m, x: x, out: out, width: width, eps: op.Attr.Eps}, nil
}

func (o *l2NormalizeOp) run(ps *pass) {
	xs, ys, w := ps.f32(o.x), ps.f32(o.out), o.width
	for off := 0; off < o.m.rowsOf(ps, o.x)*w; off += w {
		l2Normalize(ys[off:off+w], xs[off:off+w], o.eps)
	}
}

// parallelWork is the element count below which a row-wise op runs on the calling thread:
// handing work to the pool costs a few microseconds.
const parallelWork = 1 << 14

// parallel calls fn over [0, n) items of cost elements each, in contiguous ranges (about
// parRanges per pool thread, taken by whichever thread is free: on a shared machine a
// thread that lost its CPU for a while holds back less than a half of the work would), or in
// one call when the work is small. Each item is computed by one call, so a row's result
// does not depend on the split.
func (p *Program) parallel(n, cost int, fn func(lo, hi int)) {
	if n*cost < parallelWork || p.threads == 1 {
		fn(0, n)
		return
	}
	ranges := min(n, parRanges*p.threads)
	per := (n + ranges - 1) / ranges
	p.parFn, p.parN, p.parPer = fn, n, per
	p.pool.For((n+per-1)/per, p.parItem)
	p.parFn = nil
}

// parRanges is how many ranges per pool thread parallel splits its items into.
const parRanges = 4

// parRange runs one range of a parallel call.
func (p *Program) parRange(_, i int) {
	lo := i * p.parPer
	if lo < p.parN {
		p.parFn(lo, min(lo+p.parPer, p.parN))
	}
}
