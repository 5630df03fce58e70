//go:build !fuzzonly

package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

const weatherParams = `{"type":"object","properties":{"city":{"type":"string","maxLength":8},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"],"additionalProperties":false}`

func weatherTools(t *testing.T) []openai.ChatCompletionToolUnionParam {
	var params map[string]any
	if err := json.Unmarshal([]byte(weatherParams), &params); err != nil {
		t.Fatal(err)
	}
	return []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: params}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string", "maxLength": 4}}, "required": []string{"tz"}}}),
	}
}

// TestToolCallsRequiredNamedStreamedRoundTrip drives the official client against random
// Qwen3 (Hermes syntax) and Llama 3 (JSON syntax) models: forced calls come back as
// message.tool_calls whose arguments validate, the streamed deltas reassemble to the same
// call, and the call goes back through the template with "content": null and a tool result.
func TestToolCallsRequiredNamedStreamedRoundTrip(t *testing.T) {
	doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(weatherParams))
	comp := jsonschema.NewCompiler()
	comp.AddResource("w.json", doc)
	validator, err := comp.Compile("w.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, fx := range []struct{ name, tok string }{{"qwen3", "qwen3"}, {"llama", "llama3"}} {
		t.Run(fx.name, func(t *testing.T) {
			o := randomModelOptions(t, fx.name, fx.tok)
			_, base, _ := startServer(t, func(opts *Options) { *opts = o })
			client := newClient(base)
			ctx := context.Background()
			for seed := int64(0); seed < 10; seed++ {
				choice := openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
				if seed%2 == 1 {
					choice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"})
				}
				params := openai.ChatCompletionNewParams{
					Model:      openai.ChatModel(fx.name),
					Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
					Tools:      weatherTools(t),
					ToolChoice: choice,
					MaxTokens:  openai.Int(200),
					Seed:       openai.Int(seed),
				}
				resp, err := client.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				c := resp.Choices[0]
				if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 {
					t.Fatalf("seed %d: finish %q, message %+v", seed, c.FinishReason, c.Message)
				}
				call := c.Message.ToolCalls[0]
				if seed%2 == 1 && call.Function.Name != "get_weather" {
					t.Fatalf("seed %d: named choice called %q", seed, call.Function.Name)
				}
				if call.Function.Name == "get_weather" {
					v, err := jsonschema.UnmarshalJSON(strings.NewReader(call.Function.Arguments))
					if err != nil || validator.Validate(v) != nil {
						t.Fatalf("seed %d: arguments %q do not validate", seed, call.Function.Arguments)
					}
				}
				if !strings.HasPrefix(call.ID, "call_") || call.Type != "function" {
					t.Errorf("seed %d: call %+v", seed, call)
				}

				// The same request streamed reassembles to the same call.
				stream := client.Chat.Completions.NewStreaming(ctx, params)
				acc := openai.ChatCompletionAccumulator{}
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				sc := acc.Choices[0]
				if len(sc.Message.ToolCalls) != 1 || sc.Message.ToolCalls[0].Function.Name != call.Function.Name ||
					sc.Message.ToolCalls[0].Function.Arguments != call.Function.Arguments || sc.FinishReason != "tool_calls" {
					t.Fatalf("seed %d: streamed %+v, want %+v", seed, sc.Message.ToolCalls, call)
				}

				// Round trip: the assistant's call (content null) and the tool's result.
				params.Messages = append(params.Messages, c.Message.ToParam(), openai.ToolMessage(`{"temp_c": 21}`, call.ID))
				params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")}
				if _, err := client.Chat.Completions.New(ctx, params); err != nil {
					t.Fatalf("seed %d: round trip: %v", seed, err)
				}
			}
		})
	}
}

func TestToolErrors(t *testing.T) {
	o := randomModelOptions(t, "qwen3", "qwen3")
	_, base, _ := startServer(t, func(opts *Options) { *opts = o })
	tools := `[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	for _, c := range []struct{ body, param string }{
		{`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{}}]}`, "tools[0]"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":` + tools + `,"tool_choice":"sometimes"}`, "tool_choice"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":` + tools + `,"tool_choice":{"type":"function","function":{"name":"g"}}}`, "tool_choice"},
		{`{"messages":[{"role":"user","content":"x"}],"tool_choice":"required"}`, "tool_choice"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","patternProperties":{}}}}],"tool_choice":"required"}`, "tool_choice"},
	} {
		status, _, body := post(t, base+"/v1/chat/completions", c.body)
		var e errorBody
		json.Unmarshal(body, &e)
		if status != 400 || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s: %d %s; want 400 naming %s", c.body, status, body, c.param)
		}
	}
}

func TestUnknownModelIs404(t *testing.T) {
	_, base, _ := startServer(t, func(o *Options) { o.Aliases = []string{"tiny"} })
	for _, c := range []struct {
		url, body string
		status    int
	}{
		{"/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],"max_tokens":1}`, 404},
		{"/v1/completions", `{"model":"gpt-4o","prompt":"x","max_tokens":1}`, 404},
		{"/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":1}`, 200},
		{"/v1/completions", `{"model":"stories260K","prompt":"x","max_tokens":1}`, 200},
	} {
		status, _, body := post(t, base+c.url, c.body)
		var e errorBody
		json.Unmarshal(body, &e)
		if status != c.status || (status == 404 && (e.Error.Code == nil || *e.Error.Code != "model_not_found")) {
			t.Errorf("%s %s: %d %s", c.url, c.body, status, body)
		}
	}
	for id, want := range map[string]int{"stories260K": 200, "tiny": 200, "gpt-4o": 404} {
		resp, err := http.Get(base + "/v1/models/" + id)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /v1/models/%s: %d, want %d", id, resp.StatusCode, want)
		}
	}
}
