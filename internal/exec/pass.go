package exec

import (
	"context"
	"fmt"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/program"
)

// pass is the scratch of one run of a method's ops over the real rows of one or more
// bound steps (one per session; a Step.Run is a pass of one). The steps' rows are
// concatenated: segment g owns rows [g.off, g.off+g.n), so every linear layer multiplies
// all of them with one read of its weights, while attention, cache writes and counters
// work on each segment's own buffers. Kernels give a row the same arithmetic whatever
// rows are beside it, so a step's results do not depend on its pass.
type pass struct {
	segs []segment
	rows int // real rows of all segments
	sel  int // rows kept by a last_row linear, all segments

	// act holds, by program buffer index, the activations ([rows][width]) and the
	// method's output (its step's own buffer in a pass of one, else [rows][width]).
	act     [][]float32
	actRows int // rows the activation scratch holds

	ids, positions []int64   // (rows): the steps' ids and positions, concatenated
	types          []int64   // (rows): token types (a step over sequences with token_type_ids)
	idsBuf, posBuf []int64   // scratch for them when there are several steps
	rowSeg         []int32   // (rows): the segment of each row
	xsel           []float32 // (sel, k): the kept rows of a last_row linear's input
	cur16k, cur16v []uint16  // (rows, kv_heads*head_dim): current rows as float16
	f16Width       int       // widest kv row of an f16 attention
	outBuf         []float32 // the output of a pass of several steps
}

// segment is one step's part of a pass.
type segment struct {
	s           *Step
	off, n, pos int // first row in the pass, real rows, absolute position of row 0
	selOff, sel int // first kept row among the pass's kept rows, kept rows
}

// f32 returns the float32 data of a constant or of a pass buffer.
func (ps *pass) f32(o operand) []float32 {
	if o.konst != nil {
		return align.AsF32(o.konst.data)
	}
	return ps.act[o.idx]
}

// selRows returns scratch for the kept rows of a last_row linear's k-wide input.
func (ps *pass) selRows(k int) []float32 {
	if len(ps.xsel) < ps.sel*k {
		ps.xsel = align.AsF32(align.Bytes(4 * ps.rows * k))
	}
	return ps.xsel
}

// RunBatch runs one step of each of several sessions as one pass: every linear layer
// reads its weights once for all their rows. Each step must be bound to its own session's
// buffers (no two steps share a cache). errs (len(steps) entries) receives each step's
// error: a step whose inputs are refused is left out (and changes nothing); the others
// run exactly as they would alone, bit for bit. Steps of methods that do not run the same
// op list run one after another.
func (p *Program) RunBatch(_ context.Context, steps []*Step, errs []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sequences {
		for i, s := range steps {
			if s != nil && s.seq != nil && s.m.prog == p && errs[i] == nil {
				errs[i] = p.runSequences(s) // a step is a batch already
			} else if errs[i] == nil {
				p.runPass(steps[i:i+1], errs[i:i+1])
			}
		}
		return
	}
	if !p.batchable {
		for i := range steps {
			p.runPass(steps[i:i+1], errs[i:i+1])
		}
		return
	}
	p.runPass(steps, errs)
}

// runPass runs steps as one pass. p.mu is held.
func (p *Program) runPass(steps []*Step, errs []error) {
	ps := &p.pass
	ps.segs, ps.rows, ps.sel = ps.segs[:0], 0, 0
	var m *Method // the method whose ops run: one that keeps rows if any does
	for i, s := range steps {
		if s == nil {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("%w: nil step", ErrBinding)
			}
			continue
		}
		if s.m.prog != p {
			errs[i] = fmt.Errorf("%w: step of another program", ErrBinding)
			continue
		}
		if errs[i] = s.begin(); errs[i] != nil {
			continue
		}
		if m == nil || (s.m.selects && !m.selects) {
			m = s.m
		}
		ps.segs = append(ps.segs, segment{s: s, off: ps.rows, n: s.n, pos: s.pos})
		ps.rows += s.n
	}
	if m == nil {
		return
	}
	for i := range ps.segs {
		g := &ps.segs[i]
		g.sel = g.n
		if m.selects && g.s.m.spec.Logits != program.LogitsAll {
			g.sel = 1
		}
		g.selOff = ps.sel
		ps.sel += g.sel
	}
	p.prepare(m)
	for _, o := range m.ops {
		o.run(ps)
	}
	p.finish(m)
}

// prepare sizes the scratch for the pass's rows and gathers the steps' inputs.
func (p *Program) prepare(m *Method) {
	ps := &p.pass
	p.grow()
	if len(ps.segs) == 1 {
		s := ps.segs[0].s
		ps.ids, ps.positions = s.ids, s.positions
		if m.output >= 0 {
			ps.act[m.output] = align.AsF32(s.bufs[m.output])
		}
		return
	}
	ps.ids, ps.positions = ps.idsBuf[:ps.rows], ps.posBuf[:ps.rows]
	for _, g := range ps.segs {
		copy(ps.ids[g.off:g.off+g.n], g.s.ids[:g.n])
		copy(ps.positions[g.off:g.off+g.n], g.s.positions[:g.n])
	}
	if m.output >= 0 {
		w := m.outWidth
		if len(ps.outBuf) < ps.rows*w {
			ps.outBuf = align.AsF32(align.Bytes(4 * ps.actRows * w))
		}
		ps.act[m.output] = ps.outBuf
	}
}

// grow sizes the pass's scratch for its rows and maps each row to its segment.
func (p *Program) grow() {
	ps := &p.pass
	if ps.act == nil {
		ps.act = make([][]float32, len(p.index))
	}
	if ps.rows > ps.actRows {
		rows := max(ps.rows, p.maxStep)
		if p.sequences { // B·S rows may be many more than a call holds: grow with the calls
			rows = min(max(ps.rows, 2*ps.actRows), p.maxStep)
		}
		for _, mt := range p.methods {
			for _, a := range mt.spec.Activations {
				ps.act[p.index[a.Name]] = align.AsF32(align.Bytes(4 * rows * a.Shape[len(a.Shape)-1]))
			}
		}
		ps.idsBuf, ps.posBuf, ps.rowSeg = make([]int64, rows), make([]int64, rows), make([]int32, rows)
		ps.cur16k, ps.cur16v = make([]uint16, rows*ps.f16Width), make([]uint16, rows*ps.f16Width)
		ps.actRows = rows
	}
	for i, g := range ps.segs {
		for r := g.off; r < g.off+g.n; r++ {
			ps.rowSeg[r] = int32(i)
		}
	}
}

// finish copies each step's output rows out of a pass of several steps and zeroes the
// padding rows an earlier run left in each output buffer.
func (p *Program) finish(m *Method) {
	ps := &p.pass
	if m.output < 0 {
		return
	}
	w := m.outWidth
	for _, g := range ps.segs {
		s := g.s
		rows, first := g.n, g.off
		if m.selected[m.output] {
			rows, first = g.sel, g.selOff
		}
		dst := align.AsF32(s.bufs[m.output])
		if len(ps.segs) > 1 {
			copy(dst[:rows*w], ps.outBuf[first*w:(first+rows)*w])
		}
		if s.outRows > rows {
			clear(dst[rows*w : s.outRows*w]) // padding rows of an output hold zeros, not stale values
		}
		s.outRows = rows
	}
}
