package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ardanlabs/jinja"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrNoTemplate means tokenizer_config.json has no chat_template.
	ErrNoTemplate = errors.New("chat: tokenizer_config.json has no chat_template")
	// ErrTemplateNotFound means a named template was asked for and the
	// config does not list it.
	ErrTemplateNotFound = errors.New("chat: named chat template not found")
)

// RaiseError is the error a template raises with raise_exception(msg), for
// example "System role not supported". Msg is the template's own text.
type RaiseError struct {
	Msg string
}

func (e *RaiseError) Error() string { return "chat template raised an exception: " + e.Msg }

// Template is a compiled chat template. It is safe for concurrent use.
type Template struct {
	name     string // "default", a list entry's name, or "" for Parse
	src      string
	compiled *jinja.Template

	// Defaults read from tokenizer_config.json; Input fields override them.
	bosToken, eosToken string
}

// ErrEngine wraps a failure inside the Jinja engine itself (a panic it
// raised on this template), reported as an error instead.
var ErrEngine = errors.New("chat: Jinja engine failure")

// Parse compiles template source with Hugging Face's Jinja settings. A
// source past the bounds of a real template (1 MiB, 8,192 tags,
// expressions nested 256 deep) is a *BudgetError naming the bound.
func Parse(src string) (t *Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("%w while compiling: %v", ErrEngine, r)
		}
	}()
	if len(src) > maxSourceBytes {
		return nil, &BudgetError{Limit: "source", Detail: fmt.Sprintf("a template of %d bytes (the bound is %d)", len(src), maxSourceBytes)}
	}
	program, err := rewriteSource(src)
	if err != nil {
		return nil, fmt.Errorf("chat: lex template: %w", err)
	}
	compiled, err := jinja.Compile(program)
	if err != nil {
		return nil, fmt.Errorf("chat: compile template: %w", err)
	}
	return &Template{src: src, compiled: compiled}, nil
}

// Source returns the template text as given.
func (t *Template) Source() string { return t.src }

// Name returns the name the template was selected by ("default" or a named
// entry such as "tool_use"), or "" when it came from Parse or a plain string.
func (t *Template) Name() string { return t.name }

// BOSToken and EOSToken return the special-token text read from
// tokenizer_config.json ("" if absent), used when Input leaves them empty.
func (t *Template) BOSToken() string { return t.bosToken }

// EOSToken: see BOSToken.
func (t *Template) EOSToken() string { return t.eosToken }

// tokenizerConfig is the part of tokenizer_config.json that chat rendering reads.
type tokenizerConfig struct {
	ChatTemplate json.RawMessage `json:"chat_template"`
	BOSToken     json.RawMessage `json:"bos_token"`
	EOSToken     json.RawMessage `json:"eos_token"`
}

// FromTokenizerConfig reads the chat template of a tokenizer_config.json.
// chat_template may be a string or a list of {"name", "template"} entries;
// name selects an entry ("" means "default", as Hugging Face does). The
// bos_token and eos_token found there (strings or {"content": ...}
// objects) become the template's defaults.
func FromTokenizerConfig(cfgJSON []byte, name string) (*Template, error) {
	var cfg tokenizerConfig
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		return nil, fmt.Errorf("chat: parse tokenizer_config.json: %w", err)
	}
	src, chosen, err := selectTemplate(cfg.ChatTemplate, name)
	if err != nil {
		return nil, err
	}
	bos, err := specialTokenText(cfg.BOSToken)
	if err != nil {
		return nil, fmt.Errorf("chat: tokenizer_config.json bos_token: %w", err)
	}
	eos, err := specialTokenText(cfg.EOSToken)
	if err != nil {
		return nil, fmt.Errorf("chat: tokenizer_config.json eos_token: %w", err)
	}
	t, err := Parse(src)
	if err != nil {
		return nil, fmt.Errorf("chat template %q: %w", chosen, err)
	}
	t.name = chosen
	t.bosToken, t.eosToken = bos, eos
	return t, nil
}

func selectTemplate(raw json.RawMessage, name string) (src, chosen string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", ErrNoTemplate
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if name != "" && name != "default" {
			return "", "", fmt.Errorf("%w: %q asked, but chat_template is a single string (only \"default\")", ErrTemplateNotFound, name)
		}
		return s, "default", nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", "", fmt.Errorf("chat: chat_template is neither a string nor a list of {name, template}: %w", err)
	}
	if name == "" {
		name = "default"
	}
	var names []string
	for _, e := range list {
		if e.Name == name {
			return e.Template, name, nil
		}
		names = append(names, e.Name)
	}
	return "", "", fmt.Errorf("%w: %q (available: %q)", ErrTemplateNotFound, name, names)
}

// specialTokenText accepts "text", {"content": "text", ...} or null.
func specialTokenText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", fmt.Errorf("want a string or an object with \"content\", got %s", raw)
	}
	return *obj.Content, nil
}

// Input is what a template is rendered with.
type Input struct {
	Messages []Message
	// Tools are OpenAI-style tool definitions, each any JSON-marshalable
	// value. Pass json.RawMessage to keep key order exactly (templates print
	// tools with tojson); Go maps come out with sorted keys. Nil leaves the
	// template variable "tools" undefined, as Hugging Face does.
	Tools               []any
	AddGenerationPrompt bool
	// Vars are extra template variables, such as enable_thinking; each is
	// any JSON-marshalable value. They cannot replace messages, tools,
	// add_generation_prompt, bos_token or eos_token.
	Vars map[string]any
	// BOSToken and EOSToken override the template's defaults when non-empty.
	BOSToken, EOSToken string
	// Now is the time strftime_now formats; zero means time.Now().
	Now time.Time
	// Budget bounds the rendering; zero fields take DefaultBudget's.
	Budget Budget
}

// reserved are the variables Render sets itself.
var reserved = map[string]bool{
	"messages": true, "tools": true, "add_generation_prompt": true,
	"bos_token": true, "eos_token": true,
}

// Render renders the conversation within in.Budget; see RenderContext.
func (t *Template) Render(in Input) (string, error) {
	return t.RenderContext(context.Background(), in)
}

// RenderContext renders the conversation. A template's
// raise_exception(msg) comes back as a *RaiseError; a template exceeding
// in.Budget, or still rendering when ctx ends, as a *BudgetError.
func (t *Template) RenderContext(ctx context.Context, in Input) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("%w while rendering: %v", ErrEngine, r)
		}
	}()
	m := newMeter(ctx, in.Budget)
	if err := m.check(); err != nil {
		return "", err
	}
	data, err := t.data(in, m)
	if err != nil {
		return "", err
	}
	out, err = t.compiled.RenderValues(data)
	if err != nil {
		var re *RaiseError
		var be *BudgetError
		if errors.As(err, &re) {
			return "", err
		}
		if errors.As(err, &be) {
			return "", be
		}
		return "", fmt.Errorf("chat: render template: %w", err)
	}
	return out, nil
}

func (t *Template) data(in Input, m *meter) (map[string]jinja.Value, error) {
	data := make(map[string]jinja.Value, 8+len(in.Vars))
	for k, v := range in.Vars {
		if reserved[k] {
			return nil, fmt.Errorf("chat: Input.Vars[%q]: set it through its own Input field", k)
		}
		val, err := toValue(v)
		if err != nil {
			return nil, fmt.Errorf("chat: Input.Vars[%q]: %w", k, err)
		}
		data[k] = val
	}
	msgs := make([]jinja.Value, len(in.Messages))
	for i, m := range in.Messages {
		v, err := toValue(m)
		if err != nil {
			return nil, fmt.Errorf("chat: message %d: %w", i, err)
		}
		msgs[i] = v
	}
	data["messages"] = jinja.NewList(msgs)
	if in.Tools != nil {
		tools := make([]jinja.Value, len(in.Tools))
		for i, tool := range in.Tools {
			v, err := toValue(tool)
			if err != nil {
				return nil, fmt.Errorf("chat: tool %d: %w", i, err)
			}
			tools[i] = v
		}
		data["tools"] = jinja.NewList(tools)
	}
	data["add_generation_prompt"] = jinja.NewBool(in.AddGenerationPrompt)
	bos, eos := t.bosToken, t.eosToken
	if in.BOSToken != "" {
		bos = in.BOSToken
	}
	if in.EOSToken != "" {
		eos = in.EOSToken
	}
	data["bos_token"] = jinja.NewString(bos)
	data["eos_token"] = jinja.NewString(eos)
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	addEnvironment(data, now, m)
	addFilters(data, m)
	addBudget(data, m)
	return data, nil
}
