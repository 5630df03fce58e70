package ort

import (
	"context"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/onnx"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// batchGraph is the decode graph for B sessions at once (onnx.BatchSizes): its session
// and one I/O binding whose per-slot inputs are the caches of the steps that ran in the
// slot last (rebound only when another step takes the slot). Idle slots read zero caches
// at position 0.
type batchGraph struct {
	B       int
	session uintptr
	binding uintptr
	runArgs []uintptr

	ids, positions []int64 // [B]
	mask           []byte  // [B][C]
	logits         []byte  // [B][V] f32
	values         []uintptr
	rows           [][]layerRows // per slot: the rows the graph returns
	bound          []*Step       // per slot: whose caches are bound (nil: the zero caches)
	stale          []bool        // per slot: bound to the caches of a step since closed
	idle           []cacheBuf    // per layer: the zero caches of an idle slot
	spec           *program.Method
}

// loadBatch creates the session and binding of the decode graph g for B sessions.
func (e *Executor) loadBatch(spec *program.Method, B int, g *onnx.Resolved, data map[string]*Initializer) (bg *batchGraph, err error) {
	md := e.file.Manifest.Metadata
	C, V := md.MaxContext, md.VocabSize
	bg = &batchGraph{B: B, spec: spec, bound: make([]*Step, B), stale: make([]bool, B), ids: make([]int64, B), positions: make([]int64, B),
		mask: align.Bytes(B * C), logits: align.Bytes(4 * B * V)}
	defer func() {
		if err != nil {
			bg.release(e)
		}
	}()
	what := fmt.Sprintf("decode graph for %d sessions", B)
	if bg.session, err = e.session(what, fmt.Sprintf("decode.batch%d", B), g, data); err != nil {
		return nil, err
	}
	if err = e.lib.call("create I/O binding for the "+what, fnCreateIoBinding, bg.session, uintptr(unsafe.Pointer(&bg.binding))); err != nil {
		return nil, err
	}
	bind := func(fn int, name string, data []byte, elem int, shape ...int64) error {
		v, err := e.lib.tensor(name, data, elem, shape)
		if err != nil {
			return err
		}
		bg.values = append(bg.values, v)
		return bg.bind(e, fn, name, v)
	}
	b64 := func(x []int64) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 8*len(x)) }
	for _, in := range []struct {
		fn    int
		name  string
		data  []byte
		elem  int
		shape []int64
	}{
		{fnBindInput, program.InputIDs, b64(bg.ids), elemInt64, []int64{int64(B), 1}},
		{fnBindInput, program.PositionIDs, b64(bg.positions), elemInt64, []int64{int64(B), 1}},
		{fnBindInput, program.AttentionMask, bg.mask, elemBool, []int64{int64(B), 1, 1, int64(C)}},
		{fnBindOutput, program.Logits, bg.logits, elemFloat, []int64{int64(B), 1, int64(V)}},
	} {
		if err = bind(in.fn, in.name, in.data, in.elem, in.shape...); err != nil {
			return nil, err
		}
	}
	elem, err := elemType(md.CacheDType)
	if err != nil {
		return nil, err
	}
	es := md.CacheDType.ElemBytes()
	for l, ly := range md.Layers {
		c := cacheBuf{k: align.Bytes(es * ly.KVHeads * ly.CacheRows * ly.KHeadDim), v: align.Bytes(es * ly.KVHeads * ly.CacheRows * ly.VHeadDim), L: ly.CacheRows, es: es}
		if c.kVal, err = e.lib.tensor("idle "+program.KCache(l), c.k, elem, []int64{1, int64(ly.KVHeads), int64(ly.CacheRows), int64(ly.KHeadDim)}); err == nil {
			c.vVal, err = e.lib.tensor("idle "+program.VCache(l), c.v, elem, []int64{1, int64(ly.KVHeads), int64(ly.CacheRows), int64(ly.VHeadDim)})
		}
		bg.idle = append(bg.idle, c)
		if err != nil {
			return nil, err
		}
	}
	for b := range B {
		rows, err := e.newRows(1)
		if err != nil {
			return nil, err
		}
		bg.rows = append(bg.rows, rows)
		for l, r := range rows {
			if err := bg.bind(e, fnBindOutput, onnx.SlotName(rowsName("k", l), b, B), r.kVal); err != nil {
				return nil, err
			}
			if err := bg.bind(e, fnBindOutput, onnx.SlotName(rowsName("v", l), b, B), r.vVal); err != nil {
				return nil, err
			}
		}
		if err := bg.bindCaches(e, b, nil); err != nil {
			return nil, err
		}
	}
	bg.runArgs = []uintptr{bg.session, 0, bg.binding}
	return bg, nil
}

func (bg *batchGraph) bind(e *Executor, fn int, name string, v uintptr) error {
	var strs cstrings
	err := e.lib.call(fmt.Sprintf("bind %s of the decode graph for %d sessions", name, bg.B), fn, bg.binding, strs.add(name), v)
	runtime.KeepAlive(strs)
	return err
}

// bindCaches binds slot b's cache inputs to s's caches (nil: the zero caches).
func (bg *batchGraph) bindCaches(e *Executor, b int, s *Step) error {
	caches := bg.idle
	if s != nil {
		caches = s.caches
	}
	for l, c := range caches {
		if err := bg.bind(e, fnBindInput, onnx.SlotName(program.KCache(l), b, bg.B), c.kVal); err != nil {
			return err
		}
		if err := bg.bind(e, fnBindInput, onnx.SlotName(program.VCache(l), b, bg.B), c.vVal); err != nil {
			return err
		}
	}
	bg.bound[b], bg.stale[b] = s, false
	return nil
}

// forget drops a closing step from the slots: the binding still refers to its caches,
// which the next run binds again.
func (bg *batchGraph) forget(s *Step) {
	for b, x := range bg.bound {
		if x == s {
			bg.bound[b], bg.stale[b] = nil, true
		}
	}
}

func (bg *batchGraph) release(e *Executor) {
	e.lib.release(fnReleaseIoBinding, bg.binding)
	bg.binding = 0
	e.lib.release(fnReleaseSession, bg.session)
	bg.session = 0
	for _, v := range bg.values {
		e.lib.release(fnReleaseValue, v)
	}
	bg.values = nil
	for _, rows := range bg.rows {
		e.releaseRows(rows)
	}
	bg.rows = nil
	for _, c := range bg.idle {
		e.lib.release(fnReleaseValue, c.kVal)
		e.lib.release(fnReleaseValue, c.vVal)
	}
	bg.idle = nil
}

// RunBatch runs steps bound by Bind (runner.BatchExecutor): the decode steps together in
// the batched decode graphs (up to the largest size at once, each group in the smallest
// graph that holds it), the others one by one. A step whose inputs are invalid fails
// alone; an ONNX Runtime failure fails the steps of its run. Each session gets the logits
// and cache rows it gets alone, within the parity tolerances (ORT's kernels may sum a
// row in another order for another number of rows).
func (e *Executor) RunBatch(ctx context.Context, steps []runner.Step, errs []error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runs = e.runs[:0]
	for i, st := range steps {
		s, ok := st.(*Step)
		if !ok || s.e != e {
			errs[i] = fmt.Errorf("ort: RunBatch: step %d was not bound by this executor", i)
			continue
		}
		pos, n, err := s.rows()
		if err != nil {
			errs[i] = fmt.Errorf("method %q: %w", s.m.spec.Name, err)
			continue
		}
		if len(e.pending) == 0 || s.m.spec.Name != program.MethodDecode || s.m.spec.Step != 1 {
			errs[i] = s.run(pos, n)
			continue
		}
		e.runs = append(e.runs, s)
	}
	if len(e.runs) > 1 {
		e.startBatches()
	}
	maxB := 1
	if len(e.batches) > 0 {
		maxB = e.batches[len(e.batches)-1].B
	}
	for start := 0; start < len(e.runs); start += maxB {
		group := e.runs[start:min(start+maxB, len(e.runs))]
		if len(group) == 1 {
			s := group[0]
			pos, n, _ := s.rows()
			e.setErr(steps, errs, s, s.run(pos, n))
			continue
		}
		bg := e.batches[0]
		for _, x := range e.batches {
			if x.B >= len(group) {
				bg = x
				break
			}
		}
		err := bg.run(e, group)
		if err == nil {
			e.batchStats.Runs++
			e.batchStats.Sessions += int64(len(group))
			e.batchStats.Slots += int64(bg.B)
		}
		for _, s := range group {
			e.setErr(steps, errs, s, err)
		}
	}
}

// BatchStats counts the runs of the batched decode graphs.
type BatchStats struct {
	Runs     int64 // runs of a batched graph
	Sessions int64 // the sessions those runs stepped
	Slots    int64 // the slots of those runs (idle ones included)
	Graphs   []int // the sizes of the batched graphs that have sessions
	Err      error // why the batched graphs could not be created, if they could not
}

// BatchStats returns the counts so far.
func (e *Executor) BatchStats() BatchStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.batchStats
	for _, bg := range e.batches {
		st.Graphs = append(st.Graphs, bg.B)
	}
	st.Err = e.batchErr
	return st
}

// setErr records err as the error of step s in errs.
func (e *Executor) setErr(steps []runner.Step, errs []error, s *Step, err error) {
	for i, st := range steps {
		if st == runner.Step(s) {
			errs[i] = err
			return
		}
	}
}

// run runs group (at most B decode steps, inputs checked) in the graph, then writes each
// step's logits and cache rows and advances its counters. The caller holds e.mu.
func (bg *batchGraph) run(e *Executor, group []*Step) error {
	C := len(bg.mask) / bg.B
	for b := range bg.B {
		var s *Step
		if b < len(group) {
			s = group[b]
			if e.closed || s.binding == 0 {
				return fmt.Errorf("ort: method %q: step used after Close", s.m.spec.Name)
			}
		}
		if bg.bound[b] != s || bg.stale[b] {
			if err := bg.bindCaches(e, b, s); err != nil {
				return err
			}
		}
		row := bg.mask[b*C : (b+1)*C]
		if s == nil { // idle: position 0, seeing itself only
			bg.ids[b], bg.positions[b] = 0, 0
			clear(row)
			row[0] = 1
			continue
		}
		bg.ids[b], bg.positions[b] = s.ids[0], s.positions[0]
		copy(row, s.mask)
	}
	if st := e.lib.callStatus(fnRunWithBinding, bg.runArgs); st != 0 {
		return e.lib.status(fmt.Sprintf("run the decode graph for %d sessions", bg.B), st)
	}
	V := len(bg.logits) / 4 / bg.B
	for b, s := range group {
		pos := int(s.positions[0])
		copy(s.logits, bg.logits[4*V*b:4*V*(b+1)])
		for l, c := range s.caches {
			r := &bg.rows[b][l]
			writeRows(c.k, r.k, r.H, 1, c.L, r.Dk*c.es, pos, 1)
			writeRows(c.v, r.v, r.H, 1, c.L, r.Dv*c.es, pos, 1)
		}
		for _, c := range s.counters {
			*c++
		}
	}
	return nil
}
