package server

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/runner"
)

// The continuous-batching measurement (docs/performance.md) runs this test on a program of
// a real shape, e.g.
//
//	go test -count=1 -run BatchingLoad -v ./server -args -batch-program=q8.hfs \
//	    -batch-threads=2 -batch-sessions=8 -batch-duration=30s
//
// Without -batch-program it runs briefly on the embedded test model. Prompts are token ids
// below the test tokenizer's vocabulary, which also decodes the output; tokens are sampled
// below it too (a program's own tokenizer is not needed).
var (
	batchProgram  = flag.String("batch-program", "", "program file for TestBatchingLoad (default: the embedded test model)")
	batchThreads  = flag.Int("batch-threads", 1, "executor threads for -batch-program")
	batchSessions = flag.Int("batch-sessions", 4, "sessions (and most streams in one batch) in TestBatchingLoad")
	batchChunk    = flag.Int("batch-prefill-chunk", 0, "PrefillChunk in TestBatchingLoad (0: sized step by step by the batcher)")
	batchBudget   = flag.Float64("batch-chunk-budget", 0, "ChunkBudget in TestBatchingLoad (0: the default)")
	batchDuration = flag.Duration("batch-duration", 500*time.Millisecond, "how long each throughput phase of TestBatchingLoad runs")
	batchRounds   = flag.Int("batch-rounds", 1, "alternating rounds of each phase in TestBatchingLoad (medians are reported)")
)

// batchLoadRunner is the runner TestBatchingLoad serves: -batch-program's or the test model's.
func batchLoadRunner(t *testing.T) *runner.Runner {
	if *batchProgram == "" {
		return loadTestModel(t).Runner
	}
	f, err := os.Open(*batchProgram)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data, err := runner.HeapAllocator{}.Alloc(int(fi.Size())) // 64-byte aligned
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(f, data); err != nil {
		t.Fatal(err)
	}
	m, err := engine.Load(data, engine.Options{Threads: *batchThreads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m.Runner
}

// idPrompt is n token ids from seed, each in [3, vocab) (past the special ids).
func idPrompt(seed uint64, n, vocab int) []int {
	rng := rand.New(rand.NewPCG(seed, 7))
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 3 + rng.IntN(vocab-3)
	}
	return ids
}

// completeIDs sends a non-streamed greedy completion of prompt ids and returns the tokens
// it generated.
func completeIDs(client *http.Client, base string, prompt []int, maxTokens int) (int, error) {
	ids := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(prompt)), ","), "[]")
	body := fmt.Sprintf(`{"prompt":[%s],"max_tokens":%d,"temperature":0}`, ids, maxTokens)
	resp, err := client.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, data)
	}
	var c completionBody
	if err := json.Unmarshal(data, &c); err != nil {
		return 0, err
	}
	if c.Usage == nil {
		return 0, fmt.Errorf("no usage in %s", data)
	}
	return c.Usage.CompletionTokens, nil
}

// tokenClock records, per request context, when each token was generated.
type tokenClock struct {
	mu    sync.Mutex
	times map[context.Context][]time.Time
}

func (c *tokenClock) hook(ctx context.Context) {
	now := time.Now()
	c.mu.Lock()
	c.times[ctx] = append(c.times[ctx], now)
	c.mu.Unlock()
}

// gaps returns every gap between two consecutive tokens of one request, and resets.
func (c *tokenClock) gaps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, ts := range c.times {
		for i := 1; i < len(ts); i++ {
			out = append(out, ts[i].Sub(ts[i-1]))
		}
	}
	clear(c.times)
	return out
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func TestBatchingLoad(t *testing.T) {
	r := batchLoadRunner(t)
	sessions := *batchSessions
	s, base, _ := startServer(t, func(o *Options) {
		o.Runner, o.MaxSessions, o.MaxBatch, o.PrefillChunk, o.ChunkBudget, o.MaxQueue = r, sessions, sessions, *batchChunk, *batchBudget, 64
	})
	vocab := min(s.o.Tokenizer.VocabSize(), r.Metadata().VocabSize)
	promptLen, genLen, longLen := 114, 64, 400
	if c := r.Planner().Context; c < longLen+2 {
		promptLen, genLen, longLen = c/4, c/8, c/2
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * sessions}}
	defer client.CloseIdleConnections()

	// Throughput: completion tokens per second of n streams, each sending request after
	// request of a fresh promptLen-token prompt and genLen new tokens.
	throughput := func(n int) float64 {
		ctx, cancel := context.WithTimeout(context.Background(), *batchDuration)
		defer cancel()
		var (
			mu     sync.Mutex
			tokens int
			wg     sync.WaitGroup
		)
		start := time.Now()
		for w := range n {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					got, err := completeIDs(client, base, idPrompt(uint64(w*100000+i), promptLen, vocab), genLen)
					if err != nil {
						t.Errorf("stream %d request %d: %v", w, i, err)
						return
					}
					mu.Lock()
					tokens += got
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return float64(tokens) / time.Since(start).Seconds()
	}
	var ones, manys []float64
	for range *batchRounds {
		ones = append(ones, throughput(1))
		manys = append(manys, throughput(sessions))
	}
	one, many := medianOf(ones), medianOf(manys)
	t.Logf("completion tokens/s: 1 stream %.1f, %d streams %.1f (%.2f×); prompt %d, generated %d tokens per request; medians of %d alternating rounds: %.1f / %.1f",
		one, sessions, many, many/one, promptLen, genLen, *batchRounds, ones, manys)

	// Token gaps of one running stream, alone and while another client's long prompts are
	// prefilled one after another.
	clock := &tokenClock{times: map[context.Context][]time.Time{}}
	s.setTokenHook(clock.hook)
	stream := func() {
		if _, err := completeIDs(client, base, idPrompt(1, promptLen, vocab), genLen); err != nil {
			t.Errorf("stream: %v", err)
		}
	}
	var alone, loaded []time.Duration
	for round := range *batchRounds {
		stream()
		alone = append(alone, clock.gaps()...)
		stop := make(chan struct{})
		var prefills sync.WaitGroup
		prefills.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := completeIDs(client, base, idPrompt(uint64(900000+1000*round+i), longLen, vocab), 1); err != nil {
					t.Errorf("long prompt: %v", err)
					return
				}
			}
		})
		time.Sleep(10 * time.Millisecond) // let the first long prompt start
		stream()
		close(stop)
		prefills.Wait()
		loaded = append(loaded, clock.gaps()...)
	}
	if len(alone) == 0 || len(loaded) == 0 {
		t.Fatalf("no token gaps recorded (alone %d, loaded %d)", len(alone), len(loaded))
	}
	pa, pl := percentile(alone, 0.99), percentile(loaded, 0.99)
	t.Logf("gap between two tokens of a stream: alone p50 %v p99 %v; beside %d-token prompts p50 %v p99 %v (p99 %.2f×)",
		percentile(alone, 0.5).Round(time.Microsecond), pa.Round(time.Microsecond), longLen,
		percentile(loaded, 0.5).Round(time.Microsecond), pl.Round(time.Microsecond), float64(pl)/float64(pa))
	if one <= 0 || many <= 0 {
		t.Errorf("throughput 1 stream %v, %d streams %v tokens/s, want > 0", one, sessions, many)
	}
}
