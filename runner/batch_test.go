package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/program"
)

// batchFake is the fake executor with the BatchExecutor capability: RunBatch runs the
// steps one after another and counts the steps it saw together.
type batchFake struct {
	*fakeExec
	batches, maxSteps atomic.Int64
}

func (bf *batchFake) RunBatch(ctx context.Context, steps []Step, errs []error) {
	bf.batches.Add(1)
	for n := int64(len(steps)); ; {
		m := bf.maxSteps.Load()
		if n <= m || bf.maxSteps.CompareAndSwap(m, n) {
			break
		}
	}
	for i, st := range steps {
		errs[i] = st.Run(ctx)
	}
}

// newBatchFake returns a runner over the fake executor, with the batch capability if batch.
func newBatchFake(t testing.TB, f fakeSpec, batch bool) (*batchFake, *Runner) {
	t.Helper()
	bf := &batchFake{fakeExec: &fakeExec{f: f}}
	var exe Executor = bf.fakeExec
	if batch {
		exe = bf
	}
	r, err := New(f.manifest(), "fake-"+fmt.Sprint(f), exe, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return bf, r
}

func newBatcher(t testing.TB, r *Runner, opts BatchOptions) *Batcher {
	t.Helper()
	b, err := NewBatcher(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// scriptCall is one call of a sequence's script: tokens, through AppendEach or Append.
type scriptCall struct {
	toks []int
	each bool
}

// randomScript is a prompt of random length then calls of one to three tokens, up to
// the context.
func randomScript(rng *rand.Rand, C, V int) []scriptCall {
	pos := 0
	var calls []scriptCall
	prompt := 1 + rng.IntN(C/2)
	calls = append(calls, scriptCall{toks: randomTokens(rng, prompt, V), each: rng.IntN(2) == 0})
	pos += prompt
	for pos < C && rng.IntN(8) != 0 {
		n := min(C-pos, 1+rng.IntN(3))
		if rng.IntN(3) != 0 {
			n = 1 // mostly decode
		}
		calls = append(calls, scriptCall{toks: randomTokens(rng, n, V), each: rng.IntN(4) != 0})
		pos += n
	}
	return calls
}

// play runs a script through call and returns every logits row AppendEach passed, and
// the logits after each call.
func play(t testing.TB, s *Session, calls []scriptCall, call func(ctx context.Context, toks []int, each func(int, []float32) error) error) [][]float32 {
	var rows [][]float32
	for _, c := range calls {
		var each func(int, []float32) error
		if c.each {
			each = func(_ int, row []float32) error {
				rows = append(rows, slices.Clone(row))
				return nil
			}
		}
		if err := call(context.Background(), c.toks, each); err != nil {
			t.Errorf("call of %d tokens at %d: %v", len(c.toks), s.Position(), err)
			return rows
		}
		rows = append(rows, slices.Clone(s.Logits().View()))
	}
	return rows
}

func sameRows(a, b [][]float32) bool {
	return slices.EqualFunc(a, b, func(x, y []float32) bool { return slices.Equal(x, y) })
}

func TestBatcherMatchesLoneSessions(t *testing.T) {
	spec := fakeSpec{C: 32, P: 4, V: 7, W: 3, Layers: []program.LayerType{full, sliding}}
	for _, tc := range []struct {
		batch    bool
		maxBatch int
		chunk    int
		logits   program.LogitsRows
	}{
		{false, 3, 0, program.LogitsAll},
		{true, 1, 0, program.LogitsAll},
		{true, 3, 2, program.LogitsAll},
		{true, 8, 0, program.LogitsLast},
		{true, 8, 1, program.LogitsAll},
	} {
		t.Run(fmt.Sprintf("batch=%v/max=%d/chunk=%d/logits=%s", tc.batch, tc.maxBatch, tc.chunk, tc.logits), func(t *testing.T) {
			spec := spec
			spec.PrefillLogits = tc.logits
			bf, r := newBatchFake(t, spec, tc.batch)
			b := newBatcher(t, r, BatchOptions{MaxBatch: tc.maxBatch, PrefillChunk: tc.chunk})
			rng := rand.New(rand.NewPCG(uint64(tc.maxBatch), uint64(tc.chunk)))
			const N = 6
			scripts := make([][]scriptCall, N)
			delays := make([]time.Duration, N)
			for i := range scripts {
				scripts[i] = randomScript(rng, spec.C, spec.V)
				delays[i] = time.Duration(rng.IntN(300)) * time.Microsecond
			}
			got := make([][][]float32, N)
			digests := make([][32]byte, N)
			var wg sync.WaitGroup
			for i := range N {
				s := newSession(t, r)
				q, err := b.Join(s)
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					time.Sleep(delays[i]) // start at different times
					got[i] = play(t, s, scripts[i], q.AppendEach)
					q.Leave()
					digests[i] = stateDigest(s)
				})
			}
			wg.Wait()
			for i := range N {
				s := newSession(t, r)
				want := play(t, s, scripts[i], s.AppendEach)
				if !sameRows(want, got[i]) {
					t.Errorf("sequence %d: batched logits differ from a lone session's", i)
				}
				if stateDigest(s) != digests[i] {
					t.Errorf("sequence %d: batched state differs from a lone session's", i)
				}
			}
			if st := b.Stats(); st.Joined != 0 || st.Running != 0 || st.Waiting != 0 || st.Steps == 0 {
				t.Errorf("stats after all left: %+v", st)
			}
			if m := bf.maxSteps.Load(); m > int64(tc.maxBatch) {
				t.Errorf("a step ran %d sessions, MaxBatch is %d", m, tc.maxBatch)
			}
		})
	}
}

func TestBatchOptionsAreValidated(t *testing.T) {
	_, r := newBatchFake(t, mixed, true)
	for _, opts := range []BatchOptions{{MaxBatch: 0}, {MaxBatch: -1}, {MaxBatch: 2, PrefillChunk: -1}, {MaxBatch: 2, PrefillChunk: mixed.P + 1},
		{MaxBatch: 2, ChunkBudget: 1}, {MaxBatch: 2, ChunkBudget: 0.5}, {MaxBatch: 2, ChunkBudget: -2}, {MaxBatch: 2, ChunkBudget: math.NaN()}, {MaxBatch: 2, ChunkBudget: math.Inf(1)}} {
		if b, err := NewBatcher(r, opts); err == nil {
			b.Close()
			t.Errorf("NewBatcher(%+v) succeeded", opts)
		}
	}
}

func TestBatcherJoinRules(t *testing.T) {
	_, r := newBatchFake(t, mixed, true)
	_, other := newBatchFake(t, mixed, true)
	b := newBatcher(t, r, BatchOptions{MaxBatch: 2})
	s := newSession(t, r)
	q, err := b.Join(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Join(s); err == nil {
		t.Errorf("a session joined twice")
	}
	if _, err := b.Join(newSession(t, other)); err == nil {
		t.Errorf("a session of another runner joined")
	}
	q.Leave()
	if err := q.Append(context.Background(), []int{1}); !errors.Is(err, ErrLeft) {
		t.Errorf("append after Leave: %v, want ErrLeft", err)
	}
	if _, err := b.Join(s); err != nil {
		t.Errorf("rejoin after Leave: %v", err)
	}
	b.Close()
	if _, err := b.Join(newSession(t, r)); !errors.Is(err, ErrBatcherClosed) {
		t.Errorf("join after Close: %v, want ErrBatcherClosed", err)
	}
}

// A failing callback or a cancelled context ends one sequence's call; the others in the
// same steps go on exactly as alone.
func TestBatcherFaultsStayWithTheirSequence(t *testing.T) {
	spec := fakeSpec{C: 32, P: 4, V: 7, W: 3, Layers: []program.LayerType{full, sliding}}
	_, r := newBatchFake(t, spec, true)
	b := newBatcher(t, r, BatchOptions{MaxBatch: 4})
	rng := rand.New(rand.NewPCG(7, 7))
	toks := [3][]int{randomTokens(rng, 30, spec.V), randomTokens(rng, 30, spec.V), randomTokens(rng, 30, spec.V)}
	errBoom := errors.New("callback failed")
	var wg sync.WaitGroup
	var got [][]float32
	var errCallback, errCancel error
	var cancelledAt int
	var cbSession *Session
	wg.Go(func() { // healthy: token by token
		s := newSession(t, r)
		q, _ := b.Join(s)
		defer q.Leave()
		for _, tok := range toks[0] {
			if err := q.AppendEach(context.Background(), []int{tok}, func(_ int, row []float32) error {
				got = append(got, slices.Clone(row))
				return nil
			}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() { // callback fails at row 9
		s := newSession(t, r)
		cbSession = s
		q, _ := b.Join(s)
		defer q.Leave()
		errCallback = q.AppendEach(context.Background(), toks[1], func(i int, _ []float32) error {
			if i == 9 {
				return errBoom
			}
			return nil
		})
	})
	wg.Go(func() { // cancelled after its 5th row
		s := newSession(t, r)
		q, _ := b.Join(s)
		defer q.Leave()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errCancel = q.AppendEach(ctx, toks[2], func(i int, _ []float32) error {
			if i == 4 {
				cancel()
			}
			return nil
		})
		cancelledAt = s.Position()
	})
	wg.Wait()
	if !errors.Is(errCallback, errBoom) {
		t.Errorf("failing callback: %v, want its error", errCallback)
	}
	if err := cbSession.Append(context.Background(), []int{1}); err != nil {
		t.Errorf("a failing callback poisoned its session: %v", err)
	}
	if !errors.Is(errCancel, context.Canceled) || cancelledAt == len(toks[2]) {
		t.Errorf("cancelled call: %v at position %d", errCancel, cancelledAt)
	}
	s := newSession(t, r)
	if want := eachRows(t, s, toks[0]); !sameRows(want, got) {
		t.Errorf("the healthy sequence's logits differ from a lone session's")
	}
}

func TestBatcherCloseFailsQueuedCalls(t *testing.T) {
	_, r := newBatchFake(t, mixed, true)
	b := newBatcher(t, r, BatchOptions{MaxBatch: 2})
	s := newSession(t, r)
	q, _ := b.Join(s)
	appendErr := make(chan error)
	go func() {
		appendErr <- q.AppendEach(context.Background(), []int{1, 2, 3, 4, 5, 6}, func(i int, _ []float32) error {
			if i == 0 {
				b.Close() // the scheduler is idle while callbacks run
			}
			return nil
		})
	}()
	if err := <-appendErr; !errors.Is(err, ErrBatcherClosed) {
		t.Fatalf("append across Close: %v, want ErrBatcherClosed", err)
	}
	if err := s.Append(context.Background(), []int{1}); err != nil {
		t.Errorf("the session is unusable after its Batcher closed: %v", err)
	}
}

func TestBatcherRunsQueuedStepsTogether(t *testing.T) {
	bf, r := newBatchFake(t, mixed, true)
	b := newBatcher(t, r, BatchOptions{MaxBatch: 4})
	gate := make(chan struct{})
	bf.mu.Lock()
	bf.gate = gate // the first step blocks until the others are queued
	bf.mu.Unlock()
	var wg sync.WaitGroup
	waitFor := func(what string, ok func(BatchStats) bool) {
		for deadline := time.Now().Add(10 * time.Second); !ok(b.Stats()); time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never happened: %+v", what, b.Stats())
			}
		}
	}
	for i := range 3 {
		s := newSession(t, r)
		q, _ := b.Join(s)
		wg.Go(func() {
			if err := q.Append(context.Background(), []int{1 + i}); err != nil {
				t.Error(err)
			}
		})
		if i == 0 {
			waitFor("the first step", func(st BatchStats) bool { return st.Running == 1 })
		}
	}
	waitFor("two queued steps", func(st BatchStats) bool { return st.Waiting == 2 })
	bf.mu.Lock()
	bf.gate = nil
	bf.mu.Unlock()
	close(gate)
	wg.Wait()
	if got := bf.maxSteps.Load(); got != 2 {
		t.Errorf("the two steps queued behind a running one ran %d together, want 2", got)
	}
}

// TestOneSessionStepsAlternateChunksAndDecodeRows checks the step policy's fairness at
// MaxBatch = 1: while a long prompt's chunk and a running stream's decode row are both
// queued at every step, they take turns, instead of the prompt running to its end first.
func TestOneSessionStepsAlternateChunksAndDecodeRows(t *testing.T) {
	for _, maxBatch := range []int{1, 2} {
		b := &Batcher{opts: BatchOptions{MaxBatch: maxBatch}}
		chunk, row := &Seq{rows: 2}, &Seq{rows: 1}
		var order []string
		for range 6 {
			b.queue = []*Seq{chunk, row}
			if !b.form() {
				t.Fatal("form ran no step with two steps queued")
			}
			var names []string
			for _, q := range b.step {
				names = append(names, map[bool]string{true: "chunk", false: "decode"}[q == chunk])
			}
			order = append(order, strings.Join(names, "+"))
			b.busy = false
		}
		want := []string{"chunk", "decode", "chunk", "decode", "chunk", "decode"}
		if maxBatch == 2 {
			want = []string{"chunk+decode", "chunk+decode", "chunk+decode", "chunk+decode", "chunk+decode", "chunk+decode"}
		}
		if !slices.Equal(order, want) {
			t.Errorf("MaxBatch %d: steps %v, want %v", maxBatch, order, want)
		}
	}
}

// TestPrefillChunkFollowsTheStepBudget checks the sizing of prompt chunks with
// PrefillChunk 0: a prompt with nobody decoding beside it takes whole prefill steps; beside
// a decoding sequence it takes the measured chunk, which shrinks to the rows the budget
// allows when a step overran it and grows while steps stay well under it.
func TestPrefillChunkFollowsTheStepBudget(t *testing.T) {
	big := fakeSpec{C: 400, P: 64, V: 7, W: 3, Layers: []program.LayerType{full, sliding}}
	_, r := newBatchFake(t, big, true)
	b := newBatcher(t, r, BatchOptions{MaxBatch: 4})
	prompt, stream := &Seq{b: b, rows: 64, prefill: true, state: seqQueued}, &Seq{b: b}
	b.mu.Lock()
	b.seqs = []*Seq{prompt, stream}
	b.mu.Unlock()
	if got := prompt.chunkRows(); got != 64 {
		t.Errorf("chunk with nobody decoding: %d rows, want the prefill step (64)", got)
	}
	b.mu.Lock()
	stream.rows, stream.state = 1, seqBetween
	b.mu.Unlock()
	if got := prompt.chunkRows(); got != chunkStart {
		t.Errorf("chunk beside a decoding sequence before any step: %d rows, want %d", got, chunkStart)
	}
	ms := time.Millisecond
	steps := []struct {
		st   StepStats
		want int
	}{
		{StepStats{Rows: 1, Duration: 10 * ms}, chunkStart},           // the decode-only reference: 10 ms
		{StepStats{Rows: 9, PrefillRows: 8, Duration: 20 * ms}, 4},    // over 15 ms: 1.25 ms a row, 5 ms left
		{StepStats{Rows: 5, PrefillRows: 4, Duration: 11 * ms}, 5},    // under 11.25 ms: one more
		{StepStats{Rows: 6, PrefillRows: 5, Duration: 14 * ms}, 5},    // within the budget: kept
		{StepStats{Rows: 6, PrefillRows: 5, Duration: 100 * ms}, 1},   // far over: at least one row
		{StepStats{Rows: 64, PrefillRows: 64, Duration: 100 * ms}, 1}, // a chunk alone says nothing
		{StepStats{Rows: 2, PrefillRows: 1, Duration: 10 * ms}, 2},    // well under: grows again
		{StepStats{Rows: 60, PrefillRows: 59, Duration: 10 * ms}, 64}, // never past the prefill step
		{StepStats{Rows: 3, Duration: 40 * ms}, 64},                   // the reference moves: (3·10+40)/4
		{StepStats{Rows: 65, PrefillRows: 64, Duration: 40 * ms}, 24}, // over 26.25 ms: 22.5 ms / 64 a row, 8.75 ms left
	}
	for i, c := range steps {
		b.mu.Lock()
		b.adapt(c.st)
		got := b.chunk
		b.mu.Unlock()
		if got != c.want {
			t.Fatalf("after step %d %+v: chunk %d, want %d", i, c.st, got, c.want)
		}
	}
	// A larger budget: the 20 ms step beside a 10 ms reference is within 3×, and a step
	// under 3/4 of 30 ms grows the chunk.
	wide := newBatcher(t, r, BatchOptions{MaxBatch: 4, ChunkBudget: 3})
	wide.mu.Lock()
	wide.adapt(StepStats{Rows: 1, Duration: 10 * ms})
	wide.adapt(StepStats{Rows: 9, PrefillRows: 8, Duration: 20 * ms})
	got := wide.chunk
	wide.mu.Unlock()
	if got != 9 {
		t.Errorf("budget 3×: chunk %d after an 8-row step of 2× the decode-only one, want 9", got)
	}
	fixed := newBatcher(t, r, BatchOptions{MaxBatch: 4, PrefillChunk: 3})
	if got := (&Seq{b: fixed}).chunkRows(); got != 3 {
		t.Errorf("PrefillChunk 3: chunk %d rows", got)
	}
	one := newBatcher(t, r, BatchOptions{MaxBatch: 1})
	one.mu.Lock()
	one.seqs = []*Seq{{b: one, rows: 1, state: seqBetween}}
	one.mu.Unlock()
	if got := (&Seq{b: one}).chunkRows(); got != 64 {
		t.Errorf("MaxBatch 1: chunk %d rows, want the prefill step (steps run one at a time)", got)
	}
}
