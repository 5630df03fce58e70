package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// batchCall is one call of a session's script.
type batchCall struct {
	toks []int
	each bool // AppendEach (every row's logits), else Append
}

// batchScript is a prompt of random length, then mostly one-token calls, up to C.
func batchScript(rng *rand.Rand, C, V int) []batchCall {
	tokens := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = rng.IntN(V)
		}
		return out
	}
	prompt := 1 + rng.IntN(C/2)
	calls := []batchCall{{toks: tokens(prompt), each: rng.IntN(2) == 0}}
	for pos := prompt; pos < C && rng.IntN(10) != 0; {
		n := 1
		if rng.IntN(4) == 0 {
			n = min(C-pos, 1+rng.IntN(6))
		}
		calls = append(calls, batchCall{toks: tokens(n), each: rng.IntN(4) != 0})
		pos += n
	}
	return calls
}

// playScript runs calls through call and returns every logits row AppendEach passed and
// the logits after each call.
func playScript(s *runner.Session, calls []batchCall, call func(context.Context, []int, func(int, []float32) error) error) ([][]float32, error) {
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
			return rows, fmt.Errorf("%d tokens at position %d: %w", len(c.toks), s.Position(), err)
		}
		rows = append(rows, slices.Clone(s.Logits().View()))
	}
	return rows, nil
}

// Sessions that join a Batcher at random times, with prompts of every length and mostly
// one-token steps, get bit for bit the logits they get alone: q8/q4/f32 weights, f32 and
// f16 caches, ring caches that wrap (Gemma 3, window 4), every row's or the last row's
// logits, chunked prefill.
func TestBatchedSessionsEqualLoneSessions(t *testing.T) {
	stories := func(weights string, cache program.DType, logits program.LogitsRows) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			return exporttest.Program(t, models.Stories260K(), export.Options{Context: 48, Prefill: 8, Weights: weights, CacheDType: cache, PrefillLogits: logits})
		}
	}
	gemma3 := func(cache program.DType) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			fsys, err := testckpt.Random("gemma3")
			if err != nil {
				t.Fatal(err)
			}
			return exporttest.Program(t, fsys, export.Options{Context: 40, Prefill: 8, PrefillLogits: program.LogitsAll, CacheDType: cache, SlidingLayout: program.LayoutRing})
		}
	}
	experts := func(name, weights string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			fsys, err := testckpt.Random(name)
			if err != nil {
				t.Fatal(err)
			}
			return exporttest.Program(t, fsys, export.Options{Context: 40, Prefill: 8, Weights: weights, PrefillLogits: program.LogitsAll, CacheDType: program.F32})
		}
	}
	for _, tc := range []struct {
		name     string
		program  func(t *testing.T) []byte
		maxBatch int
		chunk    int
	}{
		{"stories/q8/f32-cache", stories("q8", program.F32, program.LogitsAll), 4, 0},
		{"stories/q4/f16-cache", stories("q4", program.F16, program.LogitsAll), 8, 3},
		{"stories/f32/f16-cache/last-logits", stories("f32", program.F16, program.LogitsLast), 3, 0},
		{"gemma3-ring/f32-cache", gemma3(program.F32), 4, 5},
		{"gemma3-ring/f16-cache", gemma3(program.F16), 8, 0},
		{"qwen3moe/q8", experts("qwen3moe", "q8"), 4, 3},
		{"mixtral/q4", experts("mixtral", "q4"), 8, 0},
		{"mixtral/f32", experts("mixtral", "f32"), 4, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := loadModel(t, tc.program(t), 2)
			r := m.Runner
			var shared atomic.Int64
			b, err := runner.NewBatcher(r, runner.BatchOptions{MaxBatch: tc.maxBatch, PrefillChunk: tc.chunk,
				OnStep: func(st runner.StepStats) {
					if st.Sessions > 1 {
						shared.Add(1)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if !b.Batched() {
				t.Fatal("the engine's executor lacks the batch capability")
			}
			rng := rand.New(rand.NewPCG(uint64(len(tc.name)), uint64(tc.maxBatch)))
			const N = 6
			C, V := r.Planner().Context, r.Metadata().VocabSize
			scripts := make([][]batchCall, N)
			for i := range scripts {
				scripts[i] = batchScript(rng, C, V)
			}
			got := make([][][]float32, N)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range N {
				s, err := r.NewSession()
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				q, err := b.Join(s)
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					<-start
					for range i % 3 { // start late: join a running batch
						q.Append(context.Background(), nil) // refused (empty), changes nothing
					}
					var err error
					if got[i], err = playScript(s, scripts[i], q.AppendEach); err != nil {
						t.Errorf("session %d: %v", i, err)
					}
					q.Leave()
				})
			}
			close(start)
			wg.Wait()
			for i := range N {
				s, err := r.NewSession()
				if err != nil {
					t.Fatal(err)
				}
				want, err := playScript(s, scripts[i], s.AppendEach)
				s.Close()
				if err != nil {
					t.Fatal(err)
				}
				if len(want) != len(got[i]) {
					t.Fatalf("session %d: %d rows batched, %d alone", i, len(got[i]), len(want))
				}
				for j := range want {
					if !slices.Equal(want[j], got[i][j]) {
						d, _ := maxAbsDiff(want[j:j+1], got[i][j:j+1])
						t.Errorf("session %d row %d: batched logits differ from alone (max |diff| %g)", i, j, d)
						break
					}
				}
			}
			if shared.Load() == 0 {
				t.Errorf("no step ran two sessions together")
			}
			t.Logf("%d steps, %d shared", b.Stats().Steps, shared.Load())
		})
	}
}
