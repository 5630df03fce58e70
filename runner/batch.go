package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// BatchExecutor is an optional capability of an Executor (discovered at run time, as
// database/sql discovers optional driver interfaces): RunBatch runs one step of several
// sessions as one pass, so that every weight is read once for all of them.
//
// steps are steps this Executor bound (Bind), each to a different session's buffers and
// with its inputs filled as for Step.Run. The result must be bit for bit what running
// each step alone would give. errs has len(steps) entries: RunBatch sets errs[i] to step
// i's error (nil on success); a step that fails must leave the other steps' results and
// buffers exactly as if it had not been in the batch.
type BatchExecutor interface {
	RunBatch(ctx context.Context, steps []Step, errs []error)
}

// ErrBatcherClosed is returned by calls on a Seq whose Batcher is closed.
var ErrBatcherClosed = errors.New("batcher closed")

// ErrLeft is returned by calls on a Seq after Leave.
var ErrLeft = errors.New("sequence left its batcher")

// stepWait bounds how long the scheduler waits for a joined sequence that is between two
// steps (running its callback, or sampling before its next call) before it starts a step
// without it: 2 ms, or a quarter of the last step if longer (a straggler left out costs a
// whole step of its own).
const stepWait = 2 * time.Millisecond

// DefaultChunkBudget is BatchOptions.ChunkBudget's default: with PrefillChunk 0, a step
// with a prompt chunk beside decode rows takes at most 1.5× a step of the decode rows alone,
// so the running streams' gaps between tokens stretch by at most that while a long prompt is
// prefilled (Sarathi-Serve's stall-free batching, with the budget in time, measured, rather
// than in tokens). chunkStart is the chunk tried before any step was measured.
const (
	DefaultChunkBudget = 1.5
	MaxChunkBudget     = 1000
	chunkStart         = 8
)

// ValidChunkBudget reports whether b is a valid BatchOptions.ChunkBudget: 0 (the default)
// or in (1, MaxChunkBudget].
func ValidChunkBudget(b float64) bool { return b == 0 || b > 1 && b <= MaxChunkBudget }

// wait is the current bound of the wait for stragglers. b.mu is held.
func (b *Batcher) wait() time.Duration { return max(stepWait, b.lastStep/4) }

// BatchOptions configure a Batcher.
type BatchOptions struct {
	// MaxBatch is the most sessions one step runs (≥ 1).
	MaxBatch int
	// PrefillChunk is the most prompt rows of one session a step runs, in [1, the
	// program's prefill step]; 0 chooses it before every step: the whole prefill step
	// while no other joined sequence is decoding, else as many rows as keep a step with
	// a chunk within ChunkBudget times the recent decode-only step (see chunkRows).
	PrefillChunk int
	// ChunkBudget is, with PrefillChunk 0, how many times a decode-only step a step with a
	// prompt chunk may take (> 1; 0 means DefaultChunkBudget): larger budgets prefill
	// faster and stretch the running streams' gaps more.
	ChunkBudget float64
	// OnStep, if set, is called by the scheduler after every step. It must return quickly
	// and must not call the Batcher.
	OnStep func(StepStats)
}

// StepStats describe one batched step.
type StepStats struct {
	Sessions    int           // sessions in the step
	Rows        int           // real rows of all sessions
	PrefillRows int           // rows of the prefill chunk (0 when none)
	Duration    time.Duration // time to run the step
}

// BatchStats is a snapshot of a Batcher.
type BatchStats struct {
	Joined  int   // sequences joined
	Running int   // sequences in the step running now
	Waiting int   // sequences with a step queued for a later step
	Steps   int64 // steps run
	Rows    int64 // real rows run
}

// Batcher runs the steps of several sessions together. A scheduler goroutine, started by
// NewBatcher and stopped by Close, forms each step from the steps the joined sequences
// have queued: the decode rows of every sequence that has one, plus at most one prefill
// chunk of one sequence (in turn), so that a long prompt does not stall running streams.
// With a BatchExecutor the step's sessions run as one pass, otherwise one after another.
type Batcher struct {
	r        *Runner
	opts     BatchOptions
	batchExe BatchExecutor // nil: run the sessions of a step one by one

	mu       sync.Mutex
	seqs     []*Seq        // joined
	queue    []*Seq        // sequences with a queued step, in arrival order
	busy     bool          // a step is running (the scheduler's, or one run by its caller)
	lastStep time.Duration // how long the last step took
	stepEnd  time.Time     // when it ended
	// decodeStep is the moving average of the steps of decode rows only (0: none yet),
	// chunk the prefill rows a step beside decode rows takes (PrefillChunk 0).
	decodeStep time.Duration
	chunk      int
	stats      BatchStats
	closed     bool
	kick       chan struct{} // wakes the scheduler (buffered, 1)
	stop       chan struct{} // closed by Close
	exited     chan struct{} // closed by the scheduler

	// Scheduler-owned, reused every step.
	step  []*Seq
	steps []Step
	errs  []error
	rr    int // round-robin cursor for prefill chunks and decode rows
	// lastChunk records that the last step ran a prefill chunk.
	lastChunk bool
	linger    *time.Timer
}

// seqState is where a Seq is in its calls.
type seqState int

const (
	seqIdle    seqState = iota // not in a call
	seqQueued                  // a step is queued
	seqRunning                 // its step is running
	seqBetween                 // in a call, between two steps
)

// Seq is a session joined to a Batcher: its appends run in steps shared with the other
// joined sessions. Like Session, it is not safe for concurrent use, and the session must
// not be used directly while a call of its Seq runs.
type Seq struct {
	b *Batcher
	s *Session

	// Guarded by b.mu.
	state    seqState
	left     bool
	mio      *methodIO // the queued step
	rows     int
	prefill  bool // the step is a chunk of a prompt (of one row too)
	ctx      context.Context
	queuedAt time.Time
	returned time.Time // when the last call returned

	result chan error // the queued step's outcome (buffered, 1)
}

// NewBatcher starts a Batcher for r's sessions. Close stops it.
func NewBatcher(r *Runner, opts BatchOptions) (*Batcher, error) {
	switch {
	case r == nil:
		return nil, errors.New("runner: NewBatcher: nil Runner")
	case opts.MaxBatch < 1:
		return nil, fmt.Errorf("runner: BatchOptions.MaxBatch = %d, must be ≥ 1", opts.MaxBatch)
	case opts.PrefillChunk < 0 || opts.PrefillChunk > r.planner.Prefill:
		return nil, fmt.Errorf("runner: BatchOptions.PrefillChunk = %d, must be in [0, %d] (the program's prefill step)", opts.PrefillChunk, r.planner.Prefill)
	case !ValidChunkBudget(opts.ChunkBudget):
		return nil, fmt.Errorf("runner: BatchOptions.ChunkBudget = %v, must be in (1, %d] (0: %v)", opts.ChunkBudget, MaxChunkBudget, DefaultChunkBudget)
	}
	if opts.ChunkBudget == 0 {
		opts.ChunkBudget = DefaultChunkBudget
	}
	b := &Batcher{r: r, opts: opts, kick: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{}),
		step: make([]*Seq, 0, opts.MaxBatch), steps: make([]Step, 0, opts.MaxBatch), errs: make([]error, opts.MaxBatch),
		linger: time.NewTimer(time.Hour), chunk: min(chunkStart, r.planner.Prefill)}
	b.linger.Stop()
	b.batchExe, _ = r.exe.(BatchExecutor)
	go b.schedule()
	return b, nil
}

// Batched reports whether steps run as one pass (the Executor is a BatchExecutor).
func (b *Batcher) Batched() bool { return b.batchExe != nil }

// Join makes s take part in batched steps until Leave. s must be a session of the
// Batcher's runner and may be joined to one Batcher at a time.
func (b *Batcher) Join(s *Session) (*Seq, error) {
	if s == nil {
		return nil, errors.New("runner: Join: nil Session")
	}
	if s.r != b.r {
		return nil, errors.New("runner: Join: the session belongs to another Runner")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrBatcherClosed
	}
	if s.joined {
		return nil, errors.New("runner: Join: the session is already joined to a Batcher (Leave first)")
	}
	s.joined = true
	// Treated as having just returned from a call: its first step is expected soon.
	q := &Seq{b: b, s: s, result: make(chan error, 1), returned: time.Now()}
	b.seqs = append(b.seqs, q)
	b.stats.Joined = len(b.seqs)
	return q, nil
}

// Session returns the joined session.
func (q *Seq) Session() *Session { return q.s }

// Append is Session.Append with its steps shared with the other joined sessions.
func (q *Seq) Append(ctx context.Context, tokens []int) error {
	return q.appendEach(ctx, tokens, nil)
}

// AppendEach is Session.AppendEach (the same logits, callbacks, errors and poisoning)
// with its steps shared with the other joined sessions. each runs on the caller's
// goroutine between steps. A cancelled ctx ends the call at the next step boundary.
func (q *Seq) AppendEach(ctx context.Context, tokens []int, each func(i int, logits []float32) error) error {
	return q.appendEach(ctx, tokens, each)
}

func (q *Seq) appendEach(ctx context.Context, tokens []int, each func(int, []float32) error) error {
	b := q.b
	b.mu.Lock()
	switch {
	case q.left:
		b.mu.Unlock()
		return ErrLeft
	case b.closed:
		b.mu.Unlock()
		return ErrBatcherClosed
	}
	q.state = seqBetween
	b.mu.Unlock()
	err := q.s.appendVia(ctx, tokens, each, q)
	b.mu.Lock()
	q.state, q.returned = seqIdle, time.Now()
	b.mu.Unlock()
	if err == nil {
		return nil // errors.As below would allocate on every call
	}
	if nr := (notRunError{}); errors.As(err, &nr) {
		err = nr.err
	}
	return err
}

// chunkRows is the most prompt rows of q's next prefill step: PrefillChunk if set; else
// the program's prefill step while no other joined sequence is decoding (nothing waits
// on the prompt but its own client) or when steps do not run as one pass, and the
// measured chunk beside decode rows.
func (q *Seq) chunkRows() int {
	b := q.b
	if b.opts.PrefillChunk > 0 {
		return b.opts.PrefillChunk
	}
	if b.opts.MaxBatch == 1 || b.batchExe == nil {
		return b.r.planner.Prefill // steps run one after another: a chunk stalls the others whole
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// A decoding sequence is idle between its calls (a server samples and streams each
	// token between two): one that returned within a step's time still counts.
	now, recent := time.Now(), max(b.wait(), b.lastStep)
	for _, x := range b.seqs {
		if x != q && !x.prefill && x.rows == 1 && (x.state != seqIdle || now.Sub(x.returned) < recent) {
			return b.chunk
		}
	}
	return b.r.planner.Prefill
}

// runStep queues the session's filled step (n rows; prompt: of an append of several
// tokens, a prefill chunk even when of one row) and waits for its outcome. Errors wrapping
// errNotRun mean the step never ran.
func (q *Seq) runStep(ctx context.Context, s *Session, mio *methodIO, n int, prompt bool) error {
	b := q.b
	b.mu.Lock()
	switch {
	case q.left:
		b.mu.Unlock()
		return notRun(ErrLeft)
	case b.closed:
		b.mu.Unlock()
		return notRun(ErrBatcherClosed)
	}
	now := time.Now()
	if !b.busy && len(b.queue) == 0 && !b.expected(now, q) {
		// Nothing to share the step with: run it here, without a hand-over to the
		// scheduler and back.
		b.busy, q.state = true, seqRunning
		b.stats.Running = 1
		b.mu.Unlock()
		start := time.Now()
		err := mio.step.Run(ctx)
		st := StepStats{Sessions: 1, Rows: n, Duration: time.Since(start)}
		if prompt {
			st.PrefillRows = n
		}
		b.mu.Lock()
		b.endStep(st)
		q.state = seqBetween
		b.mu.Unlock()
		b.wake()
		if b.opts.OnStep != nil {
			b.opts.OnStep(st)
		}
		return err
	}
	q.state, q.mio, q.rows, q.prefill, q.ctx, q.queuedAt = seqQueued, mio, n, prompt, ctx, now
	b.queue = append(b.queue, q)
	b.stats.Waiting = len(b.queue)
	b.mu.Unlock()
	b.wake()
	select {
	case err := <-q.result:
		return err
	case <-ctx.Done():
	}
	b.mu.Lock()
	if q.state == seqQueued { // not taken into a step yet: withdraw it
		b.unqueue(q)
		q.state = seqBetween
		b.mu.Unlock()
		return notRun(ctx.Err())
	}
	b.mu.Unlock()
	return <-q.result // running: a step is never interrupted part-way
}

// notRunError marks an error of a step that never ran.
type notRunError struct{ err error }

func (e notRunError) Error() string { return e.err.Error() }
func (e notRunError) Unwrap() []error {
	return []error{errNotRun, e.err}
}

func notRun(err error) error { return notRunError{err} }

// unqueue removes q from the queue. b.mu is held.
func (b *Batcher) unqueue(q *Seq) {
	for i, x := range b.queue {
		if x == q {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			break
		}
	}
	b.stats.Waiting = len(b.queue)
}

// Leave takes the sequence out of its Batcher: a queued step is withdrawn (its call
// returns ErrLeft) and later calls return ErrLeft. The session stays usable on its own.
// A step already running completes.
func (q *Seq) Leave() {
	b := q.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if q.left {
		return
	}
	q.left = true
	q.s.joined = false
	if q.state == seqQueued {
		b.unqueue(q)
		q.state = seqBetween
		q.result <- notRun(ErrLeft)
	}
	for i, x := range b.seqs {
		if x == q {
			b.seqs = append(b.seqs[:i], b.seqs[i+1:]...)
			break
		}
	}
	b.stats.Joined = len(b.seqs)
}

// Stats returns a snapshot of the Batcher's counts.
func (b *Batcher) Stats() BatchStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Close stops the scheduler after the step it is running; queued and later calls return
// ErrBatcherClosed (the sessions are left as they were after their last step).
func (b *Batcher) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		<-b.exited
		return nil
	}
	b.closed = true
	close(b.stop)
	b.mu.Unlock()
	<-b.exited
	return nil
}

// schedule is the scheduler goroutine.
func (b *Batcher) schedule() {
	defer close(b.exited)
	for {
		select {
		case <-b.stop:
			b.drain()
			return
		case <-b.kick:
		case <-b.linger.C:
		}
		if !b.form() {
			continue
		}
		b.run()
		b.wake() // steps left queued (a second prefill chunk, more than MaxBatch) run next
	}
}

// drain fails every queued step after Close.
func (b *Batcher) drain() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, q := range b.queue {
		q.state = seqBetween
		q.result <- notRun(ErrBatcherClosed)
	}
	b.queue = b.queue[:0]
	b.stats.Waiting = 0
}

// form picks the next step's sequences into b.step, or reports false when there is
// nothing to run yet (no queued step, or sequences expected within stepWait).
func (b *Batcher) form() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 || b.closed || b.busy {
		return false
	}
	now := time.Now()
	// Wait from the later of the oldest queued step and the end of the last step: steps
	// queued while a step ran must not make the sequences of that step miss the next.
	from := b.queue[0].queuedAt
	if from.Before(b.stepEnd) {
		from = b.stepEnd
	}
	if deadline := from.Add(b.wait()); now.Before(deadline) && len(b.queue) < b.opts.MaxBatch && b.expected(now, nil) {
		b.linger.Reset(deadline.Sub(now))
		return false // a step is expected soon: wait for it to fill the step
	}
	b.step = b.step[:0]
	// At most one prefill chunk (a step of several rows), taken in turn, then single
	// rows in turn (a one-token step is a decode row whichever method runs it).
	// With room for one sequence only, a chunk and a decode row take turns: chunks first
	// every step would stall every running stream until the prompt is in.
	n := len(b.queue)
	start := b.rr % n
	chunkTurn := b.opts.MaxBatch > 1 || !b.lastChunk || !slices.ContainsFunc(b.queue, func(q *Seq) bool { return q.rows == 1 })
	for i := 0; i < n && chunkTurn; i++ {
		q := b.queue[(start+i)%n]
		if q.rows > 1 {
			b.step = append(b.step, q)
			break
		}
	}
	b.lastChunk = len(b.step) > 0
	for i := 0; i < n && len(b.step) < b.opts.MaxBatch; i++ {
		q := b.queue[(start+i)%n]
		if q.rows == 1 {
			b.step = append(b.step, q)
		}
	}
	b.rr++
	for _, q := range b.step {
		q.state = seqRunning
		b.unqueue(q)
	}
	b.busy = true
	b.stats.Running = len(b.step)
	return true
}

// expected reports whether a joined sequence other than q is between two steps of a
// call, or returned from a call less than stepWait ago: its next step is likely soon.
// b.mu is held.
func (b *Batcher) expected(now time.Time, q *Seq) bool {
	for _, x := range b.seqs {
		if x != q && (x.state == seqBetween || (x.state == seqIdle && now.Sub(x.returned) < b.wait())) {
			return true
		}
	}
	return false
}

// endStep records a finished step. b.mu is held.
func (b *Batcher) endStep(st StepStats) {
	b.busy, b.lastStep, b.stepEnd = false, st.Duration, time.Now()
	b.stats.Running = 0
	b.stats.Steps++
	b.stats.Rows += int64(st.Rows)
	b.adapt(st)
}

// adapt moves the chunk taken beside decode rows toward the most rows whose step stays
// within ChunkBudget of a decode-only step: over budget, to the rows the step's measured
// cost per prompt row allows; well under it, a few rows more. b.mu is held.
func (b *Batcher) adapt(st StepStats) {
	switch {
	case st.Rows == 0:
	case st.PrefillRows == 0:
		if b.decodeStep == 0 {
			b.decodeStep = st.Duration
		} else {
			b.decodeStep = (3*b.decodeStep + st.Duration) / 4
		}
	case st.Rows > st.PrefillRows && b.decodeStep > 0:
		budget := time.Duration(b.opts.ChunkBudget * float64(b.decodeStep))
		switch c := st.PrefillRows; {
		case st.Duration > budget:
			perRow := (st.Duration - b.decodeStep) / time.Duration(c)
			fit := int((budget - b.decodeStep) / max(perRow, 1))
			b.chunk = max(1, min(c-1, fit))
		case st.Duration < budget*3/4:
			b.chunk = min(b.r.planner.Prefill, max(b.chunk, c+max(1, c/8)))
		}
	}
}

// wake makes the scheduler look at the queue.
func (b *Batcher) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// run executes b.step and hands each sequence its outcome.
func (b *Batcher) run() {
	start := time.Now()
	st := StepStats{Sessions: len(b.step)}
	for _, q := range b.step {
		st.Rows += q.rows
		if q.prefill {
			st.PrefillRows += q.rows
		}
	}
	errs := b.errs[:len(b.step)]
	if b.batchExe != nil && len(b.step) > 1 {
		b.steps = b.steps[:0]
		for _, q := range b.step {
			b.steps = append(b.steps, q.mio.step)
		}
		clear(errs)
		b.batchExe.RunBatch(context.Background(), b.steps, errs)
	} else {
		for i, q := range b.step {
			errs[i] = q.mio.step.Run(q.ctx)
		}
	}
	st.Duration = time.Since(start)
	b.mu.Lock()
	for i, q := range b.step {
		q.state = seqBetween
		q.result <- errs[i]
	}
	b.endStep(st)
	b.mu.Unlock()
	clear(errs)
	if b.opts.OnStep != nil {
		b.opts.OnStep(st)
	}
}
