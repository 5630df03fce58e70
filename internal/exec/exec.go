// Package exec loads a decoded program and runs its methods on the CPU.
//
// It owns the memory plan (activations and op scratch allocated once per program and
// shared by its passes, which run one at a time), the op implementations (through
// internal/kernels), in-place cache writes, the thread pool, and batched passes: one step
// of several sessions run together (RunBatch), each linear layer reading its weights once
// for all their rows, attention and cache writes on each session's own buffers.
// It knows nothing about tokens, Hugging Face names or runner policy: it executes the op
// lists exactly as the program states them, for any program that uses the op set.
package exec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/program"
)

// Options configure Load.
type Options struct {
	// Threads is the number of worker threads for matrix products (≥ 1).
	Threads int
	// PerHeadAttention computes attention one query head at a time even where
	// heads share a key/value head (float16 caches read each key once for the
	// whole group otherwise). The results are the same bit for bit; this is the
	// reference the grouped path is tested against.
	PerHeadAttention bool
}

// Program is a loaded program: weights viewed in place from the decoded file and
// compiled methods. It is safe for concurrent use by several bound steps; passes (one
// step, or one step of several sessions: RunBatch) run one at a time on the shared
// thread pool.
type Program struct {
	File    *program.File
	pool    *kernels.Pool
	mu      sync.Mutex // serializes passes on the pool; guards pass
	methods map[string]*Method
	consts  map[string]constant
	perHead bool // Options.PerHeadAttention
	threads int  // Options.Threads

	// index numbers every buffer name of every method (I/O and activations) across the
	// program, so that ops find a step's buffers by slice index, not by map lookup.
	index map[string]int
	// batchable: every method runs the same op list (the same kinds, operands and
	// attributes but last_row), so steps of different methods can share a pass.
	batchable bool
	maxStep   int  // the largest method step (rows)
	pass      pass // the running pass's scratch, reused
	// sequences: a method runs a batch of sequences (hf_encode); its steps run alone.
	sequences bool
	// The running parallel call (encoder.go), and its item function, built once.
	// onePools are one-thread kernel pools, one per pool thread, for products inside a
	// parallel loop (self_attention); made on first use.
	onePools     []*kernels.Pool
	parFn        func(lo, hi int)
	parN, parPer int
	parItem      func(worker, i int)

	// Scratch memory shared by the ops of every method (they run one pass at a time), so
	// that it stays warm in the caches and page tables.
	smu     sync.Mutex
	scratch map[string][]byte
	// packed are the float32 weights of encoders' linear ops laid out once for the
	// packed matrix product (kernels.PackF32), by weight name, shared by every method.
	packed      map[string]*kernels.PackedF32
	arena       []byte   // what is left of the last arena packMem carves from
	arenas      [][]byte // every arena, unmapped by Close
	packedBytes int      // the packed weights' total (≤ packMaxBytes)
}

// shared returns n bytes (64-byte aligned) of the scratch buffer called key, growing it
// if needed. Only one pass runs at a time, so ops may share a buffer as long as each
// uses it only while it runs; two buffers an op uses at the same time need two keys.
func (p *Program) shared(key string, n int) []byte {
	p.smu.Lock()
	defer p.smu.Unlock()
	b := p.scratch[key]
	if len(b) < n {
		b = align.Bytes(n)
		p.scratch[key] = b
	}
	return b[:n]
}

type constant struct {
	t    program.Tensor
	data []byte
}

// ErrBinding reports a buffer that does not match a method's I/O spec.
var ErrBinding = errors.New("buffer binding")

// ErrStep reports inputs that violate the step semantics (bad ids, inconsistent mask or counters).
var ErrStep = errors.New("invalid step input")

// Load prepares a decoded program for execution. Every method is compiled and every op's
// shapes are checked against its tensors; a mismatch is an error naming the op and tensor.
func Load(f *program.File, opts Options) (*Program, error) {
	if opts.Threads < 1 {
		return nil, fmt.Errorf("exec: Options.Threads = %d, must be ≥ 1", opts.Threads)
	}
	p := &Program{File: f, methods: map[string]*Method{}, consts: map[string]constant{}, scratch: map[string][]byte{}, perHead: opts.PerHeadAttention, threads: opts.Threads}
	for _, t := range f.Manifest.Tensors {
		_, data, _ := f.TensorData(t.Name)
		if uintptr(unsafe.Pointer(unsafe.SliceData(data)))%8 != 0 && len(data) > 0 {
			return nil, fmt.Errorf("exec: tensor %q data is not aligned", t.Name)
		}
		p.consts[t.Name] = constant{t: t, data: data}
	}
	p.index = map[string]int{}
	for _, mt := range f.Manifest.Methods {
		for _, list := range [][]program.IO{mt.Inputs, mt.Outputs, mt.Activations} {
			for _, b := range list {
				if _, ok := p.index[b.Name]; !ok {
					p.index[b.Name] = len(p.index)
				}
			}
		}
		p.maxStep = max(p.maxStep, mt.Step)
	}
	for i := range f.Manifest.Methods {
		m, err := p.compile(&f.Manifest.Methods[i])
		if err != nil {
			p.freeArenas()
			return nil, err
		}
		p.methods[m.spec.Name] = m
		p.sequences = p.sequences || m.batch > 0
	}
	p.batchable = sameOps(f.Manifest.Methods)
	p.pool = kernels.NewPool(opts.Threads)
	p.parItem = p.parRange
	return p, nil
}

// Close stops the thread pool. The program must not be used afterwards.
func (p *Program) Close() error {
	p.pool.Close()
	for _, op := range p.onePools {
		op.Close()
	}
	p.freeArenas()
	return nil
}

// freeArenas unmaps the packed weights' memory (packMem).
func (p *Program) freeArenas() {
	for _, a := range p.arenas {
		mmap.FreeAnon(a)
	}
	p.arenas, p.arena, p.packed, p.packedBytes = nil, nil, nil, 0
}

// onePool returns the one-thread pool of pool thread w.
func (p *Program) onePool(w int) *kernels.Pool {
	if p.onePools == nil {
		p.onePools = make([]*kernels.Pool, p.threads)
	}
	if p.onePools[w] == nil {
		p.onePools[w] = kernels.NewPool(1)
	}
	return p.onePools[w]
}

// Method returns a compiled method by name.
func (p *Program) Method(name string) (*Method, bool) {
	m, ok := p.methods[name]
	return m, ok
}

// Method is a compiled method.
type Method struct {
	prog *Program
	spec *program.Method
	ops  []op
	// buffers of the method (inputs, outputs, activations) by name.
	buffers map[string]program.IO
	// selected[i] reports that buffer i (program index) holds only the selected rows of
	// each step (those a last_row linear keeps), not all of them.
	selected []bool
	selects  bool // an op selects rows (a last_row linear, a pool)
	output   int  // program index of the logits-like output written by the ops, or -1
	outWidth int  // its last dimension
	// batch and seqLen are B and S of a method over a batch of independent sequences (its
	// attention_mask is [B, S]: an hf_encode method); 0 for hf_static methods.
	batch, seqLen int
}

// Spec is the method's description from the program.
func (m *Method) Spec() *program.Method { return m.spec }

// Step is a method bound to a fixed set of buffers. Running it allocates nothing.
// A Step is not safe for concurrent use.
type Step struct {
	m    *Method
	bufs [][]byte // by program buffer index; nil for buffers the method does not bind

	ids, positions []int64
	mask           []byte // attention_mask, one byte per bool: [S][C] (sequences: [B][S])
	counters       []*int64
	context        int        // C, the mask's last dimension
	pos, n         int        // per run: absolute position of row 0, real rows
	outRows        int        // rows of the output buffer that may hold values of an earlier run
	seq            *sequences // a method over a batch of sequences; nil otherwise
}

// Bind binds buffers to a method: every input and output by name (an in-place buffer,
// present in both, once). Activations and scratch come from memory the program shares
// among its steps (they run one at a time). The buffers must stay valid and must not be
// resized while the Step is used.
func (m *Method) Bind(io map[string][]byte) (*Step, error) {
	s := &Step{m: m, bufs: make([][]byte, len(m.prog.index))}
	for _, list := range [][]program.IO{m.spec.Inputs, m.spec.Outputs} {
		for _, b := range list {
			buf, ok := io[b.Name]
			if !ok {
				return nil, fmt.Errorf("%w: method %q: no buffer for %q", ErrBinding, m.spec.Name, b.Name)
			}
			if len(buf) != b.Bytes() {
				return nil, fmt.Errorf("%w: method %q: buffer %q has %d bytes, want %d (%s %v)", ErrBinding, m.spec.Name, b.Name, len(buf), b.Bytes(), b.DType, b.Shape)
			}
			if len(buf) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%8 != 0 {
				return nil, fmt.Errorf("%w: method %q: buffer %q is not 8-byte aligned", ErrBinding, m.spec.Name, b.Name)
			}
			s.bufs[m.prog.index[b.Name]] = buf
		}
	}
	if b, ok := io[program.InputIDs]; ok {
		s.ids = align.AsI64(b)
	}
	if b, ok := io[program.PositionIDs]; ok {
		s.positions = align.AsI64(b)
	}
	if b, ok := m.buffers[program.AttentionMask]; ok {
		s.mask = io[program.AttentionMask]
		s.context = b.Shape[len(b.Shape)-1]
	}
	for _, b := range m.spec.Inputs {
		if b.DType == program.I64 && len(b.Shape) == 0 {
			s.counters = append(s.counters, &align.AsI64(io[b.Name])[0])
		}
	}
	if m.output >= 0 {
		s.outRows = len(s.bufs[m.output]) / 4 / m.outWidth // the first run clears every padding row
	}
	if m.batch > 0 {
		s.bindSequences(io)
	}
	return s, nil
}

// Run executes one step. On error the bound buffers may be partly updated; the caller
// (the runner) treats the session as poisoned. A step is not interrupted part-way: ctx is
// for the caller to check between steps.
func (s *Step) Run(ctx context.Context) error {
	p := s.m.prog
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.seq != nil {
		return p.runSequences(s)
	}
	one := [1]*Step{s}
	var err [1]error
	p.runPass(one[:], err[:])
	return err[0]
}

// begin derives pos and n from the inputs and checks them against the counters and
// every op's bounds.
func (s *Step) begin() error {
	if err := s.readInputs(); err != nil {
		return fmt.Errorf("method %q: %w", s.m.spec.Name, err)
	}
	for i, o := range s.m.ops {
		if c, ok := o.(checker); ok {
			if err := c.check(s); err != nil {
				return fmt.Errorf("method %q op %d (%s): %w", s.m.spec.Name, i, s.m.spec.Ops[i].Kind, err)
			}
		}
	}
	return nil
}

func (s *Step) readInputs() error {
	if s.seq != nil {
		return s.readSequences()
	}
	S := s.m.spec.Step
	s.pos, s.n = 0, S
	if s.positions != nil {
		s.pos = int(s.positions[0])
		if s.pos < 0 {
			return fmt.Errorf("%w: position_ids[0] = %d", ErrStep, s.pos)
		}
	}
	if s.mask != nil {
		C := s.context
		n := 0
		for i := 0; i < S; i++ {
			a := s.pos + i
			if a < C && s.mask[i*C+a] != 0 {
				if n != i {
					return fmt.Errorf("%w: attention_mask row %d is real after a padding row", ErrStep, i)
				}
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("%w: attention_mask has no real row at position %d", ErrStep, s.pos)
		}
		s.n = n
	}
	for _, c := range s.counters {
		if int(*c) != s.pos {
			return fmt.Errorf("%w: cache counter %d disagrees with position_ids[0] = %d", ErrStep, *c, s.pos)
		}
	}
	return nil
}
