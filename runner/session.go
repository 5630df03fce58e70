package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/hfstatic/hfstatic/internal/align"
	"io"
	"unsafe"

	"github.com/hfstatic/hfstatic/program"
)

// ErrClosed is returned by a closed session.
var ErrClosed = errors.New("session closed")

// ErrTokenOutOfRange is wrapped when an appended token id is not in [0, vocab size).
var ErrTokenOutOfRange = errors.New("token id outside the vocabulary")

// PoisonedError wraps the failure that poisoned a session: every call returns it until Reset.
type PoisonedError struct{ Err error }

func (e *PoisonedError) Error() string {
	return fmt.Sprintf("session poisoned by an earlier failure (call Reset): %v", e.Err)
}

func (e *PoisonedError) Unwrap() error { return e.Err }

// methodIO holds one method's bound step and typed views of its private buffers.
type methodIO struct {
	spec      *program.Method
	step      Step
	ids       []int64
	mask      []byte
	positions []int64
	logits    []float32
	// maskEnd[i] is how many leading ones mask row i holds (the rest is zero), so a step
	// rewrites only what changed instead of all S×C bytes.
	maskEnd []int
}

// Session is one sequence's state: caches, counters, position and logits. It is not safe
// for concurrent use.
type Session struct {
	r        *Runner
	owned    [][]byte          // every buffer from the allocator, freed on Close
	state    map[string][]byte // caches and counters, shared by both methods
	counters [][]int64
	dec, pre *methodIO
	pos      int
	history  []int // committed tokens, len == pos
	// lo[l] is the oldest absolute position layer l's cache still holds: positions
	// [lo[l], pos) are intact. 0 for full-length caches; it rises as a ring wraps.
	lo     []int
	err    error // poison
	closed bool
	joined bool // to a Batcher (guarded by its mutex)

	last    []float32 // last real row's logits (a view into lastMIO.logits), nil when stale
	lastMIO *methodIO // method whose logits buffer holds last
	lastRow int       // row of lastMIO.logits that last views
	version uint64    // bumped by every step and state change; Logits views check it
}

// NewSession allocates a session's buffers (once) and binds the methods to them.
func (r *Runner) NewSession() (*Session, error) {
	s := &Session{r: r, state: map[string][]byte{}, history: make([]int, 0, r.planner.Context),
		lo: make([]int, len(r.man.Metadata.Layers))}
	ok := false
	defer func() {
		if !ok {
			s.free()
		}
	}()
	for l := range r.man.Metadata.Layers {
		for _, n := range []string{program.KCache(l), program.VCache(l), program.Counter(l)} {
			b, _ := r.decode.Input(n)
			buf, err := s.alloc(b.Bytes())
			if err != nil {
				return nil, fmt.Errorf("allocate %s: %w", n, err)
			}
			s.state[n] = buf
		}
		s.counters = append(s.counters, align.AsI64(s.state[program.Counter(l)]))
	}
	var err error
	if s.dec, err = s.bind(r.decode); err != nil {
		return nil, err
	}
	if r.prefill != nil {
		if s.pre, err = s.bind(r.prefill); err != nil {
			return nil, err
		}
	}
	ok = true
	return s, nil
}

func (s *Session) alloc(n int) ([]byte, error) {
	b, err := s.r.alloc.Alloc(n)
	if err != nil {
		return nil, err
	}
	if len(b) != n {
		return nil, fmt.Errorf("allocator returned %d bytes, asked for %d", len(b), n)
	}
	if n > 0 && uintptr(unsafe.Pointer(&b[0]))%64 != 0 {
		return nil, fmt.Errorf("allocator returned a buffer that is not 64-byte aligned")
	}
	s.owned = append(s.owned, b)
	return b, nil
}

func (s *Session) bind(spec *program.Method) (*methodIO, error) {
	bufs := map[string][]byte{}
	for k, v := range s.state {
		bufs[k] = v
	}
	for _, n := range []string{program.InputIDs, program.AttentionMask, program.PositionIDs} {
		b, _ := spec.Input(n)
		buf, err := s.alloc(b.Bytes())
		if err != nil {
			return nil, fmt.Errorf("allocate %s/%s: %w", spec.Name, n, err)
		}
		bufs[n] = buf
	}
	lo, _ := spec.Output(program.Logits)
	lb, err := s.alloc(lo.Bytes())
	if err != nil {
		return nil, fmt.Errorf("allocate %s/logits: %w", spec.Name, err)
	}
	bufs[program.Logits] = lb
	step, err := s.r.exe.Bind(spec.Name, bufs)
	if err != nil {
		return nil, fmt.Errorf("bind %s: %w", spec.Name, err)
	}
	mask := bufs[program.AttentionMask]
	clear(mask)
	return &methodIO{spec: spec, step: step, ids: align.AsI64(bufs[program.InputIDs]), mask: mask,
		positions: align.AsI64(bufs[program.PositionIDs]), logits: align.AsF32(lb), maskEnd: make([]int, spec.Step)}, nil
}

// Position is the number of committed tokens (the next absolute position).
func (s *Session) Position() int { return s.pos }

// Tokens returns the committed tokens. The slice is read-only and valid until the next call
// that changes the session.
func (s *Session) Tokens() []int { return s.history[:len(s.history):len(s.history)] }

// Runner returns the session's runner.
func (s *Session) Runner() *Runner { return s.r }

func (s *Session) usable() error {
	if s.closed {
		return ErrClosed
	}
	if s.err != nil {
		return &PoisonedError{Err: s.err}
	}
	return nil
}

// Append runs tokens through the program. If the request is infeasible (empty, past the
// context, ids outside the vocabulary) it returns an error and changes nothing. A failure
// while running poisons the session until Reset. ctx is checked between steps; a cancelled
// append leaves the session consistent at the last completed step and returns ctx's error.
func (s *Session) Append(ctx context.Context, tokens []int) error {
	return s.append(ctx, tokens, nil)
}

// AppendEach is Append that calls fn with the logits after each token, in order. It uses
// the prefill method only if that method returns every row's logits; otherwise it runs
// decode steps. The row passed to fn is valid only during the call.
func (s *Session) AppendEach(ctx context.Context, tokens []int, fn func(i int, logits []float32) error) error {
	return s.append(ctx, tokens, fn)
}

func (s *Session) append(ctx context.Context, tokens []int, each func(int, []float32) error) error {
	return s.appendVia(ctx, tokens, each, nil)
}

// stepRunner runs one filled step of a session: Session calls Run on the bound step
// itself; a Seq hands the step to its Batcher, which also bounds its prefill chunks.
type stepRunner interface {
	runStep(ctx context.Context, s *Session, mio *methodIO, n int, prompt bool) error
	// chunkRows is the most rows of the next prefill step, asked before each.
	chunkRows() int
}

// appendVia is Append(Each) with its steps run by via (nil: directly, in whole prefill
// steps; else in prefill chunks of at most via.chunkRows() rows).
func (s *Session) appendVia(ctx context.Context, tokens []int, each func(int, []float32) error, via stepRunner) error {
	if err := s.usable(); err != nil {
		return err
	}
	shape := s.r.planner
	if err := shape.CheckAppend(s.pos, len(tokens)); err != nil {
		return err
	}
	V := int64(s.r.man.Metadata.VocabSize)
	for i, t := range tokens {
		if t < 0 || int64(t) >= V {
			return fmt.Errorf("%w: token %d at index %d is outside the vocabulary [0,%d)", ErrTokenOutOfRange, t, i, V)
		}
	}
	if each != nil && !s.r.PrefillLogitsAll() {
		shape.Prefill = 0
	}
	done := 0
	for done < len(tokens) {
		if err := ctx.Err(); err != nil {
			return err
		}
		st := shape.Next(s.pos, len(tokens)-done)
		mio := s.dec
		if st.Prefill {
			mio = s.pre
			if via != nil {
				st.N = max(1, min(st.N, via.chunkRows()))
			}
		}
		toks := tokens[done : done+st.N]
		s.fill(mio, toks)
		var err error
		if via == nil {
			err = mio.step.Run(ctx)
		} else if err = via.runStep(ctx, s, mio, st.N, len(tokens) > 1); errors.Is(err, errNotRun) {
			return err // the step did not run: the session is as it was after the last one
		}
		if err == nil {
			err = s.commit(mio, toks)
		}
		if err != nil {
			s.err = fmt.Errorf("%s step at position %d (%d tokens): %w", mio.spec.Name, s.pos, st.N, err)
			return s.err
		}
		if each != nil {
			V := s.r.man.Metadata.VocabSize
			for i := 0; i < st.N; i++ {
				row := mio.logits[i*V : (i+1)*V]
				if mio.spec.Logits == program.LogitsLast {
					row = mio.logits[:V]
				}
				if err := each(done+i, row); err != nil {
					return err
				}
			}
		}
		done += st.N
	}
	return nil
}

// errNotRun is wrapped by a stepRunner's error when the step was never started (so the
// session is not poisoned).
var errNotRun = errors.New("step not run")

// fill writes one method's inputs for the real tokens toks at s.pos.
func (s *Session) fill(mio *methodIO, toks []int) {
	S, C, n, pos := mio.spec.Step, s.r.planner.Context, len(toks), s.pos
	pad := s.r.man.Metadata.Tokens.Pad
	for i := 0; i < S; i++ {
		if i < n {
			mio.ids[i] = int64(toks[i])
		} else {
			mio.ids[i] = pad
		}
		mio.positions[i] = int64(pos + i)
		// keep[i][j] = j ≤ pos+min(i,n-1) && j < pos+n
		row := mio.mask[i*C : (i+1)*C]
		end, old := pos+min(i, n-1)+1, mio.maskEnd[i]
		if end > old {
			for j := range row[old:end] {
				row[old+j] = 1
			}
		} else {
			clear(row[end:old])
		}
		mio.maskEnd[i] = end
	}
	s.version++
}

// commit checks the counters after a step of toks at s.pos and moves the session past it.
func (s *Session) commit(mio *methodIO, toks []int) error {
	n, pos := len(toks), s.pos
	for l, c := range s.counters {
		if c[0] != int64(pos+n) {
			return fmt.Errorf("counter_%d is %d after the step, want %d", l, c[0], pos+n)
		}
	}
	row := 0
	if mio.spec.Logits == program.LogitsAll {
		row = n - 1
	}
	s.setLast(mio, row)
	for l, ly := range s.r.man.Metadata.Layers {
		s.lo[l] = max(s.lo[l], pos+n-ly.CacheRows)
	}
	s.pos += n
	s.history = append(s.history, toks...)
	return nil
}

// setLast points the logits view at row of mio's logits buffer.
func (s *Session) setLast(mio *methodIO, row int) {
	V := s.r.man.Metadata.VocabSize
	s.last, s.lastMIO, s.lastRow = mio.logits[row*V:(row+1)*V], mio, row
}

// clearLast makes the logits stale.
func (s *Session) clearLast() {
	s.last, s.lastMIO, s.lastRow = nil, nil, 0
	s.version++
}

// Logits is a read-only view of the logits of the last real row of the last step. It is
// valid until the session's next step; after that every accessor reports ok = false.
// Use CopyTo to keep the values.
type Logits struct {
	s       *Session
	v       []float32
	version uint64
}

// Logits returns the current logits view (empty before the first step).
func (s *Session) Logits() Logits { return Logits{s: s, v: s.last, version: s.version} }

// Valid reports whether the view still refers to the latest step.
func (l Logits) Valid() bool { return l.s != nil && l.s.version == l.version && len(l.v) > 0 }

// Len is the vocabulary size (0 when invalid).
func (l Logits) Len() int {
	if !l.Valid() {
		return 0
	}
	return len(l.v)
}

// View returns the underlying values without copying, or nil when the view is stale.
// The slice must not be modified.
func (l Logits) View() []float32 {
	if !l.Valid() {
		return nil
	}
	return l.v
}

// CopyTo copies the logits into dst (which must have Len() elements) and reports success.
func (l Logits) CopyTo(dst []float32) bool {
	if !l.Valid() || len(dst) != len(l.v) {
		return false
	}
	copy(dst, l.v)
	return true
}

// Reset zeroes positions, counters and caches and clears the poison. Every buffer of a
// reset session is byte-identical to a new session's.
func (s *Session) Reset() error {
	if s.closed {
		return ErrClosed
	}
	for _, b := range s.owned {
		clear(b)
	}
	s.masksCleared()
	s.pos, s.err = 0, nil
	clear(s.lo)
	s.history = s.history[:0]
	s.clearLast()
	return nil
}

// Close releases the session's buffers to the allocator.
func (s *Session) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.free()
	return nil
}

func (s *Session) free() {
	s.clearLast() // a Logits view must not read a buffer given back (it may be unmapped)
	for _, mio := range []*methodIO{s.dec, s.pre} {
		if c, ok := stepCloser(mio); ok {
			c.Close() // an executor's resources over the buffers (optional capability)
		}
	}
	for _, b := range s.owned {
		s.r.alloc.Free(b)
	}
	s.owned = nil
}

// masksCleared records that every mask buffer was zeroed (Reset, Restore).
func (s *Session) masksCleared() {
	for _, mio := range []*methodIO{s.dec, s.pre} {
		if mio != nil {
			clear(mio.maskEnd)
		}
	}
}

// masksCopied records that the mask buffers were copied from src (Fork).
func (s *Session) masksCopied(src *Session) {
	if s.dec != nil {
		copy(s.dec.maskEnd, src.dec.maskEnd)
	}
	if s.pre != nil {
		copy(s.pre.maskEnd, src.pre.maskEnd)
	}
}

// stepCloser returns a bound step's Close, for executors whose steps hold resources of their
// own over the session's buffers (an ONNX Runtime I/O binding).
func stepCloser(mio *methodIO) (io.Closer, bool) {
	if mio == nil {
		return nil, false
	}
	c, ok := mio.step.(io.Closer)
	return c, ok
}
