package server

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	loadDuration = flag.Duration("load-duration", 3*time.Second, "how long TestLoad runs (the report's figures use 30s)")
	loadStreams  = flag.Int("load-streams", 16, "concurrent streams in TestLoad")
)

// loadResult is one streamed request of the load test.
type loadResult struct {
	latency, firstText time.Duration
	tokens             int
	err                error
}

// streamOnce sends one streamed completion and reads it to the end.
func streamOnce(ctx context.Context, client *http.Client, base, prompt string, seed int) loadResult {
	body := fmt.Sprintf(`{"prompt":%q,"max_tokens":64,"temperature":0.8,"seed":%d,"stream":true,"stream_options":{"include_usage":true}}`, prompt, seed)
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(body))
	resp, err := client.Do(req)
	if err != nil {
		return loadResult{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return loadResult{err: fmt.Errorf("status %d", resp.StatusCode)}
	}
	var r loadResult
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c completionBody
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return loadResult{err: fmt.Errorf("event %q: %v", data, err)}
		}
		if c.Usage != nil {
			r.tokens = c.Usage.CompletionTokens
		} else if r.firstText == 0 && len(c.Choices) > 0 && c.Choices[0].Text != "" {
			r.firstText = time.Since(start)
		}
	}
	if err := sc.Err(); err != nil {
		return loadResult{err: err}
	}
	if !done {
		return loadResult{err: fmt.Errorf("stream ended without [DONE]")}
	}
	r.latency = time.Since(start)
	return r
}

// runLoad keeps streams concurrent streams busy until ctx ends.
func runLoad(ctx context.Context, client *http.Client, base string, streams int) []loadResult {
	prompts := []string{"Once upon a time", "Once upon a time, there was a little girl", "The dog", "Lily and Ben went to the park"}
	var (
		mu  sync.Mutex
		all []loadResult
		wg  sync.WaitGroup
	)
	for w := range streams {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				r := streamOnce(context.Background(), client, base, prompts[(w+i)%len(prompts)], w*1000+i)
				mu.Lock()
				all = append(all, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return all
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func TestLoadStreamsWithoutErrorsOrLeaks(t *testing.T) {
	_, base, pool := startServer(t, func(o *Options) { o.MaxSessions, o.MaxQueue = 4, 64 })
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *loadStreams}}

	// Warm up: fill the pool and the connection cache, then take the baselines.
	warm, cancelWarm := context.WithTimeout(context.Background(), 300*time.Millisecond)
	runLoad(warm, client, base, *loadStreams)
	cancelWarm()
	client.CloseIdleConnections()
	waitFor(t, func() bool { return pool.Stats().Leased == 0 })
	goroutines := runtime.NumGoroutine()
	heap := heapAfterGC()

	ctx, cancel := context.WithTimeout(context.Background(), *loadDuration)
	start := time.Now()
	results := runLoad(ctx, client, base, *loadStreams)
	elapsed := time.Since(start)
	cancel()

	var lat, first []time.Duration
	tokens, errs := 0, 0
	for _, r := range results {
		if r.err != nil {
			if errs < 5 {
				t.Errorf("request failed: %v", r.err)
			}
			errs++
			continue
		}
		lat = append(lat, r.latency)
		first = append(first, r.firstText)
		tokens += r.tokens
	}
	if errs > 0 || len(lat) == 0 {
		t.Fatalf("%d of %d requests failed", errs, len(results))
	}
	slices.Sort(lat)
	slices.Sort(first)
	pct := func(d []time.Duration, p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	st := pool.Stats()
	t.Logf("%d streams for %v: %d requests, %.1f requests/s, %.0f tokens/s; latency p50 %v p99 %v; first text p50 %v p99 %v; prefix hits %d misses %d reused tokens %d",
		*loadStreams, elapsed.Round(time.Millisecond), len(lat), float64(len(lat))/elapsed.Seconds(), float64(tokens)/elapsed.Seconds(),
		pct(lat, 0.5).Round(time.Microsecond), pct(lat, 0.99).Round(time.Microsecond),
		pct(first, 0.5).Round(time.Microsecond), pct(first, 0.99).Round(time.Microsecond), st.Hits, st.Misses, st.ReusedTokens)

	// Afterwards nothing is left running and the heap is back where it was.
	client.CloseIdleConnections()
	waitFor(t, func() bool { return pool.Stats().Leased == 0 && runtime.NumGoroutine() <= goroutines })
	if st.Sessions > 4 {
		t.Errorf("pool holds %d sessions, want ≤ 4", st.Sessions)
	}
	const slack = 4 << 20
	if after := heapAfterGC(); after > heap+slack {
		t.Errorf("heap grew from %d to %d bytes after the load", heap, after)
	}
	if v := metricValue(t, base, "hfstatic_generations_running"); v != 0 {
		t.Errorf("%v generations still running", v)
	}
	if v := metricValue(t, base, "hfstatic_queue_waiting"); v != 0 {
		t.Errorf("%v requests still queued", v)
	}
}
