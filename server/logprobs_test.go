//go:build !fuzzonly

package server

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

func TestLogprobs(t *testing.T) {
	_, base, _ := startServer(t, nil)
	client := newClient(base)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:       "stories260K",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a story.")},
		MaxTokens:   openai.Int(20),
		Temperature: openai.Float(0),
		Logprobs:    openai.Bool(true),
		TopLogprobs: openai.Int(3),
	}
	resp, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	content := resp.Choices[0].Logprobs.Content
	if int64(len(content)) != resp.Usage.CompletionTokens {
		t.Fatalf("%d logprob entries for %d tokens", len(content), resp.Usage.CompletionTokens)
	}
	var text strings.Builder
	for i, e := range content {
		text.WriteString(e.Token)
		if e.Logprob > 0 || len(e.TopLogprobs) != 3 || e.TopLogprobs[0].Token != e.Token || e.TopLogprobs[0].Logprob != e.Logprob {
			t.Fatalf("entry %d: %+v (greedy: the chosen token is the most likely)", i, e)
		}
		var mass float64
		for k, tl := range e.TopLogprobs {
			mass += math.Exp(tl.Logprob)
			if k > 0 && tl.Logprob > e.TopLogprobs[k-1].Logprob {
				t.Fatalf("entry %d: top_logprobs not in order: %+v", i, e.TopLogprobs)
			}
		}
		if mass > 1+1e-9 || len(e.Bytes) != len(e.Token) {
			t.Fatalf("entry %d: mass %v, bytes %v", i, mass, e.Bytes)
		}
	}
	if !strings.Contains(text.String(), strings.TrimSpace(resp.Choices[0].Message.Content)) {
		t.Errorf("tokens %q do not spell the reply %q", text.String(), resp.Choices[0].Message.Content)
	}

	// Streamed: the same entries arrive across the chunks.
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var streamed []openai.ChatCompletionTokenLogprob
	for stream.Next() {
		for _, c := range stream.Current().Choices {
			streamed = append(streamed, c.Logprobs.Content...)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(streamed) != len(content) {
		t.Fatalf("streamed %d entries, want %d", len(streamed), len(content))
	}
	for i := range content {
		if streamed[i].Token != content[i].Token || streamed[i].Logprob != content[i].Logprob {
			t.Fatalf("streamed entry %d %+v, want %+v", i, streamed[i], content[i])
		}
	}

	// Completions: logprobs as an int.
	status, _, body := post(t, base+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":5,"temperature":0,"logprobs":2}`)
	var cr struct {
		Choices []struct {
			Text     string
			Logprobs completionLogprobs
		}
	}
	if err := json.Unmarshal(body, &cr); status != 200 || err != nil {
		t.Fatalf("%d %s", status, body)
	}
	lp := cr.Choices[0].Logprobs
	if len(lp.Tokens) != 5 || len(lp.TopLogprobs[0]) != 2 || strings.Join(lp.Tokens, "") != cr.Choices[0].Text || lp.TextOffset[1] != len([]rune(lp.Tokens[0])) {
		t.Fatalf("completion logprobs %+v for %q", lp, cr.Choices[0].Text)
	}

	for _, c := range []struct{ url, body, param string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":50}`, "top_logprobs"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_logprobs":2}`, "top_logprobs"},
		{"/v1/completions", `{"prompt":"x","logprobs":21}`, "logprobs"},
	} {
		status, _, body := post(t, base+c.url, c.body)
		var e errorBody
		json.Unmarshal(body, &e)
		if status != 400 || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s: %d %s", c.body, status, body)
		}
	}
}

// TestSeveralChoices checks n > 1: choice i equals a lone request with seed + i (the forks
// continue exactly where the prompt left the session), streamed or not.
func TestSeveralChoices(t *testing.T) {
	_, base, _ := startServer(t, nil)
	client := newClient(base)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:     "stories260K",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a story.")},
		MaxTokens: openai.Int(16),
		Seed:      openai.Int(5),
		N:         openai.Int(3),
		Logprobs:  openai.Bool(true),
	}
	resp, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 3 {
		t.Fatalf("%d choices", len(resp.Choices))
	}
	for i, c := range resp.Choices {
		one := params
		one.N = openai.Int(1)
		one.Seed = openai.Int(5 + int64(i))
		alone, err := client.Chat.Completions.New(ctx, one)
		if err != nil {
			t.Fatal(err)
		}
		if c.Index != int64(i) || c.Message.Content != alone.Choices[0].Message.Content || len(c.Logprobs.Content) != len(alone.Choices[0].Logprobs.Content) {
			t.Errorf("choice %d %q, alone with seed %d %q", i, c.Message.Content, 5+i, alone.Choices[0].Message.Content)
		}
	}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	for i, c := range resp.Choices {
		if acc.Choices[i].Message.Content != c.Message.Content {
			t.Errorf("streamed choice %d %q, want %q", i, acc.Choices[i].Message.Content, c.Message.Content)
		}
	}
	status, _, body := post(t, base+"/v1/completions", `{"prompt":"Once","max_tokens":4,"n":2,"seed":1}`)
	if status != 200 || strings.Count(string(body), `"index"`) != 2 {
		t.Errorf("completions n=2: %d %s", status, body)
	}
	for _, n := range []string{"0", "9", "-1"} {
		status, _, body := post(t, base+"/v1/completions", `{"prompt":"Once","n":`+n+`}`)
		var e errorBody
		json.Unmarshal(body, &e)
		if status != 400 || e.Error.Param == nil || *e.Error.Param != "n" {
			t.Errorf("n=%s: %d %s", n, status, body)
		}
	}
}
