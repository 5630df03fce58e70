package ort

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/onnx"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// ErrNoGraph reports a program without the ONNX graph of a method.
var ErrNoGraph = errors.New("the program has no ONNX graphs: export it with `hfstatic export DIR -o X.hfs --delegate onnx` to run it with --executor ort")

// Payload is what the executor runs: each method's ONNX model and the initializers the
// models take from outside their bytes.
type Payload struct {
	// Graphs maps a method name to its serialized ModelProto; ORT copies it while parsing.
	Graphs map[string][]byte
	// Initializers are supplied to every session by name.
	Initializers []Initializer
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
// MatMulNBits' layout (one copy in memory, made here).
func ReadPayload(f *program.File) (*Payload, error) {
	p, err := onnx.ReadPayload(f)
	if errors.Is(err, onnx.ErrNoPayload) {
		return nil, ErrNoGraph
	}
	if err != nil {
		return nil, err
	}
	out := &Payload{Graphs: p.Graphs}
	for i := range p.Initializers {
		in := &p.Initializers[i]
		data, err := in.Data(f)
		if err != nil {
			return nil, err
		}
		out.Initializers = append(out.Initializers, Initializer{Name: in.Name, Elem: int(in.DType), Shape: in.Dims, Data: data})
	}
	return out, nil
}

// Options configure New.
type Options struct {
	// Threads is ORT's intra-op thread count (the calling thread included); must be ≥ 1.
	Threads int
	// Payload returns the graphs and initializers to run; nil means ReadPayload.
	Payload func(f *program.File) (*Payload, error)
	// Spin lets ORT's worker threads spin between ops (ORT's default; faster, but it
	// takes CPU from other processes). Off, they sleep.
	Spin bool
	// ProfilePrefix turns on ORT's profiler, writing JSON files with this prefix on Close.
	ProfilePrefix string
}

// Executor runs a program's methods on ONNX Runtime (one session per method). It
// implements runner.Executor; steps run one at a time (they share the rows scratch).
type Executor struct {
	lib     *Lib
	file    *program.File
	opts    Options
	methods map[string]*method
	weights map[string]uintptr // OrtValues over initializer data, until the sessions exist
	keep    [][]byte           // the initializers' data, referenced until then
	mu      sync.Mutex         // one step at a time
	closed  bool
	steps   map[*Step]struct{} // bound steps not yet closed (released by Close before the sessions)
}

// method is one method's session and its scratch for the returned K/V rows.
type method struct {
	spec    *program.Method
	session uintptr
	layers  []layerRows
}

// layerRows is the scratch ORT writes a layer's current rows into.
type layerRows struct {
	k, v       []byte  // [1, H, S, D] in the cache dtype (the graph rounds them), executor-owned
	kVal, vVal uintptr // OrtValues over k and v
	H, Dk, Dv  int
}

// New creates an ORT session for every method of f. f's bytes must stay mapped while the
// executor lives.
func New(lib *Lib, f *program.File, opts Options) (*Executor, error) {
	if opts.Threads < 1 {
		return nil, fmt.Errorf("ort: Options.Threads = %d, must be ≥ 1", opts.Threads)
	}
	if opts.Payload == nil {
		opts.Payload = ReadPayload
	}
	p, err := opts.Payload(f)
	if err != nil {
		return nil, err
	}
	e := &Executor{lib: lib, file: f, opts: opts, methods: map[string]*method{}, weights: map[string]uintptr{}, steps: map[*Step]struct{}{}}
	for _, in := range p.Initializers {
		if _, dup := e.weights[in.Name]; dup {
			e.Close()
			return nil, fmt.Errorf("ort: initializer %q given twice", in.Name)
		}
		v, err := lib.tensor("initializer "+in.Name, in.Data, in.Elem, in.Shape)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.weights[in.Name] = v
		e.keep = append(e.keep, in.Data)
	}
	for i := range f.Manifest.Methods {
		spec := &f.Manifest.Methods[i]
		model, ok := p.Graphs[spec.Name]
		if !ok {
			e.Close()
			return nil, fmt.Errorf("method %q: %w", spec.Name, ErrNoGraph)
		}
		m, err := e.load(spec, model)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.methods[spec.Name] = m
	}
	// The sessions hold their own copies of the initializers now (AddExternalInitializers
	// copies them): release the values and let converted buffers go.
	e.releaseWeights()
	return e, nil
}

func (e *Executor) releaseWeights() {
	for name, v := range e.weights {
		e.lib.release(fnReleaseValue, v)
		delete(e.weights, name)
	}
	e.keep = nil
}

func (e *Executor) load(spec *program.Method, model []byte) (*method, error) {
	prefix := ""
	if e.opts.ProfilePrefix != "" {
		prefix = e.opts.ProfilePrefix + "-" + spec.Name
	}
	sess, err := e.lib.newSession(fmt.Sprintf("method %q", spec.Name), model, sessionOptions{
		threads: e.opts.Threads, spin: e.opts.Spin, profile: prefix, weights: e.weights, optLevel: ortEnableAll})
	if err != nil {
		return nil, err
	}
	m := &method{spec: spec, session: sess}
	md := e.file.Manifest.Metadata
	S := spec.Step
	elem, err := elemType(md.CacheDType)
	if err != nil {
		return nil, err
	}
	es := md.CacheDType.ElemBytes()
	for l, ly := range md.Layers {
		r := layerRows{H: ly.KVHeads, Dk: ly.KHeadDim, Dv: ly.VHeadDim}
		r.k = align.Bytes(es * ly.KVHeads * S * ly.KHeadDim)
		r.v = align.Bytes(es * ly.KVHeads * S * ly.VHeadDim)
		if r.kVal, err = e.lib.tensor(rowsName("k", l), r.k, elem, []int64{1, int64(r.H), int64(S), int64(r.Dk)}); err != nil {
			return nil, err
		}
		if r.vVal, err = e.lib.tensor(rowsName("v", l), r.v, elem, []int64{1, int64(r.H), int64(S), int64(r.Dv)}); err != nil {
			return nil, err
		}
		m.layers = append(m.layers, r)
	}
	return m, nil
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

// Close ends profiling (when on), then releases the sessions and the values.
func (e *Executor) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
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
		for _, r := range m.layers {
			e.lib.release(fnReleaseValue, r.kVal)
			e.lib.release(fnReleaseValue, r.vVal)
		}
	}
	e.releaseWeights()
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
	context        int    // C
	counters       []*int64
	caches         []cacheBuf // per layer: K then V
}

// cacheBuf is one layer's caller-owned caches.
type cacheBuf struct {
	k, v []byte // [1, H, L, D] in the cache dtype, written in place
	L    int
	es   int // bytes per element of the cache dtype
}

// Bind binds every input and output of the method by name to the caller's buffers.
func (e *Executor) Bind(name string, bufs map[string][]byte) (runner.Step, error) {
	m, ok := e.methods[name]
	if !ok {
		return nil, fmt.Errorf("ort: program has no method %q", name)
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
	s := &Step{e: e, m: m}
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
		k, v := bufs[fmt.Sprintf("k_cache_%d", l)], bufs[fmt.Sprintf("v_cache_%d", l)]
		if k == nil || v == nil {
			return fail(fmt.Errorf("ort: method %q: no cache buffers for layer %d", name, l))
		}
		s.caches = append(s.caches, cacheBuf{k: k, v: v, L: md.Layers[l].CacheRows, es: md.CacheDType.ElemBytes()})
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
}

// ErrStep reports step inputs that violate the contract (as internal/exec's ErrStep).
var ErrStep = errors.New("invalid step input")

// Run runs the graph over the bound buffers, then writes the real rows into the caches
// and advances the counters. It allocates nothing on the Go side.
func (s *Step) Run(ctx context.Context) error {
	pos, n, err := s.rows()
	if err != nil {
		return fmt.Errorf("method %q: %w", s.m.spec.Name, err)
	}
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || s.binding == 0 {
		return fmt.Errorf("ort: method %q: step used after Close", s.m.spec.Name)
	}
	st := syscallN(e.lib.fn[fnRunWithBinding], s.runArgs...) // a stored slice: nothing allocated
	if st != 0 {
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
