// Package toolcall knows how chat models write function calls: it detects a template's call
// syntax from the template's text (never from the model's name), parses replies into calls,
// and builds the grammar that forces a call when the client requires one.
//
// Syntaxes:
//   - Hermes (Qwen 2.5, Qwen 3, Hermes): <tool_call>\n{"name": N, "arguments": {…}}\n</tool_call>, repeated.
//   - Llama 3.1–3.3: a bare JSON object {"name": N, "parameters": {…}} (optionally after
//     <|python_tag|>), several separated by ';'.
//   - Mistral: [TOOL_CALLS][{"name": N, "arguments": {…}}, …], or [TOOL_CALLS]N[ARGS]{…} (newer).
//   - Generic (any other template): a reply that is exactly a JSON object
//     {"name": N, "arguments": {…}} or {"tool_calls": [{"name": N, "arguments": {…}}, …]},
//     optionally in a ```json fence. Templates that do not render tools are told of them by the
//     server in a system message that asks for this form.
//
// It does not own sampling or HTTP (package server streams the calls) nor the template.
package toolcall

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hfstatic/hfstatic/grammar"
)

// Syntax is a family's way of writing calls.
type Syntax int

// The syntaxes, from Detect.
const (
	Generic Syntax = iota
	Hermes
	Llama3
	Mistral
)

func (s Syntax) String() string {
	return [...]string{"generic", "hermes", "llama3", "mistral"}[s]
}

// Detect picks the syntax a chat template teaches its model, from the template's text.
func Detect(template string) Syntax {
	switch {
	case strings.Contains(template, "<tool_call>"):
		return Hermes
	case strings.Contains(template, "[TOOL_CALLS]"):
		return Mistral
	case strings.Contains(template, "<|python_tag|>") ||
		(strings.Contains(template, `"parameters"`) && strings.Contains(template, "<|start_header_id|>")):
		return Llama3
	}
	return Generic
}

// Call is one parsed function call.
type Call struct {
	ID        string
	Name      string
	Arguments string // a JSON object, as OpenAI's function.arguments
}

// NewID returns an OpenAI-style call id ("call_" and 24 random letters and digits).
func NewID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b [24]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "call_" + string(b[:])
}

// Parse splits a complete reply (decoded with special tokens kept) into its text content and
// its calls. A reply with no well-formed call is all content.
func Parse(s Syntax, reply string) (content string, calls []Call) {
	switch s {
	case Hermes:
		return parseHermes(reply)
	case Mistral:
		return parseMistral(reply)
	case Llama3:
		return parseLlama3(reply)
	}
	return parseGeneric(reply)
}

type rawCall struct {
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"`
}

func (r rawCall) call() (Call, bool) {
	args := r.Arguments
	if len(args) == 0 {
		args = r.Parameters
	}
	args = bytes.TrimSpace(args)
	if r.Name == "" {
		return Call{}, false
	}
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] == '"' { // arguments sent as a JSON string holding JSON
		var s string
		if json.Unmarshal(args, &s) == nil && json.Valid([]byte(s)) {
			args = []byte(s)
		}
	}
	if args[0] != '{' {
		return Call{}, false
	}
	var compact bytes.Buffer
	if json.Compact(&compact, args) != nil {
		return Call{}, false
	}
	return Call{ID: NewID(), Name: r.Name, Arguments: compact.String()}, true
}

func parseHermes(reply string) (string, []Call) {
	var content strings.Builder
	var calls []Call
	rest := reply
	for {
		i := strings.Index(rest, "<tool_call>")
		if i < 0 {
			content.WriteString(rest)
			break
		}
		content.WriteString(rest[:i])
		body := rest[i+len("<tool_call>"):]
		j := strings.Index(body, "</tool_call>")
		end := len(body)
		if j >= 0 {
			end = j
		}
		var r rawCall
		if err := json.Unmarshal([]byte(strings.TrimSpace(body[:end])), &r); err != nil {
			content.WriteString(rest[i:]) // not a call after all
			break
		}
		c, ok := r.call()
		if !ok {
			content.WriteString(rest[i:])
			break
		}
		calls = append(calls, c)
		if j < 0 {
			rest = ""
		} else {
			rest = body[j+len("</tool_call>"):]
		}
	}
	text := strings.TrimSpace(content.String())
	if len(calls) > 0 {
		// Qwen 3 writes an empty reasoning block before a call; it is not content.
		if inner, ok := strings.CutPrefix(text, "<think>"); ok {
			if inner, ok := strings.CutSuffix(inner, "</think>"); ok && strings.TrimSpace(inner) == "" {
				text = ""
			}
		}
	}
	return text, calls
}

func parseMistral(reply string) (string, []Call) {
	i := strings.Index(reply, "[TOOL_CALLS]")
	body := reply
	content := ""
	if i >= 0 {
		content, body = reply[:i], reply[i+len("[TOOL_CALLS]"):]
	}
	body = strings.TrimSpace(body)
	if strings.HasPrefix(body, "[") {
		var list []rawCall
		if err := json.NewDecoder(strings.NewReader(body)).Decode(&list); err == nil {
			var calls []Call
			for _, r := range list {
				c, ok := r.call()
				if !ok {
					return reply, nil
				}
				calls = append(calls, c)
			}
			return strings.TrimSpace(content), calls
		}
	}
	if i >= 0 { // NAME[ARGS]{…}, possibly repeated after [TOOL_CALLS]
		var calls []Call
		for _, part := range strings.Split(body, "[TOOL_CALLS]") {
			name, args, ok := strings.Cut(part, "[ARGS]")
			if !ok {
				return reply, nil
			}
			c, ok := rawCall{Name: strings.TrimSpace(name), Arguments: json.RawMessage(strings.TrimSpace(args))}.call()
			if !ok {
				return reply, nil
			}
			calls = append(calls, c)
		}
		return strings.TrimSpace(content), calls
	}
	return reply, nil
}

func parseLlama3(reply string) (string, []Call) {
	body := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(reply), "<|python_tag|>"))
	if !strings.HasPrefix(body, "{") {
		return reply, nil
	}
	var calls []Call
	dec := json.NewDecoder(strings.NewReader(body))
	for {
		var r rawCall
		if err := dec.Decode(&r); err != nil {
			return reply, nil
		}
		c, ok := r.call()
		if !ok {
			return reply, nil
		}
		calls = append(calls, c)
		rest := strings.TrimSpace(body[dec.InputOffset():])
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ";"))
		if rest == "" {
			return "", calls
		}
		body = rest
		dec = json.NewDecoder(strings.NewReader(body))
	}
}

func parseGeneric(reply string) (string, []Call) {
	body := strings.TrimSpace(reply)
	if strings.HasPrefix(body, "```") {
		body = strings.TrimPrefix(strings.TrimPrefix(body, "```json"), "```")
		body = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body), "```"))
	}
	if !strings.HasPrefix(body, "{") {
		return reply, nil
	}
	var wrapper struct {
		ToolCalls []rawCall `json:"tool_calls"`
		rawCall
	}
	if err := json.Unmarshal([]byte(body), &wrapper); err != nil {
		return reply, nil
	}
	list := wrapper.ToolCalls
	if len(list) == 0 {
		list = []rawCall{wrapper.rawCall}
	}
	var calls []Call
	for _, r := range list {
		c, ok := r.call()
		if !ok {
			return reply, nil
		}
		calls = append(calls, c)
	}
	return "", calls
}

// Tool is a function the client offers: its name and its parameters' JSON Schema.
type Tool struct {
	Name       string
	Parameters json.RawMessage // nil: any object
}

// Grammar is the language of one call to one of tools (to the tool named name when it is not
// empty) in syntax s: what tool_choice "required" or a named choice forces. Every tool's
// schema is compiled under c's one budget into one automaton for all of them.
func Grammar(c *grammar.Compiler, s Syntax, tools []Tool, name string) (*grammar.Grammar, error) {
	var alts []grammar.Expr
	for _, t := range tools {
		if name != "" && t.Name != name {
			continue
		}
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
			params = json.RawMessage(`{"type":"object"}`)
		}
		args, err := c.SchemaExpr(params)
		if err != nil {
			return nil, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
		}
		quoted, _ := json.Marshal(t.Name)
		var open, close string
		switch s {
		case Hermes:
			open, close = `<tool_call>`+"\n"+`{"name": `+string(quoted)+`, "arguments": `, "}\n</tool_call>"
		case Llama3:
			open, close = `{"name": `+string(quoted)+`, "parameters": `, "}"
		case Mistral:
			open, close = `[{"name": `+string(quoted)+`, "arguments": `, "}]"
		default:
			open, close = `{"name": `+string(quoted)+`, "arguments": `, "}"
		}
		alts = append(alts, c.Concat(c.Text(open), args, c.Text(close)))
	}
	if len(alts) == 0 {
		return nil, fmt.Errorf("no tool named %q", name)
	}
	return c.Compile(c.Union(alts...))
}
