//go:build ort

package ort_test

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/ort"
	"github.com/hfstatic/hfstatic/internal/ort/orttest"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// TestBatchedSessionsOnORT: sessions joined to a Batcher on ONNX Runtime (the executor's
// RunBatch runs their decode steps together in the batched decode graphs) get the logits
// they get alone, within the parity tolerances: prompts of every length through the
// prefill graph, then one-token steps, sessions that start late and leave early, batches
// of 2 to 6 in graphs of 2, 4 and 8 slots (idle slots included), ring caches that wrap.
func TestBatchedSessionsOnORT(t *testing.T) {
	lib, err := ort.Open(orttest.LibPath(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		source   func() (fs.FS, error)
		opts     export.Options
		tol      float64 // largest |logit difference| (f32 weights)
		maxBatch int
		mode     ort.BatchMode
	}{
		// f16 caches: a value on the other side of a binary16 rounding boundary (float
		// weights are multiplied unpacked, with one kernel for one row and another for
		// several) moves a logit by about 1e-3, as in TestLogitsMatchGoExecutor
		{"stories260K/f16-cache", stories, export.Options{Context: 48, Prefill: 8, CacheDType: program.F16, Weights: "f32"}, 2e-3, 4, ort.BatchEager},
		{"gemma3/ring", random("gemma3"), export.Options{Context: 40, Prefill: 8, CacheDType: program.F32, Weights: "f32"}, 1e-4, 8, ort.BatchEager},
		{"stories260K/q4", stories, export.Options{Context: 48, Prefill: 8, CacheDType: program.F32, Weights: "q4"}, 1e-3, 6, ort.BatchEager},
		// the default: the batched graphs get their sessions in the background at the
		// first batched step, which runs its sessions one by one meanwhile
		{"stories260K/lazy", stories, export.Options{Context: 48, Prefill: 8, CacheDType: program.F32, Weights: "f32"}, 1e-4, 4, ort.BatchLazy},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := exportONNX(t, "batch/"+c.name, c.source, c.opts)
			f, err := program.Decode(data, program.DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			x, err := ort.New(lib, f, ort.Options{Threads: 2, Batch: c.mode})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if got := x.BatchStats().Graphs; (c.mode == ort.BatchEager) != (len(got) == 3) {
				t.Fatalf("batched graphs after New: %v", got)
			}
			r, err := runner.New(&f.Manifest, f.Fingerprint, x, runner.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var shared, slots atomic.Int64
			b, err := runner.NewBatcher(r, runner.BatchOptions{MaxBatch: c.maxBatch, OnStep: func(st runner.StepStats) {
				if st.Sessions > 1 {
					shared.Add(1)
					slots.Add(int64(st.Sessions))
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if !b.Batched() {
				t.Fatal("the ORT executor lacks the batch capability")
			}
			C, V := r.Planner().Context, r.Metadata().VocabSize
			rng := rand.New(rand.NewPCG(7, uint64(c.maxBatch)))
			const N = 6
			scripts := make([][][]int, N)
			for i := range scripts {
				n := 1 + rng.IntN(C/3)
				calls := [][]int{tokens(n, V, i)}
				for pos := n; pos < C-1 && len(calls) < 10+i; pos++ {
					calls = append(calls, []int{rng.IntN(V)})
				}
				scripts[i] = calls
			}
			play := func(s *runner.Session, calls [][]int, app func(context.Context, []int) error) ([][]float32, error) {
				var out [][]float32
				for _, toks := range calls {
					if err := app(context.Background(), toks); err != nil {
						return out, fmt.Errorf("%d tokens at %d: %w", len(toks), s.Position(), err)
					}
					out = append(out, slices.Clone(s.Logits().View()))
				}
				return out, nil
			}
			got := make([][][]float32, N)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range N {
				s := newSession(t, r)
				q, err := b.Join(s)
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					<-start
					var err error
					if got[i], err = play(s, scripts[i], q.Append); err != nil {
						t.Errorf("session %d: %v", i, err)
					}
					q.Leave()
				})
			}
			close(start)
			wg.Wait()
			var worst float64
			for i := range N {
				s := newSession(t, r)
				want, err := play(s, scripts[i], s.Append)
				if err != nil {
					t.Fatal(err)
				}
				for j := range want {
					d := maxDiff(want[j], got[i][j])
					worst = max(worst, d)
					if d > c.tol || math.IsNaN(d) {
						t.Errorf("session %d call %d: batched logits differ from alone by %g (tolerance %g)", i, j, d, c.tol)
						break
					}
					if argmax(want[j]) != argmax(got[i][j]) {
						t.Errorf("session %d call %d: argmax %d batched, %d alone", i, j, argmax(got[i][j]), argmax(want[j]))
					}
				}
			}
			if shared.Load() == 0 {
				t.Error("no step ran two sessions together")
			}
			bs := x.BatchStats()
			for deadline := time.Now().Add(time.Minute); c.mode == ort.BatchLazy && len(bs.Graphs) < 3 && bs.Err == nil && time.Now().Before(deadline); bs = x.BatchStats() {
				time.Sleep(10 * time.Millisecond)
			}
			if len(bs.Graphs) != 3 {
				t.Errorf("batched graphs %v after the batched steps, want [2 4 8]", bs.Graphs)
			}
			if bs.Err != nil || bs.Sessions < 2*bs.Runs || (bs.Runs == 0 && c.mode == ort.BatchEager) {
				t.Errorf("batched graph runs %+v, want some, each of ≥ 2 sessions", bs)
			}
			t.Logf("%d steps, %d shared (%.1f sessions each), %d batched graph runs (%d sessions in %d slots); largest difference from alone %.3g",
				b.Stats().Steps, shared.Load(), float64(slots.Load())/float64(max(1, shared.Load())), bs.Runs, bs.Sessions, bs.Slots, worst)
		})
	}
}

// A program exported before the batched graphs (graph version 1) still runs batched steps:
// one by one, with the logits they get alone.
func TestBatchedStepsWithoutBatchGraphs(t *testing.T) {
	lib, err := ort.Open(orttest.LibPath(t))
	if err != nil {
		t.Fatal(err)
	}
	data := exportONNX(t, "stories260K/prefill=7", stories, export.Options{Context: 32, Prefill: 7, CacheDType: program.F32, Weights: "f32"})
	f, err := program.Decode(data, program.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x, err := ort.New(lib, f, ort.Options{Threads: 1, Payload: func(f *program.File) (*ort.Payload, error) {
		p, err := ort.ReadPayload(f)
		if err == nil {
			p.Batches = nil
		}
		return p, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	r, err := runner.New(&f.Manifest, f.Fingerprint, x, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := runner.NewBatcher(r, runner.BatchOptions{MaxBatch: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	V := r.Metadata().VocabSize
	var wg sync.WaitGroup
	got := make([][]float32, 3)
	for i := range 3 {
		q, err := b.Join(newSession(t, r))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for j := range 6 {
				if err := q.Append(context.Background(), tokens(1+j%2, V, i+j)); err != nil {
					t.Error(err)
					return
				}
			}
			got[i] = slices.Clone(q.Session().Logits().View())
		})
	}
	wg.Wait()
	for i := range 3 {
		s := newSession(t, r)
		for j := range 6 {
			appendTokens(t, s, tokens(1+j%2, V, i+j))
		}
		// The batcher may run a two-token append as two decode steps where the lone
		// session ran the prefill graph (it depends on what else is in the step), and
		// ONNX Runtime's two graphs round differently (a full run once differed by 5.7e-6).
		if d := maxDiff(s.Logits().View(), got[i]); d > 1e-4 {
			t.Errorf("session %d: logits differ by %g from alone, more than 1e-4", i, d)
		}
	}
	if bs := x.BatchStats(); bs.Runs != 0 {
		t.Errorf("%d runs of batched graphs the program does not have", bs.Runs)
	}
}
