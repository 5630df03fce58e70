package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/runner"
)

type errorResponse struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func TestBadRequestsGetOpenAIErrorsAndTheServerStaysHealthy(t *testing.T) {
	_, base, _ := startServer(t, func(o *Options) { o.MaxBodyBytes = 1 << 20 })
	longPrompt := make([]int, 600) // the test program's context is 512
	for i := range longPrompt {
		longPrompt[i] = 100
	}
	longJSON, _ := json.Marshal(map[string]any{"prompt": longPrompt})
	huge := bytes.Repeat([]byte("a"), 60<<20)
	copy(huge, `{"prompt":"`)
	copy(huge[len(huge)-2:], `"}`)
	chat := "/v1/chat/completions"
	comp := "/v1/completions"
	tests := []struct {
		name, path  string
		body        any // string or []byte
		status      int
		param, code string
	}{
		{"malformed JSON", comp, `{"prompt": "hi",`, 400, "", "invalid_json"},
		{"not JSON at all", comp, `hello`, 400, "", "invalid_json"},
		{"empty body", comp, ``, 400, "", "invalid_json"},
		{"two JSON values", comp, `{"prompt":"a"} {"prompt":"b"}`, 400, "", "invalid_json"},
		{"prompt is a number", comp, `{"prompt":42}`, 400, "prompt", "invalid_type"},
		{"prompt is missing", comp, `{"max_tokens":3}`, 400, "prompt", "missing_required_parameter"},
		{"prompt batch", comp, `{"prompt":["a","b"]}`, 400, "prompt", "unsupported_value"},
		{"token outside the vocabulary", comp, `{"prompt":[1,99999]}`, 400, "prompt", "invalid_value"},
		{"prompt past the context", comp, string(longJSON), 400, "prompt", "context_length_exceeded"},
		{"temperature is a string", comp, `{"prompt":"a","temperature":"hot"}`, 400, "temperature", "invalid_type"},
		{"max_tokens is a float", comp, `{"prompt":"a","max_tokens":1.5}`, 400, "max_tokens", "invalid_type"},
		{"max_tokens zero", comp, `{"prompt":"a","max_tokens":0}`, 400, "max_tokens", "invalid_value"},
		{"negative temperature", comp, `{"prompt":"a","temperature":-1}`, 400, "temperature", "invalid_value"},
		{"top_p above one", comp, `{"prompt":"a","top_p":1.5}`, 400, "top_p", "invalid_value"},
		{"presence penalty out of range", comp, `{"prompt":"a","presence_penalty":3}`, 400, "presence_penalty", "invalid_value"},
		{"unknown field", comp, `{"prompt":"a","max_tokenz":3}`, 400, "max_tokenz", "unknown_parameter"},
		{"n above the limit", comp, `{"prompt":"a","n": 9}`, 400, "n", "invalid_value"},
		{"empty stop", comp, `{"prompt":"a","stop":""}`, 400, "stop", "invalid_value"},
		{"stop is a number", comp, `{"prompt":"a","stop":7}`, 400, "stop", "invalid_type"},
		{"stream_options without stream", comp, `{"prompt":"a","stream_options":{"include_usage":true}}`, 400, "stream_options", "invalid_value"},
		{"60 MB body", comp, huge, 413, "", "request_too_large"},
		{"no messages", chat, `{"messages":[]}`, 400, "messages", "missing_required_parameter"},
		{"message without role", chat, `{"messages":[{"content":"hi"}]}`, 400, "messages[0].role", "invalid_value"},
		{"content is a number", chat, `{"messages":[{"role":"user","content":5}]}`, 400, "messages[0].content", "invalid_type"},
		{"image content", chat, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages[0].content[0]", "unsupported_value"},
		{"messages is an object", chat, `{"messages":{"role":"user"}}`, 400, "messages", "invalid_type"},
		{"bad tool", chat, `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}`, 400, "tools[0]", "invalid_value"},
		{"reserved template variable", chat, `{"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"messages":1}}`, 400, "messages", "invalid_conversation"},
		{"audio output", chat, `{"messages":[{"role":"user","content":"hi"}],"modalities":["text","audio"]}`, 400, "modalities", "unsupported_value"},
		{"unknown response format", chat, `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"xml"}}`, 400, "response_format.type", "invalid_value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := post(t, base+tc.path, tc.body)
			if code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, body)
			}
			var e errorResponse
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("not an OpenAI error object: %s", body)
			}
			param, code2 := "", ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if e.Error.Code != nil {
				code2 = *e.Error.Code
			}
			if param != tc.param || code2 != tc.code {
				t.Errorf("param %q code %q, want %q %q (message %q)", param, code2, tc.param, tc.code, e.Error.Message)
			}
		})
	}
	if code, _ := get(t, base+"/health"); code != http.StatusOK {
		t.Fatalf("health after bad requests: %d", code)
	}
	code, _, body := post(t, base+comp, `{"prompt":"Once","max_tokens":5}`)
	if code != http.StatusOK {
		t.Fatalf("a good request after bad ones: %d %s", code, body)
	}
}

func TestWrongMethodAndUnknownPath(t *testing.T) {
	_, base, _ := startServer(t, nil)
	if code, body := get(t, base+"/v1/completions"); code != http.StatusMethodNotAllowed || !strings.Contains(string(body), `"error"`) {
		t.Errorf("GET /v1/completions: %d %s", code, body)
	}
	if code, body := get(t, base+"/v2/nothing"); code != http.StatusNotFound || !strings.Contains(string(body), "unknown_url") {
		t.Errorf("GET /v2/nothing: %d %s", code, body)
	}
}

// panickyPool panics on Acquire, standing in for any bug below the handlers.
type panickyPool struct{ SessionPool }

func (panickyPool) Acquire(context.Context, []int) (Lease, error) { panic("boom") }

func TestPanicBecomes500AndServerKeepsServing(t *testing.T) {
	o := testOptions(t)
	pool, err := runner.NewPool(o.Runner, runner.PoolOptions{MaxSessions: 1, MemoryBudget: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, base, _ := startServer(t, func(o *Options) { o.Pool = panickyPool{RunnerPool(pool)} })
	code, _, body := post(t, base+"/v1/completions", `{"prompt":"a"}`)
	if code != http.StatusInternalServerError || !strings.Contains(string(body), "server_error") {
		t.Errorf("status %d %s, want a 500 error object", code, body)
	}
	if code, _ := get(t, base+"/health"); code != http.StatusOK {
		t.Errorf("health after a panic: %d", code)
	}
	// The panicking request's slot was released: more requests get through admission.
	for range 3 {
		if code, _, _ := post(t, base+"/v1/completions", `{"prompt":"a"}`); code != http.StatusInternalServerError {
			t.Errorf("status %d, want 500 again (slot leaked?)", code)
		}
	}
}

// TestFailedChoiceStopsItsSiblings checks that when one of n choices fails, the others
// stop at their next token instead of generating to the end: here the first token's hook
// panics, and every later token waits for its choice's context, up to 10 s.
func TestFailedChoiceStopsItsSiblings(t *testing.T) {
	s, base, pool := startServer(t, nil)
	var calls, waitedOut atomic.Int32
	s.setTokenHook(func(ctx context.Context) {
		if calls.Add(1) == 1 {
			panic("boom")
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			waitedOut.Add(1)
		}
	})
	start := time.Now()
	code, _, body := post(t, base+"/v1/completions", `{"prompt":"Once","max_tokens":50,"n":3,"seed":1}`)
	if code != http.StatusInternalServerError || !strings.Contains(string(body), "server_error") {
		t.Errorf("status %d %s, want a 500 error object", code, body)
	}
	if waitedOut.Load() > 0 || time.Since(start) > 9*time.Second {
		t.Errorf("the other choices kept generating after one failed (%d tokens waited out)", waitedOut.Load())
	}
	waitFor(t, func() bool { return pool.Stats().Leased == 0 })
}

// TestPanicInOneOfSeveralChoicesBecomes500 checks that n > 1, whose choices generate on
// goroutines of their own, keeps the handler's guarantee: a panic while generating (here
// in the token hook, standing in for any bug below) is a 500, the forks and the session
// are given back, and the server keeps serving.
func TestPanicInOneOfSeveralChoicesBecomes500(t *testing.T) {
	s, base, pool := startServer(t, nil)
	var calls atomic.Int32
	s.setTokenHook(func(context.Context) {
		if calls.Add(1) == 3 {
			panic("boom")
		}
	})
	code, _, body := post(t, base+"/v1/completions", `{"prompt":"Once","max_tokens":4,"n":2,"seed":1}`)
	if code != http.StatusInternalServerError || !strings.Contains(string(body), "server_error") {
		t.Errorf("status %d %s, want a 500 error object", code, body)
	}
	waitFor(t, func() bool { return pool.Stats().Leased == 0 })
	if code, _, body := post(t, base+"/v1/completions", `{"prompt":"Once","max_tokens":4,"n":2,"seed":1}`); code != http.StatusOK {
		t.Errorf("next request: %d %s", code, body)
	}
}
