package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestModelsListsTheModelAndHealthIsOK(t *testing.T) {
	_, base, _ := startServer(t, nil)
	code, body := get(t, base+"/v1/models")
	if code != http.StatusOK {
		t.Fatalf("GET /v1/models: %d %s", code, body)
	}
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object   string
			ChatTemplate bool `json:"chat_template"`
			MaxModelLen  int  `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "stories260K" || list.Data[0].Object != "model" ||
		!list.Data[0].ChatTemplate || list.Data[0].MaxModelLen != 512 {
		t.Errorf("GET /v1/models = %s", body)
	}
	_, noTemplate, _ := startServer(t, func(o *Options) { o.Template = nil })
	if code, body := get(t, noTemplate+"/v1/models"); code != http.StatusOK || !strings.Contains(string(body), `"chat_template":false`) {
		t.Errorf("GET /v1/models without a chat template: %d %s", code, body)
	}
	if code, body := get(t, base+"/v1/models/stories260K"); code != http.StatusOK {
		t.Errorf("GET /v1/models/stories260K: %d %s", code, body)
	}
	if code, _ := get(t, base+"/v1/models/gpt-4"); code != http.StatusNotFound {
		t.Errorf("GET /v1/models/gpt-4: %d, want 404", code)
	}
	if code, body := get(t, base+"/health"); code != http.StatusOK || !strings.Contains(string(body), `"ok"`) {
		t.Errorf("GET /health: %d %s", code, body)
	}
}

type completionBody struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
		Delta        *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Message *struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func decode[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func TestGreedyCompletionMatchesGenerate(t *testing.T) {
	s, base, _ := startServer(t, nil)
	prompt, err := s.o.Tokenizer.Encode("Once upon a time", true)
	if err != nil {
		t.Fatal(err)
	}
	want := greedyReference(t, prompt, 40)
	code, _, body := post(t, base+"/v1/completions", map[string]any{
		"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 40, "temperature": 0})
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	got := decode[completionBody](t, body)
	if got.Object != "text_completion" || len(got.Choices) != 1 || got.Usage == nil {
		t.Fatalf("response shape: %s", body)
	}
	if diff := cmp.Diff(want, got.Choices[0].Text); diff != "" {
		t.Errorf("text (-generate +server):\n%s", diff)
	}
	if got.Usage.PromptTokens != len(prompt) || got.Usage.CompletionTokens != 40 || got.Usage.TotalTokens != len(prompt)+40 {
		t.Errorf("usage = %+v, want prompt %d, completion 40", *got.Usage, len(prompt))
	}
	if got.Choices[0].FinishReason == nil || *got.Choices[0].FinishReason != "length" {
		t.Errorf("finish_reason = %v, want length", got.Choices[0].FinishReason)
	}
	// The same request as token ids gives the same text.
	code, _, body = post(t, base+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 40, "temperature": 0})
	if code != http.StatusOK {
		t.Fatalf("token prompt: status %d: %s", code, body)
	}
	if got := decode[completionBody](t, body); got.Choices[0].Text != want {
		t.Errorf("token prompt text = %q, want %q", got.Choices[0].Text, want)
	}
}

func TestStreamedCompletionEqualsNonStreamed(t *testing.T) {
	_, base, _ := startServer(t, nil)
	req := map[string]any{"prompt": "The little dog", "max_tokens": 30, "temperature": 0}
	_, _, body := post(t, base+"/v1/completions", req)
	want := decode[completionBody](t, body).Choices[0].Text

	req["stream"] = true
	req["stream_options"] = map[string]any{"include_usage": true}
	code, h, body := post(t, base+"/v1/completions", req)
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %q: %s", code, h.Get("Content-Type"), body)
	}
	events := sseEvents(t, body)
	if len(events) < 3 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("events do not end in [DONE]: %q", events)
	}
	var text strings.Builder
	var finish string
	var completion int
	for _, e := range events[:len(events)-1] {
		c := decode[completionBody](t, []byte(e))
		if c.Usage != nil {
			completion = c.Usage.CompletionTokens
			continue
		}
		text.WriteString(c.Choices[0].Text)
		if c.Choices[0].FinishReason != nil {
			finish = *c.Choices[0].FinishReason
		}
	}
	if text.String() != want {
		t.Errorf("streamed text = %q, want %q", text.String(), want)
	}
	if finish != "length" || completion != 30 {
		t.Errorf("finish %q, completion tokens %d; want length, 30", finish, completion)
	}
}

func TestStopStringEndsTheText(t *testing.T) {
	s, base, _ := startServer(t, nil)
	prompt, _ := s.o.Tokenizer.Encode("Once upon a time", true)
	full := greedyReference(t, prompt, 60)
	words := strings.Fields(full)
	if len(words) < 4 {
		t.Fatalf("reference text too short: %q", full)
	}
	stop := words[3]
	want := full[:strings.Index(full, stop)]
	for _, stream := range []bool{false, true} {
		code, _, body := post(t, base+"/v1/completions", map[string]any{
			"prompt": "Once upon a time", "max_tokens": 60, "temperature": 0, "stop": []string{stop}, "stream": stream})
		if code != http.StatusOK {
			t.Fatalf("stream=%v: %d %s", stream, code, body)
		}
		var text, finish string
		if stream {
			events := sseEvents(t, body)
			for _, e := range events[:len(events)-1] {
				c := decode[completionBody](t, []byte(e))
				text += c.Choices[0].Text
				if f := c.Choices[0].FinishReason; f != nil {
					finish = *f
				}
			}
		} else {
			c := decode[completionBody](t, body)
			text, finish = c.Choices[0].Text, *c.Choices[0].FinishReason
		}
		if text != want || finish != "stop" {
			t.Errorf("stream=%v: text %q finish %q; want %q, stop", stream, text, finish, want)
		}
	}
}

func TestSeededSamplingRepeats(t *testing.T) {
	_, base, _ := startServer(t, nil)
	req := map[string]any{"prompt": "Lily", "max_tokens": 30, "temperature": 1.2, "top_p": 0.95, "top_k": 40, "min_p": 0.01,
		"seed": 42, "presence_penalty": 0.5, "frequency_penalty": 0.3, "repetition_penalty": 1.1}
	var texts []string
	for range 2 {
		code, _, body := post(t, base+"/v1/completions", req)
		if code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		texts = append(texts, decode[completionBody](t, body).Choices[0].Text)
	}
	if texts[0] != texts[1] || texts[0] == "" {
		t.Errorf("seed 42 gave %q then %q", texts[0], texts[1])
	}
}

func TestConcurrentIdenticalGreedyRequestsAgree(t *testing.T) {
	s, base, _ := startServer(t, func(o *Options) { o.MaxSessions = 3 }) // some wait in the queue
	prompt, _ := s.o.Tokenizer.Encode("One day, a girl named Lily", true)
	want := greedyReference(t, prompt, 48)
	var wg sync.WaitGroup
	texts := make([]string, 8)
	errs := make([]string, 8)
	for i := range texts {
		wg.Go(func() {
			code, _, body := post(t, base+"/v1/completions", map[string]any{
				"prompt": "One day, a girl named Lily", "max_tokens": 48, "temperature": 0})
			if code != http.StatusOK {
				errs[i] = string(body)
				return
			}
			texts[i] = decode[completionBody](t, body).Choices[0].Text
		})
	}
	wg.Wait()
	for i := range texts {
		if errs[i] != "" {
			t.Errorf("request %d failed: %s", i, errs[i])
		} else if texts[i] != want {
			t.Errorf("request %d: %q, want %q", i, texts[i], want)
		}
	}
}

func TestChatSecondTurnReusesFirstTurn(t *testing.T) {
	_, base, _ := startServer(t, nil)
	msgs := []map[string]any{{"role": "user", "content": "Tell me a story about a cat."}}
	code, _, body := post(t, base+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 24, "temperature": 0})
	if code != http.StatusOK {
		t.Fatalf("turn 1: %d %s", code, body)
	}
	first := decode[completionBody](t, body)
	if first.Object != "chat.completion" || first.Choices[0].Message == nil || first.Choices[0].Message.Role != "assistant" {
		t.Fatalf("turn 1 shape: %s", body)
	}
	if first.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("turn 1 cached %d tokens, want 0", first.Usage.PromptTokensDetails.CachedTokens)
	}
	before := metricValue(t, base, "hfstatic_prefix_cache_reused_tokens_total")
	msgs = append(msgs, map[string]any{"role": "assistant", "content": first.Choices[0].Message.Content},
		map[string]any{"role": "user", "content": "And then?"})
	code, _, body = post(t, base+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 24, "temperature": 0})
	if code != http.StatusOK {
		t.Fatalf("turn 2: %d %s", code, body)
	}
	second := decode[completionBody](t, body)
	cached := second.Usage.PromptTokensDetails.CachedTokens
	t.Logf("turn 1: %d prompt tokens; turn 2: %d prompt tokens, %d reused", first.Usage.PromptTokens, second.Usage.PromptTokens, cached)
	if cached < first.Usage.PromptTokens {
		t.Errorf("turn 2 reused %d tokens; want at least turn 1's prompt (%d)", cached, first.Usage.PromptTokens)
	}
	if cached >= second.Usage.PromptTokens {
		t.Errorf("turn 2 reused %d of %d prompt tokens; at least one must be processed", cached, second.Usage.PromptTokens)
	}
	after := metricValue(t, base, "hfstatic_prefix_cache_reused_tokens_total")
	if after-before != float64(cached) {
		t.Errorf("metrics: reused tokens went %v → %v, want +%d", before, after, cached)
	}
	if hits := metricValue(t, base, "hfstatic_prefix_cache_hits_total"); hits < 1 {
		t.Errorf("prefix cache hits = %v, want ≥ 1", hits)
	}
}

func TestChatToolsReachTheTemplate(t *testing.T) {
	s, base, _ := startServer(t, nil)
	tool := `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}`
	body := `{"messages":[{"role":"user","content":"Weather?"}],"tools":[` + tool + `],"max_tokens":1,"temperature":0}`
	code, _, resp := post(t, base+"/v1/chat/completions", body)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, resp)
	}
	text := "<|system|>\nYou may call these tools: [" + tool + "]\n<|user|>\nWeather?\n<|assistant|>\n"
	// tojson prints with Python's separators.
	text = strings.NewReplacer(`":`, `": `, `,"`, `, "`).Replace(text)
	want, _ := s.o.Tokenizer.Encode(text, false)
	if got := decode[completionBody](t, resp).Usage.PromptTokens; got != len(want) {
		t.Errorf("prompt tokens = %d, want %d (the template rendered with the tool)", got, len(want))
	}
}

func TestChatWithoutTemplateIsRefused(t *testing.T) {
	_, base, _ := startServer(t, func(o *Options) { o.Template = nil })
	code, _, body := post(t, base+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "no_chat_template") {
		t.Errorf("%d %s; want 400 no_chat_template", code, body)
	}
}

func TestStreamedChatSendsRoleThenContent(t *testing.T) {
	_, base, _ := startServer(t, nil)
	req := map[string]any{"messages": []map[string]any{{"role": "user", "content": "Hi"}}, "max_tokens": 10, "temperature": 0}
	_, _, body := post(t, base+"/v1/chat/completions", req)
	want := decode[completionBody](t, body).Choices[0].Message.Content
	req["stream"] = true
	code, _, body := post(t, base+"/v1/chat/completions", req)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	events := sseEvents(t, body)
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("no [DONE]: %q", events)
	}
	firstChunk := decode[completionBody](t, []byte(events[0]))
	if firstChunk.Object != "chat.completion.chunk" || firstChunk.Choices[0].Delta.Role != "assistant" {
		t.Errorf("first event %s, want the assistant role", events[0])
	}
	var text string
	for _, e := range events[1 : len(events)-1] {
		if c := decode[completionBody](t, []byte(e)); c.Choices[0].Delta.Content != nil {
			text += *c.Choices[0].Delta.Content
		}
	}
	if text != want {
		t.Errorf("streamed %q, want %q", text, want)
	}
}

// Options.UI answers GET / and /ui/...; without it / is an unknown path like any other.
func TestUIHandlerServesTheRoot(t *testing.T) {
	_, plain, _ := startServer(t, nil)
	if code, body := get(t, plain+"/"); code != http.StatusNotFound || !strings.Contains(string(body), "unknown_url") {
		t.Errorf("GET / without a UI: %d %s", code, body)
	}
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page "+r.URL.Path) })
	_, base, _ := startServer(t, func(o *Options) { o.UI = ui })
	for path, want := range map[string]string{"/": "page /", "/ui/app.js": "page /ui/app.js"} {
		if code, body := get(t, base+path); code != http.StatusOK || string(body) != want {
			t.Errorf("GET %s: %d %q, want %q", path, code, body, want)
		}
	}
	if code, body := get(t, base+"/index.html"); code != http.StatusNotFound {
		t.Errorf("GET /index.html: %d %s, want the API's 404", code, body)
	}
}
