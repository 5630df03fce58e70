package ort

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/onnx"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// matMulNBits is the operator of q4/q8 products, as onnx.Resolved.Ops counts it.
const matMulNBits = onnx.MSDomain + ".MatMulNBits"

// ErrNoGraph reports a program without the ONNX graph of a method.
var ErrNoGraph = errors.New("the program has no ONNX graphs: export it with `hfstatic export DIR -o X.hfs --delegate onnx` to run it with --executor ort")

// Payload is what the executor runs: each method's ONNX model and the initializers the
// models take from outside their bytes.
type Payload struct {
	// Graphs maps a method name to its serialized ModelProto; ORT copies it while parsing.
	Graphs map[string][]byte
	// Batches maps B to the decode graph for B sessions at once (onnx.BatchSizes; none in
	// programs exported before graph version 2: then batched steps run one by one).
	Batches map[int][]byte

	// Initializers are supplied to every session by name.
	Initializers []Initializer

	spill []byte // the mapping of ReadPayload's spill file, if any (released by Close)
}

// Initializer is a constant tensor given to ORT from memory hfstatic owns (the mapped
// program file, read-only, or a converted copy), in place of the model's external
// initializer of the same name.
type Initializer struct {
	Name  string
	Elem  int     // ONNX element type (TensorProto.DataType)
	Shape []int64 // outermost first
	Data  []byte  // must stay valid while the executor lives; the executor keeps a reference
}

// ReadPayload reads the ONNX payload that `hfstatic export --delegate onnx` stores in a
// program (internal/onnx): raw weights alias the file, q4/q8 ones are converted to
// MatMulNBits' layout (one copy, made here), and each converted tensor's program pages are
// given back as soon as its copy exists (pageOut: the executor reads them no more). On Linux
// the copy goes to an unlinked temporary file in os.TempDir() when that is on disk, read
// through a mapping whose pages the executor drops while ONNX Runtime packs them (its peak
// RSS then holds ORT's packed form, not both); in memory otherwise, or if the file cannot be
// written.
func ReadPayload(f *program.File) (*Payload, error) {
	p, err := readOnnxPayload(f)
	if err != nil {
		return nil, err
	}
	if s := newSpill(); s != nil {
		out, err := readPayload(f, p, s)
		var se spillError
		if !errors.As(err, &se) {
			return out, err
		}
	}
	return readPayload(f, p, nil)
}

// readOnnxPayload is onnx.ReadPayload, ErrNoGraph without a payload.
func readOnnxPayload(f *program.File) (*onnx.Payload, error) {
	p, err := onnx.ReadPayload(f)
	if errors.Is(err, onnx.ErrNoPayload) {
		return nil, ErrNoGraph
	}
	return p, err
}

// spillError is a failure to write or map the spill file (ReadPayload then converts into
// memory).
type spillError struct{ error }

func readPayload(f *program.File, p *onnx.Payload, s *spill) (*Payload, error) {
	out := &Payload{Graphs: p.Graphs, Batches: p.Batches}
	// A converted tensor's program pages are given back as soon as its last initializer
	// exists, so that the program and its converted copy are never both resident (q4: the
	// load's peak was the whole program plus the whole copy, 885 MB for a 416 MB program).
	left := map[string]int{} // converted initializers still to make, per tensor
	for _, in := range p.Initializers {
		if in.Layout != onnx.LayoutRaw {
			left[in.Tensor]++
		}
	}
	type span struct{ i, off, n int64 }
	var spilled []span
	// With a spill file, the f32 transposes go through one reused buffer (the f32 Qwen3-0.6B
	// shape's load 16 → 12 s); the q4/q8 conversions do not: reusing it for them saved no
	// load time, and q4's peak RSS, ~10 MiB under its target, was not worth the risk (811–819
	// MiB in four runs, against 801–826 without: within the noise, docs/delegate.md).
	var scratch []byte
	for i := range p.Initializers {
		in := &p.Initializers[i]
		var buf []byte
		if s != nil && in.Layout == onnx.LayoutF32T {
			buf = scratch
		}
		data, err := in.DataInto(f, buf)
		if err != nil {
			if s != nil {
				s.discard()
			}
			return nil, err
		}
		if s != nil && in.Layout != onnx.LayoutRaw {
			off, err := s.add(data)
			if err != nil {
				s.discard()
				return nil, spillError{err}
			}
			spilled = append(spilled, span{int64(i), off, int64(len(data))})
			if in.Layout == onnx.LayoutF32T {
				scratch = data[:0]
			}
			data = nil
		}
		out.Initializers = append(out.Initializers, Initializer{Name: in.Name, Elem: int(in.DType), Shape: in.Dims, Data: data})
		if in.Layout == onnx.LayoutRaw {
			continue
		}
		if left[in.Tensor]--; left[in.Tensor] == 0 {
			if _, data, ok := f.TensorData(in.Tensor); ok {
				pageOut(data)
			}
		}
	}
	if s != nil {
		m, err := s.mapped()
		if err != nil {
			return nil, spillError{err}
		}
		for _, sp := range spilled {
			out.Initializers[sp.i].Data = m[sp.off : sp.off+sp.n : sp.off+sp.n]
		}
		out.spill = m
	}
	return out, nil
}

// Options configure New.
type Options struct {
	// Threads is ORT's intra-op thread count (the calling thread included); must be ≥ 1.
	Threads int
	// Payload returns the graphs and initializers to run; nil means ReadPayload.
	Payload func(f *program.File) (*Payload, error)
	// Spin lets ORT's worker threads spin as long as ORT likes between ops (its default:
	// milliseconds, which takes CPU from other processes). Off, they spin 50 µs, then
	// sleep, as the Go executor's do.
	Spin bool
	// ProfilePrefix turns on ORT's profiler, writing JSON files with this prefix on Close.
	ProfilePrefix string
	// Provider is the execution provider the sessions run on ("" means ProviderCPU).
	Provider Provider
	// SessionConfig adds session configuration entries (ORT's session.* keys) after the
	// executor's own, for experiments.
	SessionConfig [][2]string
	// Batch says when the sessions of the batched decode graphs are created (the graphs
	// themselves are checked by New either way): BatchLazy (the default) in the background
	// at the first RunBatch with two decode steps, which run one by one until they exist;
	// BatchEager in New; BatchOff never.
	Batch BatchMode
}

// BatchMode says when the batched decode graphs get their sessions (Options.Batch).
type BatchMode int

// Batch modes.
const (
	BatchLazy BatchMode = iota
	BatchEager
	BatchOff
)

// Executor runs a program's methods on ONNX Runtime (one session per method). It
// implements runner.Executor; steps run one at a time (they share the rows scratch).
type Executor struct {
	lib     *Lib
	file    *program.File
	opts    Options
	methods map[string]*method
	weights map[string]uintptr // OrtValues over the initializers' data, read by the sessions in place
	keep    [][]byte           // the initializers' data, referenced while the sessions live
	spill   []byte             // ReadPayload's spill mapping (the converted initializers), if any
	prepack uintptr            // the sessions' shared prepacked weights
	packs   bool               // the graphs have kernels that prepack (MatMulNBits)
	config  [][2]string        // session configuration entries
	mu      sync.Mutex         // one step at a time
	closed  bool
	steps   map[*Step]struct{} // bound steps not yet closed (released by Close before the sessions)
	batches []*batchGraph      // the batched decode graphs that have sessions, by size

	// The batched graphs waiting for their sessions (Options.Batch), and their creation.
	pending  map[int]*onnx.Resolved
	data     map[string]*Initializer
	creating bool
	created  sync.WaitGroup
	batchErr error
	wmu      sync.Mutex // guards weights and keep (sessions are created outside mu)
	runs     []*Step    // RunBatch's scratch: the steps of one batched run

	batchStats BatchStats
}

// method is one method's session and its scratch for the returned K/V rows.
type method struct {
	spec    *program.Method
	session uintptr
	layers  []layerRows
	encode  bool // an hf_encode method (encode.go): no caches
}

// layerRows is the scratch ORT writes a layer's current rows into.
type layerRows struct {
	k, v       []byte  // [1, H, S, D] in the cache dtype (the graph rounds them), executor-owned
	kVal, vVal uintptr // OrtValues over k and v
	H, Dk, Dv  int
}

// New creates an ORT session for every method of f. f's bytes must stay mapped while the
// executor lives. Every graph is checked first (onnx.Resolve): a graph that refers to
// tensor data the payload does not supply from the program fails with an error wrapping
// onnx.ErrExternalData before any session exists, so ONNX Runtime never reads a file.
func New(lib *Lib, f *program.File, opts Options) (*Executor, error) {
	if opts.Threads < 1 {
		return nil, fmt.Errorf("ort: Options.Threads = %d, must be ≥ 1", opts.Threads)
	}
	if opts.Payload == nil {
		opts.Payload = ReadPayload
	}
	if err := lib.checkProvider(opts.Provider); err != nil {
		return nil, err
	}
	p, err := opts.Payload(f)
	if err != nil {
		return nil, err
	}
	owned := false // the executor releases the spill mapping from here on
	defer func() {
		if !owned {
			unmap(p.spill)
		}
	}()
	supplied := map[string]onnx.Supplied{}
	data := map[string]*Initializer{}
	for i := range p.Initializers {
		in := &p.Initializers[i]
		if _, dup := supplied[in.Name]; dup {
			return nil, fmt.Errorf("ort: initializer %q given twice", in.Name)
		}
		supplied[in.Name] = onnx.Supplied{DType: onnx.ElemType(in.Elem), Dims: in.Shape}
		data[in.Name] = in
	}
	graphs := map[string]*onnx.Resolved{}
	for _, spec := range f.Manifest.Methods {
		g, ok := p.Graphs[spec.Name]
		if !ok {
			return nil, fmt.Errorf("method %q: %w", spec.Name, ErrNoGraph)
		}
		if graphs[spec.Name], err = onnx.Resolve(g, supplied); err != nil {
			return nil, fmt.Errorf("ort: method %q: %w", spec.Name, err)
		}
	}
	batches := map[int]*onnx.Resolved{}
	for B, g := range p.Batches {
		if batches[B], err = onnx.Resolve(g, supplied); err != nil {
			return nil, fmt.Errorf("ort: decode graph for %d sessions: %w", B, err)
		}
	}
	// What reading the payload and resolving the graphs left behind goes back to the system
	// before ONNX Runtime allocates its packed weights: the Go heap would otherwise keep it
	// until the next collection, at the peak (q4 Qwen3-0.6B shape: peak RSS −95 MB).
	debug.FreeOSMemory()
	e := &Executor{lib: lib, file: f, opts: opts, methods: map[string]*method{}, weights: map[string]uintptr{}, steps: map[*Step]struct{}{}, spill: p.spill}
	owned = true
	// MatMulNBits (q4/q8 weights) has no fast path without its prepacked form; float
	// weights are multiplied where they are (prepacking would copy every matrix)
	for _, g := range graphs {
		e.packs = e.packs || g.Ops[matMulNBits] > 0
	}
	if !e.packs {
		e.config = append(e.config, [2]string{"session.disable_prepacking", "1"})
	}
	e.config = append(e.config, opts.SessionConfig...)
	if e.prepack, err = lib.newPrepackedWeights(); err != nil {
		return nil, err
	}
	for i := range f.Manifest.Methods {
		spec := &f.Manifest.Methods[i]
		m, err := e.load(spec, graphs[spec.Name], data)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.methods[spec.Name] = m
	}
	if dec, ok := e.methods[program.MethodDecode]; ok && dec.spec.Step == 1 && opts.Batch != BatchOff && len(batches) > 0 {
		e.pending, e.data = batches, data
		if opts.Batch == BatchEager {
			e.creating = true
			if err := e.createBatches(); err != nil {
				e.Close()
				return nil, err
			}
		}
	}
	return e, nil
}

// createBatches creates the sessions of the pending batched graphs, smallest first, each
// usable as soon as it exists. It does not hold e.mu while ORT works.
func (e *Executor) createBatches() error {
	spec := e.methods[program.MethodDecode].spec
	for _, B := range slices.Sorted(maps.Keys(e.pending)) {
		bg, err := e.loadBatch(spec, B, e.pending[B], e.data)
		if err != nil {
			return err
		}
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			bg.release(e)
			return nil
		}
		e.batches = append(e.batches, bg)
		e.mu.Unlock()
	}
	return nil
}

// startBatches starts creating the batched graphs' sessions in the background, once (in
// New for BatchEager). The caller holds e.mu.
func (e *Executor) startBatches() {
	if e.creating || len(e.pending) == 0 {
		return
	}
	e.creating = true
	e.created.Add(1)
	go func() {
		defer e.created.Done()
		if err := e.createBatches(); err != nil {
			e.mu.Lock()
			e.batchErr = err
			e.mu.Unlock()
		}
	}()
}

// session creates a session for the resolved graph g, giving it the initializers it
// declares (OrtValues over data, made once and shared by every session).
func (e *Executor) session(what, profile string, g *onnx.Resolved, data map[string]*Initializer) (uintptr, error) {
	weights, copied := map[string]uintptr{}, map[string]uintptr{}
	e.wmu.Lock()
	defer e.wmu.Unlock()
	for _, name := range g.Supplied {
		v, ok := e.weights[name]
		if !ok {
			in := data[name]
			var err error
			if v, err = e.lib.tensor("initializer "+in.Name, in.Data, in.Elem, in.Shape); err != nil {
				return 0, err
			}
			e.weights[name] = v
			e.keep = append(e.keep, in.Data)
		}
		if slices.Contains(g.Folded, name) {
			copied[name] = v
		} else {
			weights[name] = v
		}
	}
	if profile != "" && e.opts.ProfilePrefix != "" {
		profile = e.opts.ProfilePrefix + "-" + profile
	} else {
		profile = ""
	}
	if len(e.spill) > 0 {
		// ORT reads every converted weight once to pack it (in each session, see
		// docs/delegate.md); dropping the mapping's pages as it goes keeps them out of
		// the resident set (they stay in the page cache), so the packed copy is not
		// counted twice at the peak
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					dropPages(e.spill)
				}
			}
		}()
		defer func() { close(done); dropPages(e.spill) }()
	}
	return e.lib.newSession(what, g.Model, sessionOptions{
		threads: e.opts.Threads, spin: e.opts.Spin, profile: profile, weights: weights, copied: copied, optLevel: ortEnableAll,
		prepack: e.prepack, provider: e.opts.Provider, config: e.config})
}

func (e *Executor) load(spec *program.Method, g *onnx.Resolved, data map[string]*Initializer) (*method, error) {
	sess, err := e.session(fmt.Sprintf("method %q", spec.Name), spec.Name, g, data)
	if err != nil {
		return nil, err
	}
	m := &method{spec: spec, session: sess}
	if e.file.Manifest.Metadata.Contract == program.EncodeContractName {
		m.encode = true // no caches, no rows
		return m, nil
	}
	if m.layers, err = e.newRows(spec.Step); err != nil {
		e.lib.release(fnReleaseSession, sess)
		return nil, err
	}
	return m, nil
}

// newRows makes the scratch a graph writes one session's current K/V rows into, S rows
// per layer.
func (e *Executor) newRows(S int) ([]layerRows, error) {
	md := e.file.Manifest.Metadata
	elem, err := elemType(md.CacheDType)
	if err != nil {
		return nil, err
	}
	es := md.CacheDType.ElemBytes()
	var out []layerRows
	for l, ly := range md.Layers {
		r := layerRows{H: ly.KVHeads, Dk: ly.KHeadDim, Dv: ly.VHeadDim}
		r.k = align.Bytes(es * ly.KVHeads * S * ly.KHeadDim)
		r.v = align.Bytes(es * ly.KVHeads * S * ly.VHeadDim)
		if r.kVal, err = e.lib.tensor(rowsName("k", l), r.k, elem, []int64{1, int64(r.H), int64(S), int64(r.Dk)}); err == nil {
			r.vVal, err = e.lib.tensor(rowsName("v", l), r.v, elem, []int64{1, int64(r.H), int64(S), int64(r.Dv)})
		}
		out = append(out, r)
		if err != nil {
			e.releaseRows(out)
			return nil, err
		}
	}
	return out, nil
}

func (e *Executor) releaseRows(rows []layerRows) {
	for _, r := range rows {
		e.lib.release(fnReleaseValue, r.kVal)
		e.lib.release(fnReleaseValue, r.vVal)
	}
}

// rowsName is the graph output holding layer l's current keys ("k") or values ("v").
func rowsName(kv string, l int) string {
	if kv == "k" {
		return onnx.RowsName(program.KCache(l))
	}
	return onnx.RowsName(program.VCache(l))
}

func f32Bytes(x []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}

// ComputesPadding reports that ORT runs every row of a step, padding included (the graphs
// have fixed shapes), so the runner sends one-token appends through decode (runner.PaddingExecutor).
func (e *Executor) ComputesPadding() bool { return true }

// Close ends profiling (when on), then releases the sessions and the values (after the
// batched graphs' sessions being created in the background, if any, exist).
func (e *Executor) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.created.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	for s := range e.steps { // bindings go before their sessions
		s.release()
	}
	var first error
	for _, m := range e.methods {
		if e.opts.ProfilePrefix != "" && m.session != 0 {
			if _, err := e.lib.endProfiling(m.session); err != nil && first == nil {
				first = err
			}
		}
		e.lib.release(fnReleaseSession, m.session)
		e.releaseRows(m.layers)
	}
	for _, bg := range e.batches {
		if e.opts.ProfilePrefix != "" {
			if _, err := e.lib.endProfiling(bg.session); err != nil && first == nil {
				first = err
			}
		}
		bg.release(e)
	}
	e.batches = nil
	// the values and the container go after the sessions that use them
	for name, v := range e.weights {
		e.lib.release(fnReleaseValue, v)
		delete(e.weights, name)
	}
	e.keep = nil
	unmap(e.spill)
	e.spill = nil
	e.lib.release(fnReleasePrepackedWeights, e.prepack)
	e.prepack = 0
	return first
}

// Step is a method bound to a session's buffers through an ORT I/O binding: ORT reads
// the inputs and caches and writes the logits in place, with no copies per step.
type Step struct {
	e       *Executor
	m       *method
	binding uintptr   // OrtIoBinding*
	values  []uintptr // OrtValues over the caller's buffers
	runArgs []uintptr // RunWithBinding(session, NULL run options, binding)

	ids, positions []int64
	mask           []byte // [S][C]
	logits         []byte // the caller's logits buffer
	context        int    // C
	counters       []*int64
	caches         []cacheBuf // per layer: K then V
	inputs         map[string]uintptr
	seqs           *sequences // an hf_encode method's inputs (encode.go); nil otherwise
}

// cacheBuf is one layer's caller-owned caches.
type cacheBuf struct {
	k, v       []byte  // [1, H, L, D] in the cache dtype, written in place
	kVal, vVal uintptr // OrtValues over k and v (read by the graphs)
	L          int
	es         int // bytes per element of the cache dtype
}

// Bind binds every input and output of the method by name to the caller's buffers.
func (e *Executor) Bind(name string, bufs map[string][]byte) (runner.Step, error) {
	m, ok := e.methods[name]
	if !ok {
		return nil, fmt.Errorf("ort: program has no method %q", name)
	}
	if m.encode {
		return e.bindEncode(m, bufs)
	}
	spec := m.spec
	for _, list := range [][]program.IO{spec.Inputs, spec.Outputs} {
		for _, b := range list {
			buf, ok := bufs[b.Name]
			if !ok {
				return nil, fmt.Errorf("ort: method %q: no buffer for %q", name, b.Name)
			}
			if len(buf) != b.Bytes() {
				return nil, fmt.Errorf("ort: method %q: buffer %q has %d bytes, want %d (%s %v)", name, b.Name, len(buf), b.Bytes(), b.DType, b.Shape)
			}
			if len(buf) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%8 != 0 {
				return nil, fmt.Errorf("ort: method %q: buffer %q is not 8-byte aligned", name, b.Name)
			}
		}
	}
	s := &Step{e: e, m: m, inputs: map[string]uintptr{}}
	if err := e.lib.call(fmt.Sprintf("create I/O binding for method %q", name), fnCreateIoBinding, m.session, uintptr(unsafe.Pointer(&s.binding))); err != nil {
		return nil, err
	}
	fail := func(err error) (runner.Step, error) {
		s.Close()
		return nil, err
	}
	bind := func(b program.IO, fn int) error {
		elem, err := elemType(b.DType)
		if err != nil {
			return fmt.Errorf("ort: method %q %s: %w", name, b.Name, err)
		}
		v, err := e.lib.tensor(b.Name, bufs[b.Name], elem, shape64(b.Shape))
		if err != nil {
			return err
		}
		s.values = append(s.values, v)
		if fn == fnBindInput {
			s.inputs[b.Name] = v
		}
		return e.bindValue(s, fn, b.Name, v)
	}
	md := e.file.Manifest.Metadata
	for _, b := range spec.Inputs {
		if b.DType == program.I64 && len(b.Shape) == 0 { // a counter: the executor advances it
			s.counters = append(s.counters, &align.AsI64(bufs[b.Name])[0])
			continue
		}
		if err := bind(b, fnBindInput); err != nil {
			return fail(err)
		}
	}
	for _, b := range spec.Outputs {
		if b.Name != program.Logits {
			continue // caches and counters: written by Run from the rows
		}
		if err := bind(b, fnBindOutput); err != nil {
			return fail(err)
		}
	}
	for l, r := range m.layers {
		if err := e.bindValue(s, fnBindOutput, rowsName("k", l), r.kVal); err != nil {
			return fail(err)
		}
		if err := e.bindValue(s, fnBindOutput, rowsName("v", l), r.vVal); err != nil {
			return fail(err)
		}
		k, v := bufs[program.KCache(l)], bufs[program.VCache(l)]
		kVal, vVal := s.inputs[program.KCache(l)], s.inputs[program.VCache(l)]
		if k == nil || v == nil || kVal == 0 || vVal == 0 {
			return fail(fmt.Errorf("ort: method %q: no cache buffers for layer %d", name, l))
		}
		s.caches = append(s.caches, cacheBuf{k: k, v: v, kVal: kVal, vVal: vVal, L: md.Layers[l].CacheRows, es: md.CacheDType.ElemBytes()})
	}
	s.runArgs = []uintptr{m.session, 0, s.binding}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		s.release()
		return nil, fmt.Errorf("ort: method %q: executor closed", name)
	}
	e.steps[s] = struct{}{}
	s.ids = align.AsI64(bufs[program.InputIDs])
	s.positions = align.AsI64(bufs[program.PositionIDs])
	s.mask = bufs[program.AttentionMask]
	s.logits = bufs[program.Logits]
	s.context = md.MaxContext
	return s, nil
}

func (e *Executor) bindValue(s *Step, fn int, name string, v uintptr) error {
	var strs cstrings
	err := e.lib.call(fmt.Sprintf("bind %s of method %q", name, s.m.spec.Name), fn, s.binding, strs.add(name), v)
	runtime.KeepAlive(strs)
	return err
}

// Close releases the binding and the values over the caller's buffers (the buffers stay
// the caller's). The runner calls it when the session closes.
func (s *Step) Close() error {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	s.release()
	return nil
}

// release frees the binding and values (once); the caller holds e.mu.
func (s *Step) release() {
	s.e.lib.release(fnReleaseIoBinding, s.binding)
	s.binding = 0
	for _, v := range s.values {
		s.e.lib.release(fnReleaseValue, v)
	}
	s.values = nil
	delete(s.e.steps, s)
	for _, bg := range s.e.batches {
		bg.forget(s)
	}
}

// ErrStep reports step inputs that violate the contract (as internal/exec's ErrStep).
var ErrStep = errors.New("invalid step input")

// Run runs the graph over the bound buffers, then writes the real rows into the caches
// and advances the counters. It allocates nothing on the Go side.
func (s *Step) Run(ctx context.Context) error {
	if s.seqs != nil {
		return s.runEncode()
	}
	pos, n, err := s.rows()
	if err != nil {
		return fmt.Errorf("method %q: %w", s.m.spec.Name, err)
	}
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return s.run(pos, n)
}

// run is Run after the inputs were checked; the caller holds e.mu.
func (s *Step) run(pos, n int) error {
	e := s.e
	if e.closed || s.binding == 0 {
		return fmt.Errorf("ort: method %q: step used after Close", s.m.spec.Name)
	}
	if st := e.lib.callStatus(fnRunWithBinding, s.runArgs); st != 0 { // a stored slice: nothing allocated
		return e.lib.status(fmt.Sprintf("run method %q", s.m.spec.Name), st)
	}
	S := s.m.spec.Step
	for l, c := range s.caches {
		r := &s.m.layers[l]
		writeRows(c.k, r.k, r.H, S, c.L, r.Dk*c.es, pos, n)
		writeRows(c.v, r.v, r.H, S, c.L, r.Dv*c.es, pos, n)
	}
	for _, c := range s.counters {
		*c += int64(n)
	}
	return nil
}

// writeRows writes real rows max(0, n-L)..n-1 of rows [1,H,S,D] into cache [1,H,L,D] at
// slot (pos+i) mod L: the contract's cache_write. Both are in the cache dtype (the graph
// rounds the rows as cache_write would); w is the bytes of one head's row (D × element).
func writeRows(cache, rows []byte, H, S, L, w, pos, n int) {
	for i := max(0, n-L); i < n; i++ {
		slot := (pos + i) % L
		for h := 0; h < H; h++ {
			copy(cache[(h*L+slot)*w:(h*L+slot+1)*w], rows[(h*S+i)*w:(h*S+i+1)*w])
		}
	}
}

// rows derives the step's position and real rows from the inputs (contract §4) and checks
// them against the counters.
func (s *Step) rows() (pos, n int, err error) {
	S, C := s.m.spec.Step, s.context
	pos = int(s.positions[0])
	if pos < 0 {
		return 0, 0, fmt.Errorf("%w: position_ids[0] = %d", ErrStep, pos)
	}
	for i := 0; i < S; i++ {
		a := pos + i
		if a < C && s.mask[i*C+a] != 0 {
			if n != i {
				return 0, 0, fmt.Errorf("%w: attention_mask row %d is real after a padding row", ErrStep, i)
			}
			n++
		}
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("%w: attention_mask has no real row at position %d", ErrStep, pos)
	}
	for _, c := range s.counters {
		if int(*c) != pos {
			return 0, 0, fmt.Errorf("%w: cache counter %d disagrees with position_ids[0] = %d", ErrStep, *c, pos)
		}
	}
	return pos, n, nil
}
