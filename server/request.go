package server

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/hfstatic/hfstatic/grammar"
	"github.com/hfstatic/hfstatic/internal/chat"
	"github.com/hfstatic/hfstatic/sample"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// maxStops bounds the stop strings of one request (each is searched after every token).
const maxStops = 16

// samplingParams are the generation fields both endpoints share. Pointers tell "absent"
// from zero.
type samplingParams struct {
	Model             string             `json:"model"`
	MaxTokens         *int               `json:"max_tokens"`
	Temperature       *float64           `json:"temperature"`
	TopP              *float64           `json:"top_p"`
	TopK              *int               `json:"top_k"`
	MinP              *float64           `json:"min_p"`
	Stop              json.RawMessage    `json:"stop"`
	Seed              *int64             `json:"seed"`
	PresencePenalty   *float64           `json:"presence_penalty"`
	FrequencyPenalty  *float64           `json:"frequency_penalty"`
	RepetitionPenalty *float64           `json:"repetition_penalty"`
	Stream            *bool              `json:"stream"`
	StreamOptions     *streamOptions     `json:"stream_options"`
	N                 *int               `json:"n"`
	LogitBias         map[string]float64 `json:"logit_bias"`
	// Grammar constrains the reply to a GBNF grammar (llama.cpp's server's field).
	Grammar *string `json:"grammar"`
	// Accepted and ignored: they do not change what is generated.
	User        string          `json:"user"`
	Metadata    json.RawMessage `json:"metadata"`
	Store       *bool           `json:"store"`
	ServiceTier string          `json:"service_tier"`
	// The prompt cache here is automatic (see SessionPool); these hints change nothing.
	PromptCacheKey       string `json:"prompt_cache_key"`
	PromptCacheRetention string `json:"prompt_cache_retention"`
	SafetyIdentifier     string `json:"safety_identifier"`
}

type streamOptions struct {
	IncludeUsage       bool  `json:"include_usage"`
	IncludeObfuscation *bool `json:"include_obfuscation"` // accepted and ignored
}

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	samplingParams
	Prompt   json.RawMessage `json:"prompt"`
	Echo     bool            `json:"echo"`
	Suffix   *string         `json:"suffix"`
	BestOf   *int            `json:"best_of"`
	Logprobs *int            `json:"logprobs"`
	// ResponseFormat constrains the completion as on chat (an extension of this server).
	ResponseFormat *responseFormat `json:"response_format"`
}

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	samplingParams
	Messages            []json.RawMessage `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	ResponseFormat      *responseFormat   `json:"response_format"`
	Logprobs            *bool             `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
	ChatTemplateKwargs  map[string]any    `json:"chat_template_kwargs"`
	Modalities          []string          `json:"modalities"`
	// Accepted and ignored: a template's own variables (chat_template_kwargs) control
	// reasoning.
	ReasoningEffort string `json:"reasoning_effort"`
	Verbosity       string `json:"verbosity"`
}

// decodeBody reads one JSON object from the request body into v: unknown fields, wrong
// types, trailing data and bodies over the server's limit are client errors naming the
// field at fault.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return jsonError(err)
		}
		return badRequest("", "invalid_json", "the body holds more than one JSON value; send exactly one object")
	}
	return nil
}

// jsonError turns a decoding error into a client error.
func jsonError(err error) *apiError {
	var (
		tooBig  *http.MaxBytesError
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooBig):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalidRequest, Code: "request_too_large",
			Message: fmt.Sprintf("the request body is larger than this server's limit of %d bytes", tooBig.Limit)}
	case errors.As(err, &syntax):
		return badRequest("", "invalid_json", "the body is not valid JSON (at byte %d): %v", syntax.Offset, err)
	case errors.As(err, &typeErr):
		field := strings.TrimPrefix(typeErr.Field, "samplingParams.")
		return badRequest(field, "invalid_type", "%s: expected %s, got a JSON %s", fieldName(field), typeName(typeErr.Type.String()), typeErr.Value)
	case errors.Is(err, io.EOF):
		return badRequest("", "invalid_json", "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "invalid_json", "the JSON body ends early")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return badRequest(name, "unknown_parameter", "unrecognized request argument %q", name)
	}
	return badRequest("", "invalid_json", "cannot decode the body: %v", err)
}

func fieldName(f string) string {
	if f == "" {
		return "the body"
	}
	return f
}

// typeName turns a Go type into the JSON type a client should send.
func typeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "*"):
		return typeName(goType[1:])
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "server."):
		return "an object"
	}
	return goType
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// settings is a validated request, ready to generate.
type settings struct {
	constraint   *grammarSpec       // the reply's language (response_format, grammar, forced tool call); nil: any text
	format       *grammar.Grammar   // constraint, compiled once the request is admitted (Server.run)
	tools        *toolPlan          // the reply may call tools (read back when it is complete)
	logprobs     []*logprobRecorder // per choice: the tokens' log-probabilities; nil: not asked for
	n            int                // choices (1..maxChoices)
	maxTokens    int                // 0: until the context is full
	sampling     sample.Options
	stops        []string
	stream       bool
	includeUsage bool
}

// settings validates the shared fields. defaultMax is used when max_tokens is absent.
func (p *samplingParams) settings(defaultMax int) (settings, error) {
	s := settings{maxTokens: defaultMax, stream: p.Stream != nil && *p.Stream}
	if p.MaxTokens != nil {
		if *p.MaxTokens < 1 {
			return s, badRequest("max_tokens", "invalid_value", "max_tokens is %d; it must be at least 1", *p.MaxTokens)
		}
		s.maxTokens = *p.MaxTokens
	}
	s.n = 1
	if p.N != nil {
		if *p.N < 1 || *p.N > maxChoices {
			return s, badRequest("n", "invalid_value", "n is %d; it must be from 1 to %d", *p.N, maxChoices)
		}
		s.n = *p.N
	}
	if len(p.LogitBias) > 0 {
		return s, badRequest("logit_bias", "unsupported_parameter", "logit_bias is not supported")
	}
	if p.StreamOptions != nil {
		if !s.stream {
			return s, badRequest("stream_options", "invalid_value", "stream_options is only allowed with stream: true")
		}
		s.includeUsage = p.StreamOptions.IncludeUsage
	}
	stops, err := parseStops(p.Stop)
	if err != nil {
		return s, err
	}
	s.stops = stops

	o := sample.Options{Temperature: 1} // OpenAI's default
	f32 := func(param string, v *float64, dst *float32) error {
		if v == nil {
			return nil
		}
		if math.IsNaN(*v) || math.IsInf(*v, 0) || math.Abs(*v) > math.MaxFloat32 {
			return badRequest(param, "invalid_value", "%s must be a finite number", param)
		}
		*dst = float32(*v)
		return nil
	}
	for _, f := range []struct {
		param string
		v     *float64
		dst   *float32
	}{
		{"temperature", p.Temperature, &o.Temperature}, {"top_p", p.TopP, &o.TopP}, {"min_p", p.MinP, &o.MinP},
		{"presence_penalty", p.PresencePenalty, &o.PresencePenalty}, {"frequency_penalty", p.FrequencyPenalty, &o.FrequencyPenalty},
		{"repetition_penalty", p.RepetitionPenalty, &o.RepetitionPenalty},
	} {
		if err := f32(f.param, f.v, f.dst); err != nil {
			return s, err
		}
	}
	if p.RepetitionPenalty != nil && *p.RepetitionPenalty <= 0 {
		// sample.Options reads 0 as "off"; in a request it is a mistake (Hugging Face
		// refuses it too): the neutral value is 1.
		return s, badRequest("repetition_penalty", "invalid_value", "repetition_penalty = %v: must be > 0 (1 means off)", *p.RepetitionPenalty)
	}
	if p.TopK != nil {
		o.TopK = *p.TopK
	}
	if p.Seed != nil {
		o.Seed = uint64(*p.Seed)
	} else {
		var b [8]byte
		rand.Read(b[:])
		o.Seed = binary.LittleEndian.Uint64(b[:])
	}
	if err := o.Validate(); err != nil {
		var oe *sample.OptionError
		if errors.As(err, &oe) {
			param := samplerParams[oe.Field]
			return s, badRequest(param, "invalid_value", "%s = %v: %s", param, oe.Value, oe.Reason)
		}
		return s, badRequest("", "invalid_value", "%v", err)
	}
	s.sampling = o
	return s, nil
}

// recordLogprobs gives each choice a log-probability recorder keeping top alternatives.
func (s *settings) recordLogprobs(tok *tokenizer.Tokenizer, eos []int, top int) {
	s.logprobs = make([]*logprobRecorder, s.n)
	for i := range s.logprobs {
		s.logprobs[i] = newLogprobRecorder(tok, eos, top)
	}
}

// samplerParams maps sample.Options fields to request fields.
var samplerParams = map[string]string{
	"Temperature": "temperature", "TopP": "top_p", "MinP": "min_p", "TopK": "top_k",
	"RepetitionPenalty": "repetition_penalty", "PresencePenalty": "presence_penalty",
	"FrequencyPenalty": "frequency_penalty", "Seed": "seed",
}

// parseStops accepts null, a string or an array of strings.
func parseStops(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, badRequest("stop", "invalid_value", "stop is an empty string; omit it or give text")
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("stop", "invalid_type", "stop must be a string or an array of strings")
	}
	if len(list) > maxStops {
		return nil, badRequest("stop", "invalid_value", "stop has %d strings; at most %d are allowed", len(list), maxStops)
	}
	for i, s := range list {
		if s == "" {
			return nil, badRequest(fmt.Sprintf("stop[%d]", i), "invalid_value", "stop[%d] is an empty string", i)
		}
	}
	return list, nil
}

// completionPrompt is a completion request's prompt: text, or token ids.
type completionPrompt struct {
	text   string
	tokens []int
	isText bool
}

// parsePrompt accepts a string, an array of one string, an array of token ids, or an array
// holding one array of token ids. Batches of several prompts are refused.
func parsePrompt(raw json.RawMessage) (completionPrompt, error) {
	if isNull(raw) {
		return completionPrompt{}, badRequest("prompt", "missing_required_parameter", "prompt is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return completionPrompt{text: text, isText: true}, nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		if len(ids) == 0 {
			return completionPrompt{}, badRequest("prompt", "invalid_value", "prompt is an empty array of token ids")
		}
		return completionPrompt{tokens: ids}, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		if len(texts) != 1 {
			return completionPrompt{}, badRequest("prompt", "unsupported_value", "prompt has %d strings; this server takes one prompt per request", len(texts))
		}
		return completionPrompt{text: texts[0], isText: true}, nil
	}
	var batches [][]int
	if json.Unmarshal(raw, &batches) == nil {
		if len(batches) != 1 || len(batches[0]) == 0 {
			return completionPrompt{}, badRequest("prompt", "unsupported_value", "prompt has %d token arrays; this server takes one non-empty prompt per request", len(batches))
		}
		return completionPrompt{tokens: batches[0]}, nil
	}
	return completionPrompt{}, badRequest("prompt", "invalid_type", "prompt must be a string or an array of integer token ids")
}

// chatMessage is the part of an OpenAI chat message the templates read.
type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name"`
	ToolCalls        []chat.ToolCall `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	ReasoningContent string          `json:"reasoning_content"`
}

var roles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// parseMessages validates messages and converts them for the template. Fields a client
// echoes back from a response (refusal, annotations, …) are ignored; text content parts
// are joined into one string.
func parseMessages(raw []json.RawMessage) ([]chat.Message, error) {
	if len(raw) == 0 {
		return nil, badRequest("messages", "missing_required_parameter", "messages must be a non-empty array")
	}
	out := make([]chat.Message, len(raw))
	for i, r := range raw {
		param := fmt.Sprintf("messages[%d]", i)
		var m chatMessage
		if err := json.Unmarshal(r, &m); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return nil, badRequest(param+"."+te.Field, "invalid_type", "%s.%s: expected %s, got a JSON %s", param, te.Field, typeName(te.Type.String()), te.Value)
			}
			return nil, badRequest(param, "invalid_type", "%s must be an object with a role and content", param)
		}
		if !roles[m.Role] {
			return nil, badRequest(param+".role", "invalid_value", "%s.role is %q; want system, developer, user, assistant or tool", param, m.Role)
		}
		content, err := messageText(m.Content, param+".content")
		if err != nil {
			return nil, err
		}
		out[i] = chat.Message{Role: m.Role, Content: content, Name: m.Name, ToolCalls: m.ToolCalls,
			ToolCallID: m.ToolCallID, ReasoningContent: m.ReasoningContent}
		normalizeAssistant(&out[i])
	}
	return out, nil
}

// messageText returns a message's content as a string, or nil for null/absent content.
func messageText(raw json.RawMessage, param string) (any, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, badRequest(param, "invalid_type", "%s must be a string, null or an array of content parts", param)
	}
	var b strings.Builder
	for k, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return nil, badRequest(fmt.Sprintf("%s[%d]", param, k), "unsupported_value",
				"content part of type %q: this model takes text parts only", p.Type)
		}
		if k > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

// parseTools checks that each tool is a function definition and keeps its JSON as sent
// (templates print tools with tojson, so key order matters).
func parseTools(raw []json.RawMessage, toolChoice json.RawMessage) ([]any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var choice string
	if json.Unmarshal(toolChoice, &choice) == nil && choice == "none" {
		return nil, nil // the model must not call tools: do not show them
	}
	tools := make([]any, len(raw))
	for i, r := range raw {
		var t struct {
			Type     string `json:"type"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(r, &t); err != nil || t.Type != "function" || t.Function == nil || t.Function.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "invalid_value",
				`tools[%d] must be {"type":"function","function":{"name":…,"parameters":…}}`, i)
		}
		tools[i] = r
	}
	return tools, nil
}
