//go:build !fuzzonly

package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// newClient returns the official OpenAI Go client pointed at base.
func newClient(base string) openai.Client {
	return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

func TestOpenAIClientCompletions(t *testing.T) {
	s, base, _ := startServer(t, nil)
	client := newClient(base)
	ctx := context.Background()
	prompt, _ := s.o.Tokenizer.Encode("Once upon a time", true)
	want := greedyReference(t, prompt, 32)

	params := openai.CompletionNewParams{
		Model:       "stories260K",
		Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens:   openai.Int(32),
		Temperature: openai.Float(0),
	}
	resp, err := client.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Text != want || resp.Choices[0].FinishReason != "length" {
		t.Errorf("completion = %+v, want text %q finish length", resp.Choices, want)
	}
	if resp.Usage.PromptTokens != int64(len(prompt)) || resp.Usage.CompletionTokens != 32 {
		t.Errorf("usage = %+v", resp.Usage)
	}

	stream := client.Completions.NewStreaming(ctx, params)
	var text strings.Builder
	for stream.Next() {
		for _, c := range stream.Current().Choices {
			text.WriteString(c.Text)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != want {
		t.Errorf("streamed %q, want %q", text.String(), want)
	}

	models, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(models.Data) != 1 || models.Data[0].ID != "stories260K" {
		t.Errorf("models = %+v", models.Data)
	}
}

func TestOpenAIClientChatConversation(t *testing.T) {
	_, base, _ := startServer(t, nil)
	client := newClient(base)
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You tell short stories."),
		openai.UserMessage("Tell me about a dog."),
	}
	params := openai.ChatCompletionNewParams{
		Model: "stories260K", Messages: msgs, MaxTokens: openai.Int(20), Temperature: openai.Float(0),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "bark", Parameters: shared.FunctionParameters{"type": "object"}})},
	}
	first, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Choices) != 1 || first.Choices[0].Message.Role != "assistant" {
		t.Fatalf("first turn: %+v", first)
	}

	// The same request streamed gives the same reply.
	streamed := params
	streamed.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, streamed)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != first.Choices[0].Message.Content {
		t.Errorf("streamed reply %q, want %q", got, first.Choices[0].Message.Content)
	}
	if acc.Usage.CompletionTokens != first.Usage.CompletionTokens || acc.Usage.PromptTokens != first.Usage.PromptTokens {
		t.Errorf("streamed usage %+v, want %+v", acc.Usage, first.Usage)
	}

	params.Messages = append(msgs, first.Choices[0].Message.ToParam(), openai.UserMessage("What happened next?"))
	second, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if cached := second.Usage.PromptTokensDetails.CachedTokens; cached < first.Usage.PromptTokens {
		t.Errorf("second turn reused %d tokens; want at least the first turn's %d prompt tokens", cached, first.Usage.PromptTokens)
	}
}

func TestOpenAIClientSeesErrors(t *testing.T) {
	_, base, _ := startServer(t, nil)
	client := newClient(base)
	_, err := client.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:       "stories260K",
		Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")},
		Temperature: openai.Float(-3),
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v is not an *openai.Error", err)
	}
	if apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "temperature" || apiErr.Type != "invalid_request_error" {
		t.Errorf("error = status %d param %q type %q", apiErr.StatusCode, apiErr.Param, apiErr.Type)
	}
}
