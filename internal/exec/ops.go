package exec

import (
	"fmt"
	"github.com/hfstatic/hfstatic/internal/align"

	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/program"
)

// op is one compiled op. run applies it to every real row of a pass: row-wise ops to the
// rows of all segments at once, ops on session state (caches, counters) segment by
// segment.
type op interface {
	run(ps *pass)
}

// checker is an op that can refuse a step's inputs; every check runs before any op, so a
// refused step changes nothing and never affects the other steps of its pass.
type checker interface {
	check(s *Step) error
}

// rowsOf is how many rows of buffer o a pass holds: all real rows, or the selected ones.
func (m *Method) rowsOf(ps *pass, o operand) int {
	if o.idx >= 0 && m.selected[o.idx] {
		return ps.sel
	}
	return ps.rows
}

// embedOp gathers the embedding rows of the input ids (or token types): x = table[ids] * scale.
type embedOp struct {
	ids   operand
	table kernels.Matrix // (vocab, dim)
	out   operand        // (rows, dim)
	width int
	scale float32
	types bool // ids are token_type_ids
}

func (m *Method) compileEmbed(op *program.Op, in []operand, out operand) (op, error) {
	ids, table := in[0], in[1]
	if ids.dtype != program.I64 || (ids.name != program.InputIDs && ids.name != program.TokenTypeIDs) || ids.idx < 0 {
		return nil, fmt.Errorf("ids %q (%s) are not the i64 %s or %s input", ids.name, ids.dtype, program.InputIDs, program.TokenTypeIDs)
	}
	types := ids.name == program.TokenTypeIDs
	if types && m.batch == 0 {
		return nil, fmt.Errorf("%s is an input of methods over sequences only", program.TokenTypeIDs)
	}
	mat, err := table.matrix()
	if err != nil {
		return nil, err
	}
	rows, width := rows2(out)
	if err := wantF32(out); err != nil {
		return nil, err
	}
	if width != mat.Cols || rows != ids.elems() {
		return nil, fmt.Errorf("embedding %v of %d ids into %v", table.shape, ids.elems(), out.shape)
	}
	return &embedOp{ids: ids, table: mat, out: out, width: width, scale: op.Attr.Scale, types: types}, nil
}

func (o *embedOp) check(s *Step) error {
	ids, what := s.ids[:s.n], "token id"
	if o.types {
		ids, what = s.realTypes(), "token type"
	}
	for i, id := range ids {
		if id < 0 || id >= int64(o.table.Rows) {
			return fmt.Errorf("%w: %s %d at row %d is outside the table [0,%d)", ErrStep, what, id, i, o.table.Rows)
		}
	}
	return nil
}

func (o *embedOp) run(ps *pass) {
	ids := ps.ids
	if o.types {
		ids = ps.types
	}
	kernels.GatherRows(ps.f32(o.out)[:ps.rows*o.width], o.table, ids[:ps.rows], o.scale)
}

// rmsNormOp normalizes each group of width values of every row: y = x/rms(x) * w.
type rmsNormOp struct {
	m            *Method
	x, out       operand // (rows, width)
	weight       *operand
	width, group int // row width, values per norm
	eps          float32
}

func (m *Method) compileRMSNorm(op *program.Op, in []operand, out operand) (op, error) {
	x := in[0]
	if err := wantF32(x, out); err != nil {
		return nil, err
	}
	_, width := rows2(x)
	w := op.Attr.Width
	if w <= 0 || width%w != 0 || x.elems() != out.elems() {
		return nil, fmt.Errorf("norm width %d does not divide %q %v or output %v differs", w, x.name, x.shape, out.shape)
	}
	o := &rmsNormOp{m: m, x: x, out: out, width: width, group: w, eps: op.Attr.Eps}
	if len(in) == 2 {
		if err := wantF32(in[1]); err != nil {
			return nil, err
		}
		if in[1].elems() != w {
			return nil, fmt.Errorf("norm weight %q has %d values, want %d", in[1].name, in[1].elems(), w)
		}
		o.weight = &in[1]
	}
	m.propagate(x, out)
	return o, nil
}

func (o *rmsNormOp) run(ps *pass) {
	xs, ys := ps.f32(o.x), ps.f32(o.out)
	var ws []float32
	if o.weight != nil {
		ws = ps.f32(*o.weight)
	}
	w := o.group
	for g := 0; g < o.m.rowsOf(ps, o.x)*o.width/w; g++ {
		kernels.RMSNorm(ys[g*w:(g+1)*w], xs[g*w:(g+1)*w], ws, o.eps)
	}
}

// propagate gives a row-wise op's output the row layout of its input.
func (m *Method) propagate(in, out operand) {
	if in.idx >= 0 && out.idx >= 0 {
		m.selected[out.idx] = m.selected[in.idx]
	}
}

// linearOp is y = x Wᵀ + b over every row, or (last_row) over each step's selected
// rows: its last real row, or all of them where the step's method keeps every row.
type linearOp struct {
	m       *Method
	x, out  operand        // (rows, k), (rows or selected rows, n)
	w       kernels.Matrix // (n, k)
	bias    *operand       // (n)
	k, n    int
	selects bool
	// packed runs an encoder's product on float32 weights packed at load
	// (kernels.PackedMatMul), nil elsewhere.
	packed *kernels.PackedMatMul
}

func (m *Method) compileLinear(op *program.Op, in []operand, out operand) (op, error) {
	x := in[0]
	w, err := in[1].matrix()
	if err != nil {
		return nil, err
	}
	if err := wantF32(x, out); err != nil {
		return nil, err
	}
	if x.idx >= 0 && x.idx == out.idx {
		return nil, fmt.Errorf("linear writes into its input %q", x.name)
	}
	rows, k := rows2(x)
	orows, n := rows2(out)
	if k != w.Cols || n != w.Rows {
		return nil, fmt.Errorf("linear %q %v × %q [%d,%d]ᵀ into %q %v", x.name, x.shape, in[1].name, w.Rows, w.Cols, out.name, out.shape)
	}
	last := op.Attr.LastRow
	if (last && orows != 1) || (!last && orows != rows) {
		return nil, fmt.Errorf("linear output %q %v has %d rows for %d input rows (last_row %v)", out.name, out.shape, orows, rows, last)
	}
	if last && x.idx >= 0 && m.selected[x.idx] {
		return nil, fmt.Errorf("last_row linear of %q, whose rows are already selected", x.name)
	}
	o := &linearOp{m: m, x: x, out: out, w: w, k: k, n: n, selects: last}
	if len(in) == 3 {
		if err := wantF32(in[2]); err != nil {
			return nil, err
		}
		if in[2].elems() != n {
			return nil, fmt.Errorf("bias %q has %d values, want %d", in[2].name, in[2].elems(), n)
		}
		o.bias = &in[2]
	}
	if last {
		m.selected[out.idx], m.selects = true, true
	} else {
		m.propagate(x, out)
		if m.batch > 0 && w.Type == kernels.F32 {
			if pw := m.prog.packedWeight(in[1].name, w); pw != nil {
				o.packed = kernels.NewPackedMatMul(pw)
			}
		}
	}
	return o, nil
}

// packedWeight returns the float32 weight name packed for kernels.PackedMatMul (packing it
// on first use), or nil where this CPU has no packed product.
func (p *Program) packedWeight(name string, w kernels.Matrix) *kernels.PackedF32 {
	if pw, ok := p.packed[name]; ok {
		return pw
	}
	if p.packed == nil {
		p.packed = map[string]*kernels.PackedF32{}
	}
	var pw *kernels.PackedF32
	if n := kernels.PackedBytes(w); kernels.HasPacked() && p.packedBytes+n <= packMaxBytes {
		pw = kernels.PackF32(w, p.packMem(n))
		p.packedBytes += n
	}
	p.packed[name] = pw
	return pw
}

// packMaxBytes caps the memory a program's packed weights take (a copy of the
// float32 weights of its encoder methods' linear ops: 42 MB for all-MiniLM-L6-v2);
// the weights past it run on the tiles (pool.MatMul) as before.
const packMaxBytes = 1 << 30

// packArenaBytes is the size of the arenas packed weights are carved from.
const packArenaBytes = 32 << 20

// packMem returns n bytes (64-byte aligned) for a packed weight, carved from arenas of
// anonymous memory in 2 MiB pages (mmap.Anon; freed by Close): the Go heap's 4 KiB pages
// took 0.17 s of faults to pack all-MiniLM-L6-v2 (42 MB), 8x its load otherwise.
func (p *Program) packMem(n int) []byte {
	n = (n + align.Boundary - 1) &^ (align.Boundary - 1)
	if len(p.arena) < n {
		b, err := mmap.Anon(max(n, packArenaBytes))
		if err != nil {
			return align.Bytes(n)
		}
		p.arenas = append(p.arenas, b)
		p.arena = b
	}
	b := p.arena[:n:n]
	p.arena = p.arena[n:]
	return b
}

// linearRowBlock is about the most rows one matrix product of an encoder's linear op takes.
const linearRowBlock = 256

func (o *linearOp) run(ps *pass) {
	xs, ys := ps.f32(o.x), ps.f32(o.out)
	var bs []float32
	if o.bias != nil {
		bs = ps.f32(*o.bias)
	}
	pool, k := o.m.prog.pool, o.k
	if !o.selects {
		nr := o.m.rowsOf(ps, o.x)
		if o.packed != nil {
			// An encoder's float32 product: one product of every row of the batch, whose
			// weights were packed at load (kernels.PackedMatMul splits it over the
			// threads in blocks of rows that stay in L2).
			o.packed.Run(pool, ys[:nr*o.n], xs[:nr*k], nr, bs)
			return
		}
		// An encoder's many rows (a batch: 4096) go in products of about linearRowBlock
		// rows, whose activations stay in L2 while every weight row passes over them: 7-20%
		// (f32) and 10-28% (q8) faster per thread on all-MiniLM-L6-v2's products than one
		// product of 4096 rows, 256 rows a little faster than 512 or 128
		// (TestPerfEncoderRowBlocks in internal/kernels). A row's output does not depend on
		// the rows beside it in a product, so the split changes no value.
		nb := 1
		if o.m.batch > 0 { // an encoder's method (over sequences)
			nb = (nr + linearRowBlock - 1) / linearRowBlock
		}
		for b := range nb {
			r0, r1 := b*nr/nb, (b+1)*nr/nb
			pool.MatMul(ys[r0*o.n:r1*o.n], xs[r0*k:r1*k], r1-r0, o.w, bs)
		}
		return
	}
	if len(ps.segs) == 1 { // one step: its kept rows are contiguous
		g := &ps.segs[0]
		first := g.off + g.n - g.sel
		pool.MatMul(ys[:g.sel*o.n], xs[first*k:(g.off+g.n)*k], g.sel, o.w, bs)
		return
	}
	xsel := ps.selRows(k)
	for i := range ps.segs {
		g := &ps.segs[i]
		first := g.off + g.n - g.sel
		copy(xsel[g.selOff*k:(g.selOff+g.sel)*k], xs[first*k:(g.off+g.n)*k])
	}
	pool.MatMul(ys[:ps.sel*o.n], xsel[:ps.sel*k], ps.sel, o.w, bs)
}

// ropeOp rotates each head of every row in place by the row's position.
type ropeOp struct {
	x               operand // (rows, heads*head_dim), in place
	cos, sin        operand // (positions, half)
	width, headDim  int
	tableRows, half int
}

func (m *Method) compileRoPE(op *program.Op, in []operand, out operand) (op, error) {
	x, cos, sin := in[0], in[len(in)-2], in[len(in)-1]
	if err := wantF32(x, cos, sin); err != nil {
		return nil, err
	}
	if x.name != out.name {
		return nil, fmt.Errorf("rope is in place")
	}
	rows, width := rows2(x)
	npos := rows
	if len(in) == 4 {
		positions := in[1]
		if positions.dtype != program.I64 || positions.name != program.PositionIDs {
			return nil, fmt.Errorf("positions %q (%s) are not the i64 %s input", positions.name, positions.dtype, program.PositionIDs)
		}
		npos = positions.elems()
	} else if m.batch == 0 {
		return nil, fmt.Errorf("rope without %s: positions are implicit only in methods over sequences", program.PositionIDs)
	}
	hd := op.Attr.HeadDim
	if hd <= 0 || width%hd != 0 || npos != rows {
		return nil, fmt.Errorf("rope over %v with head_dim %d and %d positions", x.shape, hd, npos)
	}
	if len(cos.shape) != 2 || !cos.shape.Equal(sin.shape) || 2*cos.shape[1] > hd {
		return nil, fmt.Errorf("rope tables %v and %v do not fit head_dim %d", cos.shape, sin.shape, hd)
	}
	return &ropeOp{x: x, cos: cos, sin: sin, width: width, headDim: hd, tableRows: cos.shape[0], half: cos.shape[1]}, nil
}

func (o *ropeOp) check(s *Step) error {
	for i, p := range s.positions[:s.n] {
		if p < 0 || p >= int64(o.tableRows) {
			return fmt.Errorf("%w: position %d at row %d is outside the RoPE table [0,%d)", ErrStep, p, i, o.tableRows)
		}
	}
	return nil
}

func (o *ropeOp) run(ps *pass) {
	xs, cs, ss, half := ps.f32(o.x), ps.f32(o.cos), ps.f32(o.sin), o.half
	for i, p := range ps.positions[:ps.rows] {
		c, sn := cs[int(p)*half:(int(p)+1)*half], ss[int(p)*half:(int(p)+1)*half]
		row := xs[i*o.width : (i+1)*o.width]
		for h := 0; h < o.width; h += o.headDim {
			kernels.RoPE(row[h:h+2*half], c, sn)
		}
	}
}

// cacheWriteOp writes each step's real rows into its own cache, position a in slot
// a mod L (only the last L rows when a step has more).
type cacheWriteOp struct {
	x       operand // (rows, heads*dim)
	cache   int     // program index of the cache: (1, heads, L, dim), in place
	f16     bool
	H, L, D int
}

func (m *Method) compileCacheWrite(op *program.Op, in []operand, out operand) (op, error) {
	x, cache := in[0], in[1]
	if cache.name != out.name || cache.konst != nil {
		return nil, fmt.Errorf("cache_write writes its cache in place")
	}
	if err := wantF32(x); err != nil {
		return nil, err
	}
	if len(cache.shape) != 4 || cache.shape[0] != 1 {
		return nil, fmt.Errorf("cache %q shape %v is not [1,H,L,D]", cache.name, cache.shape)
	}
	if cache.dtype != program.F32 && cache.dtype != program.F16 {
		return nil, fmt.Errorf("cache %q dtype %s is not f32 or f16", cache.name, cache.dtype)
	}
	H, L, D := cache.shape[1], cache.shape[2], cache.shape[3]
	if _, width := rows2(x); width != H*D {
		return nil, fmt.Errorf("cache_write of %q %v into %q %v", x.name, x.shape, cache.name, cache.shape)
	}
	return &cacheWriteOp{x: x, cache: cache.idx, f16: cache.dtype == program.F16, H: H, L: L, D: D}, nil
}

func (o *cacheWriteOp) run(ps *pass) {
	xs, H, L, D := ps.f32(o.x), o.H, o.L, o.D
	for _, g := range ps.segs {
		buf := g.s.bufs[o.cache]
		c32, c16 := align.AsF32(buf), align.AsU16(buf)
		for i := max(0, g.n-L); i < g.n; i++ {
			slot := (g.pos + i) % L
			for h := 0; h < H; h++ {
				src := xs[(g.off+i)*H*D+h*D : (g.off+i)*H*D+(h+1)*D]
				off := (h*L + slot) * D
				if o.f16 {
					kernels.F32ToF16(c16[off:off+D], src)
				} else {
					copy(c32[off:off+D], src)
				}
			}
		}
	}
}

// advanceOp adds each step's real rows to its cache counter.
type advanceOp struct{ counter int } // program index of an i64 scalar, in place

func (m *Method) compileAdvance(_ *program.Op, in []operand, out operand) (op, error) {
	c := in[0]
	if c.dtype != program.I64 || c.elems() != 1 || c.name != out.name || c.idx < 0 {
		return nil, fmt.Errorf("advance needs an in-place i64 scalar, got %q %s %v", c.name, c.dtype, c.shape)
	}
	return &advanceOp{counter: c.idx}, nil
}

func (o *advanceOp) run(ps *pass) {
	for _, g := range ps.segs {
		align.AsI64(g.s.bufs[o.counter])[0] += int64(g.n)
	}
}

// addOp is y = a + b, row by row (a row's result must not depend on the rows beside it).
type addOp struct {
	m         *Method
	a, b, out operand // (rows, width)
	width     int
}

func (m *Method) compileAdd(_ *program.Op, in []operand, out operand) (op, error) {
	a, b := in[0], in[1]
	if err := wantF32(a, b, out); err != nil {
		return nil, err
	}
	if a.elems() != b.elems() || a.elems() != out.elems() {
		return nil, fmt.Errorf("add of %v and %v into %v", a.shape, b.shape, out.shape)
	}
	_, width := rows2(a)
	m.propagate(a, out)
	return &addOp{m: m, a: a, b: b, out: out, width: width}, nil
}

func (o *addOp) run(ps *pass) {
	as, bs, ys, w := ps.f32(o.a), ps.f32(o.b), ps.f32(o.out), o.width
	for off := 0; off < o.m.rowsOf(ps, o.a)*w; off += w {
		kernels.Add(ys[off:off+w], as[off:off+w], bs[off:off+w])
	}
}

// gluOp is y = act(gate) * up, row by row.
type gluOp struct {
	m             *Method
	gate, up, out operand // (rows, width)
	width         int
	gelu          bool
}

func (m *Method) compileGLU(op *program.Op, in []operand, out operand) (op, error) {
	g, u := in[0], in[1]
	if err := wantF32(g, u, out); err != nil {
		return nil, err
	}
	if g.elems() != u.elems() || g.elems() != out.elems() {
		return nil, fmt.Errorf("glu of %v and %v into %v", g.shape, u.shape, out.shape)
	}
	_, width := rows2(g)
	m.propagate(g, out)
	return &gluOp{m: m, gate: g, up: u, out: out, width: width, gelu: op.Attr.Activation == program.ActGELUTanh}, nil
}

func (o *gluOp) run(ps *pass) {
	gs, us, ys, w := ps.f32(o.gate), ps.f32(o.up), ps.f32(o.out), o.width
	for off := 0; off < o.m.rowsOf(ps, o.gate)*w; off += w {
		if o.gelu {
			kernels.GELUTanhMul(ys[off:off+w], gs[off:off+w], us[off:off+w])
		} else {
			kernels.SiLUMul(ys[off:off+w], gs[off:off+w], us[off:off+w])
		}
	}
}

// softCapOp is x = c·tanh(x/c) in place, row by row.
type softCapOp struct {
	m     *Method
	x     operand // (rows, width)
	width int
	c     float32
}

func (m *Method) compileSoftCap(op *program.Op, in []operand, out operand) (op, error) {
	x := in[0]
	if err := wantF32(x); err != nil {
		return nil, err
	}
	if x.name != out.name {
		return nil, fmt.Errorf("soft_cap is in place")
	}
	_, width := rows2(x)
	return &softCapOp{m: m, x: x, width: width, c: op.Attr.SoftCap}, nil
}

func (o *softCapOp) run(ps *pass) {
	xs, w := ps.f32(o.x), o.width
	for off := 0; off < o.m.rowsOf(ps, o.x)*w; off += w {
		kernels.SoftCap(xs[off:off+w], o.c)
	}
}

// scaleOp is x = x·s in place, row by row.
type scaleOp struct {
	m     *Method
	x     operand // (rows, width)
	width int
	s     float32
}

func (m *Method) compileScale(op *program.Op, in []operand, out operand) (op, error) {
	x := in[0]
	if err := wantF32(x); err != nil {
		return nil, err
	}
	if x.name != out.name {
		return nil, fmt.Errorf("scale is in place")
	}
	_, width := rows2(x)
	return &scaleOp{m: m, x: x, width: width, s: op.Attr.Scale}, nil
}

func (o *scaleOp) run(ps *pass) {
	xs, w := ps.f32(o.x), o.width
	for off := 0; off < o.m.rowsOf(ps, o.x)*w; off += w {
		kernels.Scale(xs[off:off+w], o.s)
	}
}
