package server

import (
	"encoding/json"
	"strings"

	"github.com/hfstatic/hfstatic/grammar"
	"github.com/hfstatic/hfstatic/internal/chat"
	"github.com/hfstatic/hfstatic/internal/toolcall"
)

// maxTools bounds the functions one request may offer (OpenAI's limit too): a forced call
// compiles all their schemas into one grammar.
const maxTools = 128

// toolPlan is how a request's reply may call tools: the call syntax of the model's
// template, read back from the reply once it is complete.
type toolPlan struct {
	syntax toolcall.Syntax
}

// toolCallOut is a call in a response: message.tool_calls, or delta.tool_calls in a stream
// (with Index).
type toolCallOut struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// toolChoice reads tool_choice: "none", "auto", "required" or
// {"type": "function", "function": {"name": …}} (name returned).
func toolChoice(raw json.RawMessage) (mode, name string, err error) {
	if isNull(raw) {
		return "auto", "", nil
	}
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case "none", "auto", "required":
			return mode, "", nil
		}
		return "", "", badRequest("tool_choice", "invalid_value", `tool_choice %q: want "none", "auto", "required" or {"type":"function","function":{"name":…}}`, mode)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Type != "function" || named.Function.Name == "" {
		return "", "", badRequest("tool_choice", "invalid_value", `tool_choice must be "none", "auto", "required" or {"type":"function","function":{"name":…}}`)
	}
	return "named", named.Function.Name, nil
}

// planTools validates tools and tool_choice and returns the plan (nil when the reply
// cannot call tools) and the grammar-bound settings for a forced call.
func (s *Server) planTools(req *chatRequest, set *settings) (*toolPlan, error) {
	if len(req.Tools) == 0 {
		if !isNull(req.ToolChoice) {
			var mode string
			if json.Unmarshal(req.ToolChoice, &mode) != nil || mode != "none" && mode != "auto" {
				return nil, badRequest("tool_choice", "invalid_value", "tool_choice needs tools")
			}
		}
		return nil, nil
	}
	mode, name, err := toolChoice(req.ToolChoice)
	if err != nil || mode == "none" {
		return nil, err
	}
	if len(req.Tools) > maxTools {
		return nil, badRequest("tools", "invalid_value", "tools has %d functions; at most %d are allowed", len(req.Tools), maxTools)
	}
	var tools []toolcall.Tool
	found := name == ""
	for _, raw := range req.Tools {
		var t struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		json.Unmarshal(raw, &t) // parseTools has checked the shape
		tools = append(tools, toolcall.Tool{Name: t.Function.Name, Parameters: t.Function.Parameters})
		found = found || t.Function.Name == name
	}
	plan := &toolPlan{syntax: toolcall.Detect(s.o.Template.Source())}
	if mode == "required" || mode == "named" {
		if set.constraint != nil {
			return nil, badRequest("tool_choice", "invalid_value", "a forced tool call cannot be combined with response_format")
		}
		if !found {
			return nil, badRequest("tool_choice", "invalid_value", "tool_choice names %q, which is not among the tools", name)
		}
		// The cache key is everything the grammar depends on: syntax, choice, tools.
		key, _ := json.Marshal(struct {
			Syntax toolcall.Syntax
			Name   string
			Tools  []toolcall.Tool
		}{plan.syntax, name, tools})
		set.constraint = &grammarSpec{key: "tools\x00" + string(key), param: "tool_choice",
			compile: func(c *grammar.Compiler) (*grammar.Grammar, error) {
				return toolcall.Grammar(c, plan.syntax, tools, name)
			}}
	}
	return plan, nil
}

// toolSystemMessage tells a model whose template does not render tools which functions it
// may call, in the generic syntax that toolcall parses.
func toolSystemMessage(tools []any) chat.Message {
	var b strings.Builder
	b.WriteString("You can call these functions. To call one, reply with only a JSON object " +
		`{"name": <function name>, "arguments": <arguments object>}` + ".\n")
	for _, t := range tools {
		js, _ := json.Marshal(t)
		b.Write(js)
		b.WriteByte('\n')
	}
	return chat.Message{Role: "system", Content: b.String()}
}

// withTools adds the tools to a conversation for templates that do not show them.
func (s *Server) withTools(msgs []chat.Message, tools []any) []chat.Message {
	if len(tools) == 0 || strings.Contains(s.o.Template.Source(), "tools") {
		return msgs
	}
	return append([]chat.Message{toolSystemMessage(tools)}, msgs...)
}

// parseReply decodes the reply with special tokens kept (Mistral's [TOOL_CALLS] and Llama's
// <|python_tag|> are special) and splits it into content and calls.
func (s *Server) parseReply(plan *toolPlan, ids []int) (string, []toolCallOut, error) {
	raw, err := s.o.Tokenizer.Decode(ids, false)
	if err != nil {
		return "", nil, err
	}
	content, calls := toolcall.Parse(plan.syntax, raw)
	if len(calls) == 0 {
		return "", nil, nil
	}
	out := make([]toolCallOut, len(calls))
	for i, c := range calls {
		out[i] = toolCallOut{ID: c.ID, Type: "function", Function: functionCall{Name: c.Name, Arguments: c.Arguments}}
	}
	return content, out, nil
}

// normalizeAssistant makes an assistant message that OpenAI clients send back after a tool
// call renderable by every template: null content becomes "" (as llama.cpp's server and vLLM
// do: Qwen 3's template tests '</think>' in content), and arguments sent as a JSON string
// become the object templates expect.
func normalizeAssistant(m *chat.Message) {
	if m.Role != "assistant" {
		return
	}
	if m.Content == nil {
		m.Content = ""
	}
	for i := range m.ToolCalls {
		if s, ok := m.ToolCalls[i].Function.Arguments.(string); ok {
			if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
				m.ToolCalls[i].Function.Arguments = json.RawMessage(t)
			}
		}
	}
}
