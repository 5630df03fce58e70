package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/internal/chat"
	"github.com/hfstatic/hfstatic/runner"
)

// serveOn runs s.Serve on a loopback listener until the test ends.
func serveOn(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestSlowBodiesAreBounded is the regression test for 60 connections each
// trickling a large body (RSS grew by 1.1 GB and stayed up): bodies in
// flight are capped, trickling clients time out, and once they are gone
// the heap and the goroutines return to their baseline.
func TestSlowBodiesAreBounded(t *testing.T) {
	o := testOptions(t)
	o.MaxBodyBytes = 8 << 20
	o.Limits = Limits{MaxConns: 32, MaxBodyInFlight: 24 << 20, BodyTimeout: time.Second, HeaderTimeout: time.Second}
	s := newTestServer(t, o)
	addr := serveOn(t, s)

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	baseG := runtime.NumGoroutine()
	debug.FreeOSMemory()
	baseRSS := vmRSS(t)

	var peak, peakRSS atomic.Uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			if r := vmRSS(t); r > peakRSS.Load() {
				peakRSS.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})

	const clients = 60
	statuses := make([]string, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				statuses[i] = "dial: " + err.Error()
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 8<<20)
			// Trickle 1 MiB in 64 KiB pieces, then stall.
			chunk := []byte(strings.Repeat(" ", 64<<10))
			for range 16 {
				if _, err := c.Write(chunk); err != nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				statuses[i] = "read: " + err.Error()
				return
			}
			io.Copy(io.Discard, resp.Body)
			statuses[i] = resp.Status
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()

	counts := map[string]int{}
	for _, st := range statuses {
		counts[st]++
	}
	if counts["503 Service Unavailable"] == 0 || counts["400 Bad Request"] == 0 {
		t.Errorf("statuses %v: want some refused before reading (503) and the rest timed out (400)", counts)
	}
	if grew := int64(peak.Load()) - int64(base.HeapInuse); grew > 64<<20 {
		t.Errorf("heap in use grew by %d MiB during the attack, want < 64", grew>>20)
	}
	if grew := int64(peakRSS.Load()) - int64(baseRSS); baseRSS > 0 && grew > 128<<20 {
		t.Errorf("RSS grew by %d MiB during the attack, want < 128 (it grew by 1.1 GB before the limits)", grew>>20)
	}
	// Memory and goroutines return to the baseline once the clients are gone.
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		g := runtime.NumGoroutine()
		heapBack := int64(m.HeapInuse)-int64(base.HeapInuse) < 8<<20
		debug.FreeOSMemory()
		rss := vmRSS(t)
		rssBack := baseRSS == 0 || int64(rss)-int64(baseRSS) < 32<<20
		if heapBack && rssBack && g <= baseG+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the attack: heap in use %d MiB over baseline, RSS %d MiB over, %d goroutines (baseline %d)",
				(int64(m.HeapInuse)-int64(base.HeapInuse))>>20, (int64(rss)-int64(baseRSS))>>20, g, baseG)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSpinningTemplateIsBounded: a template that loops for minutes answers
// 400 naming the budget it hit, within seconds.
func TestSpinningTemplateIsBounded(t *testing.T) {
	o := testOptions(t)
	tmpl, err := chat.Parse("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
	if err != nil {
		t.Fatal(err)
	}
	o.Template = tmpl
	o.Limits.Template = chat.Budget{MaxSteps: 100_000, Timeout: time.Second}
	s := newTestServer(t, o)
	addr := serveOn(t, s)
	start := time.Now()
	status, _, body := post(t, "http://"+addr+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`)
	if status != http.StatusBadRequest || !strings.Contains(string(body), "steps budget") {
		t.Errorf("status %d %s, want 400 naming the steps budget", status, body)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

func TestRepetitionPenaltyZeroIsRefused(t *testing.T) {
	_, base, _ := startServer(t, nil)
	status, _, body := post(t, base+"/v1/completions", `{"prompt":"Once","max_tokens":2,"repetition_penalty":0}`)
	if status != http.StatusBadRequest || !strings.Contains(string(body), "repetition_penalty") {
		t.Errorf("status %d %s, want 400 naming repetition_penalty", status, body)
	}
}

// newTestServer builds a server of o with its own pool, closed with the test.
func newTestServer(t *testing.T, o Options) *Server {
	t.Helper()
	pool, err := runner.NewPool(o.Runner, runner.PoolOptions{MaxSessions: o.MaxSessions, MemoryBudget: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	o.Pool = RunnerPool(pool)
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		pool.Close()
	})
	return s
}

// vmRSS returns the process's resident set size from /proc/self/status (0 where /proc is
// not available: the RSS checks are then left out, the heap checks remain).
func vmRSS(t testing.TB) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	return 0
}

// TestLongPromptsStopEncodingAtTheContext is the regression test for prompts that cost far
// more to tokenize than their size: 8 MiB of one character is one word, which took 37 s
// and 1 GB to encode with Qwen3's tokenizer before the server saw that it does not fit the
// context (and its buffers stayed held afterwards). Encoding now stops as soon as the
// prompt cannot fit: a 400 context_length_exceeded within the memory of a few copies of
// the body, and the next request is served.
func TestLongPromptsStopEncodingAtTheContext(t *testing.T) {
	_, base, _ := startServer(t, func(o *Options) { o.MaxBodyBytes = 9 << 20 })
	tmplMsg := func(content string) string {
		return `{"messages":[{"role":"user","content":"` + content + `"}],"max_tokens":1}`
	}
	for _, c := range []struct{ name, path, body string }{
		{"completion of one 8 MiB word", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 8<<20) + `","max_tokens":1}`},
		{"completion of 8 MiB of short words", "/v1/completions", `{"prompt":"` + strings.Repeat("a1 ", 8<<20/3) + `","max_tokens":1}`},
		{"chat message of one 3 MiB word", "/v1/chat/completions", tmplMsg(strings.Repeat("b", 3<<20))},
	} {
		var code int
		var resp []byte
		grew := heapPeak(func() { code, _, resp = post(t, base+c.path, c.body) })
		if code != http.StatusBadRequest || !strings.Contains(string(resp), "context_length_exceeded") {
			t.Errorf("%s: %d %.300s; want 400 context_length_exceeded", c.name, code, resp)
		}
		if max := int64(16 * len(c.body)); grew > max {
			t.Errorf("%s: the heap grew by %d MiB, more than %d MiB", c.name, grew>>20, max>>20)
		}
		t.Logf("%s: heap +%d MiB", c.name, grew>>20)
	}
	if code, _, resp := post(t, base+"/v1/completions", `{"prompt":"Once","max_tokens":2}`); code != 200 {
		t.Errorf("next request: %d %s", code, resp)
	}
}
