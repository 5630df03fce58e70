package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/program"
)

// Errors of Encoder.Encode for inputs it refuses (wrapped in a *SequenceError naming the
// sequence, except ErrNoSequences). Nothing runs when an input is refused.
var (
	ErrNoSequences     = errors.New("no sequences to encode")
	ErrEmptySequence   = errors.New("empty sequence")
	ErrSequenceTooLong = errors.New("sequence longer than the program's max_context")
	ErrTokenType       = errors.New("token type outside the program's token types")
)

// SequenceError reports the input sequence Index that Encode refused; Err is one of the
// errors above, or ErrTokenOutOfRange.
type SequenceError struct {
	Index   int
	Err     error
	Problem string
}

func (e *SequenceError) Error() string { return fmt.Sprintf("sequence %d: %s", e.Index, e.Problem) }

func (e *SequenceError) Unwrap() error { return e.Err }

// Sequence is one input of Encode: token ids and, for programs with token types, their
// types (nil: all 0, as for a single text; a pair's second part has type 1 in BERT).
type Sequence struct {
	IDs   []int
	Types []int
}

// EncoderOptions configure an Encoder.
type EncoderOptions struct {
	// Allocator provides the method's buffers; nil means a PageAllocator.
	Allocator Allocator
	// MaxTokens bounds the real tokens of one call of the method (≥ 0; 0 means
	// DefaultEncodeTokens): hfstatic's executor holds every activation for each of them, so
	// this bounds its memory. A sequence longer than the bound runs in a call of its own.
	MaxTokens int
}

// DefaultEncodeTokens is EncoderOptions.MaxTokens' default: 32 sequences of 256 tokens.
const DefaultEncodeTokens = 8192

// Encoder drives an hf_encode program (docs/contract.md, section 10): it packs sequences into
// calls of the encode method and returns one row per sequence, an embedding or scores.
// Encode is safe for concurrent use: the sequences of concurrent requests share calls (a
// call takes them in the order the requests came, up to Batch sequences and MaxTokens
// tokens), so that many one-text requests cost few calls. One goroutine, owned by the
// Encoder and stopped by Close, runs the calls on one set of buffers taken from the
// Allocator once.
type Encoder struct {
	man       *program.Manifest
	alloc     Allocator
	maxTokens int

	// Owned by the worker goroutine.
	step  Step
	bufs  map[string][]byte
	ids   []int64   // input_ids [B][S]
	types []int64   // token_type_ids [B][S]; nil without token types
	mask  []byte    // attention_mask [B][S]
	out   []float32 // embeddings or scores [B][dim]
	taken []taken   // the sequences of the running call

	mu     sync.Mutex // guards queue and closed
	queue  []*request // requests with sequences not yet taken into a call, oldest first
	closed bool
	wake   chan struct{} // a request arrived (capacity 1)
	stop   chan struct{} // closed by Close
	exited chan struct{} // closed by the worker on its way out
}

// request is one Encode call's sequences and answer.
type request struct {
	seqs      []Sequence
	rows      [][]float32
	next      int // the first sequence not yet taken into a call
	finished  int // sequences whose rows are written
	cancelled bool
	err       error
	done      chan struct{} // closed when every row is written, or on err
}

// taken is one sequence of the running call: sequence i of request r.
type taken struct {
	r *request
	i int
}

// NewEncoder validates the manifest against its contract (hf_encode v1) and binds the encode
// method to buffers from opts.Allocator.
func NewEncoder(m *program.Manifest, exe Executor, opts EncoderOptions) (*Encoder, error) {
	switch {
	case m == nil:
		return nil, errors.New("runner: nil manifest")
	case exe == nil:
		return nil, errors.New("runner: nil Executor")
	case opts.MaxTokens < 0:
		return nil, fmt.Errorf("runner: EncoderOptions.MaxTokens = %d, must be ≥ 0 (0: %d)", opts.MaxTokens, DefaultEncodeTokens)
	}
	if err := ValidateContract(m); err != nil {
		return nil, err
	}
	if c := m.Metadata.Contract; c != program.EncodeContractName {
		return nil, fmt.Errorf("runner: the program follows %s v%d, not %s: it generates text (drive it with New): %w",
			c, m.Metadata.Version, program.EncodeContractName, ErrNotEncoder)
	}
	e := &Encoder{man: m, alloc: opts.Allocator, maxTokens: opts.MaxTokens, bufs: map[string][]byte{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
	if e.maxTokens == 0 {
		e.maxTokens = DefaultEncodeTokens
	}
	if e.alloc == nil {
		e.alloc = &PageAllocator{}
	}
	mt := &m.Methods[0]
	for _, list := range [][]program.IO{mt.Inputs, mt.Outputs} {
		for _, b := range list {
			buf, err := e.alloc.Alloc(b.Bytes())
			if err != nil {
				e.free()
				return nil, fmt.Errorf("runner: encoder buffer %s: %w", b.Name, err)
			}
			e.bufs[b.Name] = buf
		}
	}
	e.ids, e.mask = align.AsI64(e.bufs[program.InputIDs]), e.bufs[program.AttentionMask]
	if b, ok := e.bufs[program.TokenTypeIDs]; ok {
		e.types = align.AsI64(b)
	}
	name, _ := m.Metadata.Encoder.OutputName() // validated
	e.out = asF32(e.bufs[name])
	step, err := exe.Bind(program.MethodEncode, e.bufs)
	if err != nil {
		e.free()
		return nil, err
	}
	e.step = step
	e.taken = make([]taken, 0, m.Metadata.Encoder.Batch)
	go e.work()
	return e, nil
}

func asF32(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// Metadata is the program's contract metadata; Metadata().Encoder describes the outputs.
func (e *Encoder) Metadata() program.Metadata { return e.man.Metadata }

// Check refuses what Encode would refuse, without running anything: no sequences, an empty
// or too long sequence, a token id outside the vocabulary or a type outside the token types.
func (e *Encoder) Check(seqs []Sequence) error {
	md := &e.man.Metadata
	if len(seqs) == 0 {
		return ErrNoSequences
	}
	S, V, T := md.MaxContext, md.VocabSize, md.Encoder.TokenTypes
	for i, s := range seqs {
		bad := func(err error, format string, args ...any) error {
			return &SequenceError{Index: i, Err: err, Problem: fmt.Sprintf(format, args...)}
		}
		switch {
		case len(s.IDs) == 0:
			return bad(ErrEmptySequence, "no tokens")
		case len(s.IDs) > S:
			return bad(ErrSequenceTooLong, "%d tokens, the program takes at most %d per sequence (its max_context)", len(s.IDs), S)
		case s.Types != nil && len(s.Types) != len(s.IDs):
			return bad(ErrTokenType, "%d token types for %d tokens", len(s.Types), len(s.IDs))
		}
		for j, id := range s.IDs {
			if id < 0 || id >= V {
				return bad(ErrTokenOutOfRange, "token %d is id %d, outside the vocabulary [0,%d)", j, id, V)
			}
		}
		for j, t := range s.Types {
			if t < 0 || t >= max(T, 1) {
				return bad(ErrTokenType, "token %d has type %d, outside the program's token types [0,%d)", j, t, max(T, 1))
			}
		}
	}
	return nil
}

// Encode returns one row per sequence (Metadata().Encoder.Dim values each), in order:
// the embeddings or scores of the program. Sequences run in calls of at most Batch
// sequences and MaxTokens tokens, shared with concurrent requests; each one's row is the
// same whatever sequences share its call. A refused input (Check) runs nothing; a cancelled
// ctx returns its error at once, and sequences not yet taken into a call do not run.
func (e *Encoder) Encode(ctx context.Context, seqs []Sequence) ([][]float32, error) {
	if err := e.Check(seqs); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dim := e.man.Metadata.Encoder.Dim
	flat := make([]float32, len(seqs)*dim)
	r := &request{seqs: seqs, rows: make([][]float32, len(seqs)), done: make(chan struct{})}
	for i := range r.rows {
		r.rows[i] = flat[i*dim : (i+1)*dim : (i+1)*dim]
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrEncoderClosed
	}
	e.queue = append(e.queue, r)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default: // the worker is awake already
	}
	select {
	case <-r.done:
		if r.err != nil {
			return nil, r.err
		}
		return r.rows, nil
	case <-ctx.Done():
		e.mu.Lock()
		r.cancelled = true
		e.dequeue(r)
		e.mu.Unlock()
		return nil, ctx.Err()
	}
}

// ErrEncoderClosed is returned by Encode after Close.
var ErrEncoderClosed = errors.New("runner: Encoder closed")

// dequeue removes r from the queue; e.mu is held.
func (e *Encoder) dequeue(r *request) {
	for i, q := range e.queue {
		if q == r {
			e.queue = append(e.queue[:i], e.queue[i+1:]...)
			return
		}
	}
}

// work runs calls while requests wait, until Close.
func (e *Encoder) work() {
	defer close(e.exited)
	for {
		select {
		case <-e.stop:
			return
		case <-e.wake:
		}
		for e.call() {
			select {
			case <-e.stop:
				return
			default:
			}
		}
	}
}

// call takes the next sequences of the waiting requests (oldest first, up to Batch
// sequences and MaxTokens tokens; always at least one), runs them as one call and writes
// their rows. It reports whether it ran anything.
func (e *Encoder) call() bool {
	md := &e.man.Metadata
	B, S, dim := md.Encoder.Batch, md.MaxContext, md.Encoder.Dim
	e.taken = e.taken[:0]
	tokens := 0
	e.mu.Lock()
	for len(e.queue) > 0 && len(e.taken) < B {
		r := e.queue[0]
		n := len(r.seqs[r.next].IDs)
		if len(e.taken) > 0 && tokens+n > e.maxTokens {
			break
		}
		e.taken = append(e.taken, taken{r, r.next})
		tokens += n
		if r.next++; r.next == len(r.seqs) {
			e.queue = e.queue[1:]
		}
	}
	e.mu.Unlock()
	if len(e.taken) == 0 {
		return false
	}
	clear(e.mask)
	for i := range e.ids {
		e.ids[i] = md.Tokens.Pad
	}
	clear(e.types)
	for b, t := range e.taken {
		s := t.r.seqs[t.i]
		for j, id := range s.IDs {
			e.ids[b*S+j] = int64(id)
			e.mask[b*S+j] = 1
		}
		if e.types != nil {
			for j, ty := range s.Types {
				e.types[b*S+j] = int64(ty)
			}
		}
	}
	err := e.step.Run(context.Background()) // the call serves several requests: none cancels it
	e.mu.Lock()
	defer e.mu.Unlock()
	for b, t := range e.taken {
		r := t.r
		if r.err != nil || r.cancelled {
			continue
		}
		if err != nil {
			r.err = fmt.Errorf("encode sequence %d: %w", t.i, err)
			e.dequeue(r)
			close(r.done)
			continue
		}
		copy(r.rows[t.i], e.out[b*dim:(b+1)*dim])
		if r.finished++; r.finished == len(r.seqs) {
			close(r.done)
		}
	}
	return true
}

// Close stops the worker, fails the requests still waiting with ErrEncoderClosed and
// returns the buffers to the Allocator.
func (e *Encoder) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	close(e.stop)
	<-e.exited
	e.mu.Lock()
	for _, r := range e.queue {
		if !r.cancelled && r.err == nil {
			r.err = ErrEncoderClosed
			close(r.done)
		}
	}
	e.queue = nil
	e.mu.Unlock()
	e.free()
	return nil
}

func (e *Encoder) free() {
	for n, b := range e.bufs {
		e.alloc.Free(b)
		delete(e.bufs, n)
	}
}
