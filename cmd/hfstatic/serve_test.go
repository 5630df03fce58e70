package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/internal/mmap"
)

// syncBuffer is a bytes.Buffer safe for the command's logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeAnswersAndShutsDownOnCancel(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { testServe(t, "", "stories260K") })
	// A program file is mapped and locked in memory (--mlock, on by default).
	prog := filepath.Join(t.TempDir(), "s.hfs")
	mustRun(t, "export", storiesDir, "-o", prog, "--prefill", "16", "--context", "128", "-q")
	t.Run("file", func(t *testing.T) { testServe(t, prog, "s") })
	// ort_test.go serves on ONNX Runtime (the ort build).
}

func testServe(t *testing.T, prog, modelID string, extra ...string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRoot()
	var logs syncBuffer
	root.SetOut(io.Discard)
	root.SetErr(&logs)
	args := []string{"serve", "--addr", "127.0.0.1:0", "--threads", "1", "--sessions", "2", "--max-batch", "2", "--grace", "1s"}
	args = append(args, extra...)
	if prog != "" {
		args = append(args, prog)
	}
	root.SetArgs(args)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	listening := regexp.MustCompile(`msg=listening addr=(\S+)`)
	var base string
	for deadline := time.Now().Add(30 * time.Second); base == ""; {
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			base = "http://" + m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited early: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not log its address:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"`+modelID+`"`) {
		t.Errorf("GET /v1/models: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"Once upon a time","max_tokens":8,"temperature":0}`))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Choices []struct{ Text string } `json:"choices"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(out.Choices) != 1 || out.Choices[0].Text == "" {
		t.Errorf("POST /v1/completions: %d %+v %v", resp.StatusCode, out, err)
	}
	// The embedded model has no chat template: chat is a client error, not a crash.
	resp, err = http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("chat without a template: %d, want 400", resp.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after cancel")
	}
	if _, err := http.Get(base + "/health"); err == nil {
		t.Error("still serving after shutdown")
	}
	if prog != "" {
		// serve locks the program unless the memory-lock limit refuses; find out which
		// by locking it here too, and check that serve did the same.
		f, err := mmap.Open(prog)
		if err != nil {
			t.Fatal(err)
		}
		lockErr := f.Lock()
		f.Close()
		if said := strings.Contains(logs.String(), notLocked); said != (lockErr != nil) {
			t.Errorf("serve said %q: %v, but locking here gave %v:\n%s", notLocked, said, lockErr, logs.String())
		}
	}
}

func TestServeRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"no sessions", []string{"serve", "--sessions", "0"}},
		{"zero batch", []string{"serve", "--max-batch", "0"}},
		{"negative batch", []string{"serve", "--max-batch", "-2"}},
		{"batch above sessions", []string{"serve", "--sessions", "2", "--max-batch", "3"}},
		{"negative prefill chunk", []string{"serve", "--prefill-chunk", "-1"}},
		{"chunk budget of 1", []string{"serve", "--chunk-budget", "1"}},
		{"negative chunk budget", []string{"serve", "--chunk-budget", "-2"}},
		{"prefill chunk above the prefill step", []string{"serve", "--prefill-chunk", "33", "--addr", "127.0.0.1:0"}},
		{"negative queue", []string{"serve", "--queue", "-1"}},
		{"zero body limit", []string{"serve", "--max-body", "0"}},
		{"memory budget below one session", []string{"serve", "--memory-budget", "1", "--addr", "127.0.0.1:0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot()
			root.SetOut(io.Discard)
			root.SetErr(io.Discard)
			root.SetArgs(tc.args)
			err := root.ExecuteContext(context.Background())
			var ue usageError
			if !errors.As(err, &ue) {
				t.Errorf("error %v, want a usage error", err)
			}
		})
	}
}

// serve shows the chat page at / unless --no-ui.
func TestServeChatPage(t *testing.T) {
	base, stop := startServe(t, "serve", "--threads", "1")
	code, body := httpGet(t, base+"/")
	if code != http.StatusOK || !strings.Contains(body, `aria-label="Message"`) {
		t.Errorf("GET /: %d %.200s", code, body)
	}
	stop()
	base, _ = startServe(t, "serve", "--threads", "1", "--no-ui")
	if code, body := httpGet(t, base+"/"); code != http.StatusNotFound || !strings.Contains(body, "unknown_url") {
		t.Errorf("GET / with --no-ui: %d %.200s", code, body)
	}
}

// serve's grammar flags reach the server: --grammar-states small enough
// refuses a grammar that fits the default with a 400 naming the limit, and
// --grammar-memory below one compile is a usage-time error naming the flag.
func TestServeGrammarLimitFlags(t *testing.T) {
	req := `{"prompt":"Once upon a time","max_tokens":3,"grammar":"root ::= (\"yes\" | \"no\") \", \" [a-z]{2,6}"}`
	base, stop := startServe(t, "serve", "--threads", "1")
	if code, body := httpPost(t, base+"/v1/completions", req); code != http.StatusOK {
		t.Errorf("a small grammar with the default limits: %d %.300s", code, body)
	}
	stop()
	base, _ = startServe(t, "serve", "--threads", "1", "--grammar-states", "4")
	if code, body := httpPost(t, base+"/v1/completions", req); code != http.StatusBadRequest || !strings.Contains(body, "grammar_too_large") || !strings.Contains(body, "MaxStates") {
		t.Errorf("the same grammar with --grammar-states 4: %d %.300s, want 400 naming the limit", code, body)
	}
	if _, _, err := run(t, "", "serve", "--grammar-memory", "1", "--addr", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "--grammar-memory 1,") {
		t.Errorf("serve --grammar-memory 1: %v, want an error naming --grammar-memory and its value", err)
	}
}
