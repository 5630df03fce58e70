package server

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/runner"
)

// gatedPool holds every Acquire until gate is closed, so a test can keep generation slots
// busy; entered receives one value per Acquire that started waiting.
type gatedPool struct {
	SessionPool
	gate    chan struct{}
	entered chan struct{}
}

func (g gatedPool) Acquire(ctx context.Context, tokens []int) (Lease, error) {
	g.entered <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.SessionPool.Acquire(ctx, tokens)
}

func newGatedPool(t *testing.T, o Options) gatedPool {
	t.Helper()
	pool, err := runner.NewPool(o.Runner, runner.PoolOptions{MaxSessions: o.MaxSessions, MemoryBudget: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return gatedPool{SessionPool: RunnerPool(pool), gate: make(chan struct{}), entered: make(chan struct{}, 16)}
}

func TestOverloadGets429Or503WithRetryAfter(t *testing.T) {
	tests := []struct {
		name         string
		queue        int
		queueTimeout time.Duration
		status       int
		code         string
	}{
		{"queue full", 0, time.Minute, http.StatusTooManyRequests, "queue_full"},
		{"waited too long", 1, 50 * time.Millisecond, http.StatusServiceUnavailable, "queue_timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var gp gatedPool
			_, base, _ := startServer(t, func(o *Options) {
				o.MaxSessions, o.MaxQueue, o.QueueTimeout = 1, tc.queue, tc.queueTimeout
				gp = newGatedPool(t, *o)
				o.Pool = gp
			})
			busy := make(chan int)
			go func() {
				code, _, _ := post(t, base+"/v1/completions", `{"prompt":"a","max_tokens":2}`)
				busy <- code
			}()
			<-gp.entered // the first request holds the only slot
			code, h, body := post(t, base+"/v1/completions", `{"prompt":"b","max_tokens":2}`)
			if code != tc.status || !strings.Contains(string(body), tc.code) {
				t.Errorf("second request: %d %s, want %d %s", code, body, tc.status, tc.code)
			}
			if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 {
				t.Errorf("Retry-After = %q, want whole seconds ≥ 1", h.Get("Retry-After"))
			}
			close(gp.gate)
			if code := <-busy; code != http.StatusOK {
				t.Errorf("first request: %d, want 200", code)
			}
			if v := metricValue(t, base, `hfstatic_rejected_requests_total{reason="`+tc.code+`"}`); v != 1 {
				t.Errorf("rejected{%s} = %v, want 1", tc.code, v)
			}
		})
	}
}

func TestClientDisconnectCancelsGenerationAndFreesTheSession(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			s, base, pool := startServer(t, func(o *Options) { o.MaxSessions = 1 })
			firstToken := make(chan struct{})
			var once sync.Once
			s.setTokenHook(func(ctx context.Context) {
				once.Do(func() {
					close(firstToken)
					<-ctx.Done() // hold the generation until the server sees the client leave
				})
			})
			ctx, cancel := context.WithCancel(context.Background())
			body := `{"prompt":"Once upon a time","max_tokens":400,"temperature":0,"stream":` + strconv.FormatBool(stream) + `}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(body))
			done := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				done <- err
			}()
			<-firstToken
			cancel()
			if err := <-done; err == nil {
				t.Fatal("the cancelled request succeeded")
			}
			waitFor(t, func() bool { return pool.Stats().Leased == 0 })
			if got := metricValue(t, base, "hfstatic_completion_tokens_total"); got < 1 || got > 2 {
				t.Errorf("completion tokens after the disconnect = %v, want 1 or 2 (generation cancelled)", got)
			}
			code, _, resp := post(t, base+"/v1/completions", `{"prompt":"Once","max_tokens":4}`)
			if code != http.StatusOK {
				t.Errorf("next request: %d %s", code, resp)
			}
		})
	}
}

func TestRequestTimeoutGets504(t *testing.T) {
	s, base, pool := startServer(t, func(o *Options) { o.RequestTimeout = 50 * time.Millisecond })
	s.setTokenHook(func(ctx context.Context) { <-ctx.Done() })
	code, _, body := post(t, base+"/v1/completions", `{"prompt":"Once","max_tokens":50}`)
	if code != http.StatusGatewayTimeout || !strings.Contains(string(body), `"timeout"`) {
		t.Errorf("%d %s, want 504 timeout", code, body)
	}
	if st := pool.Stats(); st.Leased != 0 {
		t.Errorf("%d sessions still leased", st.Leased)
	}
}

func TestOversizedChunkedBodyGets413(t *testing.T) {
	_, base, _ := startServer(t, func(o *Options) { o.MaxBodyBytes = 1024 })
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"prompt":"`))
		chunk := []byte(strings.Repeat("a", 4096))
		for range 512 { // 2 MB, sent without a Content-Length
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Write([]byte(`"}`))
		pw.Close()
	}()
	resp, err := http.Post(base+"/v1/completions", "application/json", pr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	pr.CloseWithError(io.ErrClosedPipe)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "request_too_large") {
		t.Errorf("%d %s, want 413", resp.StatusCode, body)
	}
}

func TestServeShutsDownGracefully(t *testing.T) {
	tests := []struct {
		name      string
		holdFor   time.Duration // how long the in-flight generation is held
		wantDone  bool          // the stream ends with [DONE]
		wantUnder time.Duration // Serve returns within
	}{
		{"in-flight request finishes within the grace period", 20 * time.Millisecond, true, 5 * time.Second},
		{"in-flight request is cancelled after the grace period", time.Hour, false, 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t)
			pool, err := runner.NewPool(o.Runner, runner.PoolOptions{MaxSessions: 2, MemoryBudget: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			o.Pool = RunnerPool(pool)
			s, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			firstToken := make(chan struct{})
			var once sync.Once
			s.setTokenHook(func(ctx context.Context) {
				once.Do(func() {
					close(firstToken)
					select {
					case <-time.After(tc.holdFor):
					case <-ctx.Done():
					}
				})
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- s.Serve(ctx, ln, 200*time.Millisecond) }()

			resp, err := http.Post("http://"+ln.Addr().String()+"/v1/completions", "application/json",
				strings.NewReader(`{"prompt":"Once","max_tokens":20,"stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			<-firstToken
			start := time.Now()
			stop()
			body, _ := io.ReadAll(bufio.NewReader(resp.Body))
			resp.Body.Close()
			select {
			case err := <-served:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(tc.wantUnder):
				t.Fatalf("Serve did not return within %v", tc.wantUnder)
			}
			if d := time.Since(start); d > tc.wantUnder {
				t.Errorf("shutdown took %v", d)
			}
			if got := strings.Contains(string(body), "data: [DONE]"); got != tc.wantDone {
				t.Errorf("stream ended with [DONE]: %v, want %v; body %q", got, tc.wantDone, body)
			}
			if st := pool.Stats(); st.Leased != 0 {
				t.Errorf("%d sessions still leased after shutdown", st.Leased)
			}
			if st := s.batch.Stats(); st.Running != 0 {
				t.Errorf("batch after shutdown: %+v, want drained", st)
			}
			if _, err := http.Get("http://" + ln.Addr().String() + "/health"); err == nil {
				t.Error("the server still answers after shutdown")
			}
		})
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *Server) setTokenHook(f func(ctx context.Context)) { s.tokenHook.Store(&f) }
