package server

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"testing"
)

// FuzzDecodeRequest feeds arbitrary bodies to the request decoder and the
// validation of both endpoints: nothing panics, and every refusal is an
// *apiError (a 4xx with a message), never a bare error.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"temperature":0.5,"stop":["\n"]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"auto"}`,
		`{"prompt":[1,2,3],"max_tokens":2,"top_k":5,"top_p":0.9,"seed":7,"repetition_penalty":1.1}`,
		`{"prompt":"Once","stream":true,"stream_options":{"include_usage":true},"logit_bias":{"1":-100}}`,
		`{"prompt":"x","repetition_penalty":0}`,
		`{} {}`,
	} {
		f.Add([]byte(s))
	}
	check := func(t *testing.T, what string, err error) {
		var ae *apiError
		if err != nil && !errors.As(err, &ae) {
			t.Fatalf("%s: %v is not an *apiError", what, err)
		}
		if ae != nil && (ae.Status < 400 || ae.Status > 499 || ae.Message == "") {
			t.Fatalf("%s: %+v, want a 4xx with a message", what, ae)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var chat chatRequest
		err := decodeBody(httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body)), &chat)
		check(t, "decode chat", err)
		if err == nil {
			_, err = chat.settings(0)
			check(t, "chat settings", err)
			_, err = parseMessages(chat.Messages)
			check(t, "messages", err)
			_, err = parseTools(chat.Tools, chat.ToolChoice)
			check(t, "tools", err)
		}
		var comp completionRequest
		err = decodeBody(httptest.NewRequest("POST", "/v1/completions", bytes.NewReader(body)), &comp)
		check(t, "decode completion", err)
		if err == nil {
			_, err = comp.settings(16)
			check(t, "completion settings", err)
			_, err = parsePrompt(comp.Prompt)
			check(t, "prompt", err)
		}
	})
}
