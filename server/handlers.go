package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hfstatic/hfstatic/internal/chat"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// usage reports token counts the OpenAI way; cached_tokens are the prompt tokens taken
// from a pooled session instead of being processed again.
type usage struct {
	PromptTokens        int                 `json:"prompt_tokens"`
	CompletionTokens    int                 `json:"completion_tokens"`
	TotalTokens         int                 `json:"total_tokens"`
	PromptTokensDetails promptTokensDetails `json:"prompt_tokens_details"`
}

type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func (o outcome) usage() *usage {
	return &usage{PromptTokens: o.promptTokens, CompletionTokens: o.completionTokens,
		TotalTokens: o.promptTokens + o.completionTokens, PromptTokensDetails: promptTokensDetails{o.cachedTokens}}
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

type completionChoice struct {
	Text         string              `json:"text"`
	Index        int                 `json:"index"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      *chatOutput   `json:"message,omitempty"`
	Delta        *chatOutput   `json:"delta,omitempty"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatOutput struct {
	Role      string        `json:"role,omitempty"`
	Content   *string       `json:"content,omitempty"`
	ToolCalls []toolCallOut `json:"tool_calls,omitempty"`
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// ChatTemplate says whether /v1/chat/completions can render conversations (false:
	// it answers 400, and clients such as the browser page use /v1/completions).
	ChatTemplate bool `json:"chat_template"`
	// MaxModelLen is the program's context in tokens (vLLM's field name).
	MaxModelLen int `json:"max_model_len"`
}

func (s *Server) model() modelObject {
	return modelObject{ID: s.o.ModelID, Object: "model", Created: s.created, OwnedBy: "hfstatic",
		ChatTemplate: s.o.Template != nil, MaxModelLen: s.o.Runner.Planner().Context}
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Object string        `json:"object"`
		Data   []modelObject `json:"data"`
	}{"list", []modelObject{s.model()}})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); !s.serves(id) || id == "" {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: typeNotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("model %q does not exist; this server serves %q", id, s.o.ModelID)})
		return
	}
	writeJSON(w, http.StatusOK, s.model())
}

// serves reports whether a request's model name (empty: not given) names this model.
func (s *Server) serves(name string) bool {
	return name == "" || name == s.o.ModelID || slices.Contains(s.o.Aliases, name)
}

// checkModel answers 404 model_not_found for a request naming another model.
func (s *Server) checkModel(name string) error {
	if s.serves(name) {
		return nil
	}
	return &apiError{Status: http.StatusNotFound, Type: typeNotFound, Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("the model %q does not exist; this server serves %q (GET /v1/models lists it)", name, s.o.ModelID)}
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	prompt, set, err := s.completionInput(&req)
	if err != nil {
		writeError(w, err)
		return
	}
	id, created := newID("cmpl-"), time.Now().Unix()
	chunk := func(i int, text string, finish *string, u *usage) any {
		c := completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.o.ModelID, Usage: u,
			Choices: []completionChoice{{Index: i, Text: text, FinishReason: finish}}}
		if u != nil && finish == nil {
			c.Choices = []completionChoice{}
		} else if rec := recorder(set, i); rec != nil {
			first := rec.taken
			c.Choices[0].Logprobs = rec.completion(rec.take(), first)
		}
		return c
	}
	if set.stream {
		s.stream(w, r, prompt, set, nil, chunk, nil)
		return
	}
	texts := make([]strings.Builder, set.n)
	out, err := s.run(r.Context(), generation{prompt: prompt, set: set, begin: func() error { return nil },
		emit: func(i int, t string) error { texts[i].WriteString(t); return nil }})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.o.ModelID, Usage: out.usage()}
	for i := range texts {
		c := chunk(i, texts[i].String(), &out.finishReasons[i], nil).(completionResponse)
		resp.Choices = append(resp.Choices, c.Choices[0])
	}
	writeJSON(w, http.StatusOK, resp)
}

// completionInput validates a completion request and tokenizes its prompt.
func (s *Server) completionInput(req *completionRequest) ([]int, settings, error) {
	if err := s.checkModel(req.Model); err != nil {
		return nil, settings{}, err
	}
	switch {
	case req.Echo:
		return nil, settings{}, badRequest("echo", "unsupported_value", "echo is not supported")
	case req.Suffix != nil && *req.Suffix != "":
		return nil, settings{}, badRequest("suffix", "unsupported_value", "suffix is not supported")
	case req.BestOf != nil && *req.BestOf != 1:
		return nil, settings{}, badRequest("best_of", "unsupported_value", "best_of must be 1")
	case req.Logprobs != nil && (*req.Logprobs < 0 || *req.Logprobs > maxTopLogprobs):
		return nil, settings{}, badRequest("logprobs", "invalid_value", "logprobs is %d; it must be from 0 to %d", *req.Logprobs, maxTopLogprobs)
	}
	set, err := req.settings(16) // OpenAI's default for completions
	if err != nil {
		return nil, set, err
	}
	if set.constraint, err = s.formatGrammar(req.ResponseFormat, req.Grammar); err != nil {
		return nil, set, err
	}
	if req.Logprobs != nil {
		set.recordLogprobs(s.o.Tokenizer, s.eos, *req.Logprobs)
	}
	p, err := parsePrompt(req.Prompt)
	if err != nil {
		return nil, set, err
	}
	prompt := p.tokens
	if p.isText {
		if prompt, err = s.encode(p.text, true, "prompt"); err != nil {
			return nil, set, err
		}
	}
	return prompt, set, s.checkPrompt(prompt, "prompt")
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	prompt, set, err := s.chatInput(r.Context(), &req)
	if err != nil {
		writeError(w, err)
		return
	}
	id, created := newID("chatcmpl-"), time.Now().Unix()
	chunk := func(i int, text string, finish *string, u *usage) any {
		c := chatResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.o.ModelID, Usage: u}
		switch {
		case u != nil && finish == nil: // the usage chunk
			c.Choices = []chatChoice{}
		case finish != nil:
			c.Choices = []chatChoice{{Index: i, Delta: &chatOutput{}, FinishReason: finish}}
		default:
			c.Choices = []chatChoice{{Index: i, Delta: &chatOutput{Content: &text}}}
		}
		if rec := recorder(set, i); rec != nil && len(c.Choices) == 1 {
			if e := rec.take(); len(e) > 0 || finish == nil {
				c.Choices[0].Logprobs = rec.chat(e)
			}
		}
		return c
	}
	if set.stream {
		role := func(i int) any {
			empty := ""
			return chatResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.o.ModelID,
				Choices: []chatChoice{{Index: i, Delta: &chatOutput{Role: "assistant", Content: &empty}}}}
		}
		toolDelta := func(i int, content string, calls []toolCallOut) any {
			for k := range calls {
				calls[k].Index = &k
			}
			d := &chatOutput{ToolCalls: calls}
			if content != "" {
				d.Content = &content
			}
			return chatResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.o.ModelID,
				Choices: []chatChoice{{Index: i, Delta: d}}}
		}
		s.stream(w, r, prompt, set, role, chunk, toolDelta)
		return
	}
	texts := make([]strings.Builder, set.n)
	ids := make([][]int, set.n)
	g := generation{prompt: prompt, set: set, begin: func() error { return nil },
		emit: func(i int, t string) error { texts[i].WriteString(t); return nil }}
	if set.tools != nil {
		g.raw = func(i, tok int) { ids[i] = append(ids[i], tok) }
	}
	out, err := s.run(r.Context(), g)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := chatResponse{ID: id, Object: "chat.completion", Created: created, Model: s.o.ModelID, Usage: out.usage()}
	for i := range texts {
		msg := &chatOutput{Role: "assistant"}
		content, finish := texts[i].String(), out.finishReasons[i]
		if set.tools != nil {
			rest, calls, err := s.parseReply(set.tools, ids[i])
			if err != nil {
				s.fail(w, r, err)
				return
			}
			if len(calls) > 0 {
				content, msg.ToolCalls, finish = rest, calls, "tool_calls"
			}
		}
		if content != "" || len(msg.ToolCalls) == 0 {
			msg.Content = &content
		}
		resp.Choices = append(resp.Choices, chatChoice{Index: i, Message: msg, FinishReason: &finish, Logprobs: chatLogprobsOf(recorder(set, i))})
	}
	writeJSON(w, http.StatusOK, resp)
}

// chatInput validates a chat request, renders the conversation with the model's template
// and tokenizes it.
func (s *Server) chatInput(ctx context.Context, req *chatRequest) ([]int, settings, error) {
	if err := s.checkModel(req.Model); err != nil {
		return nil, settings{}, err
	}
	if s.o.Template == nil {
		return nil, settings{}, badRequest("messages", "no_chat_template",
			"model %q has no chat template; use /v1/completions, or export the model from a folder whose tokenizer_config.json has one", s.o.ModelID)
	}
	switch {
	case req.TopLogprobs != nil && (*req.TopLogprobs < 0 || *req.TopLogprobs > maxTopLogprobs):
		return nil, settings{}, badRequest("top_logprobs", "invalid_value", "top_logprobs is %d; it must be from 0 to %d", *req.TopLogprobs, maxTopLogprobs)
	case req.TopLogprobs != nil && (req.Logprobs == nil || !*req.Logprobs):
		return nil, settings{}, badRequest("top_logprobs", "invalid_value", "top_logprobs needs logprobs: true")
	case len(req.Modalities) > 0 && (len(req.Modalities) != 1 || req.Modalities[0] != "text"):
		return nil, settings{}, badRequest("modalities", "unsupported_value", "modalities %q: this model outputs text only", req.Modalities)
	case req.MaxCompletionTokens != nil && req.MaxTokens != nil && *req.MaxCompletionTokens != *req.MaxTokens:
		return nil, settings{}, badRequest("max_completion_tokens", "invalid_value", "max_tokens and max_completion_tokens disagree; send one")
	}
	if req.MaxCompletionTokens != nil {
		req.MaxTokens = req.MaxCompletionTokens
	}
	set, err := req.settings(0) // until the context is full, as OpenAI's chat default
	if err != nil {
		return nil, set, err
	}
	if set.constraint, err = s.formatGrammar(req.ResponseFormat, req.Grammar); err != nil {
		return nil, set, err
	}
	if req.Logprobs != nil && *req.Logprobs {
		top := 0
		if req.TopLogprobs != nil {
			top = *req.TopLogprobs
		}
		set.recordLogprobs(s.o.Tokenizer, s.eos, top)
	}
	msgs, err := parseMessages(req.Messages)
	if err != nil {
		return nil, set, err
	}
	tools, err := parseTools(req.Tools, req.ToolChoice)
	if err != nil {
		return nil, set, err
	}
	if set.tools, err = s.planTools(req, &set); err != nil {
		return nil, set, err
	}
	msgs = s.withTools(msgs, tools)
	text, err := s.render(ctx, chat.Input{Messages: msgs, Tools: tools, AddGenerationPrompt: true, Vars: req.ChatTemplateKwargs})
	var overloaded *apiError
	if errors.As(err, &overloaded) || errors.Is(err, context.Canceled) {
		return nil, set, err
	}
	if err != nil {
		var raised *chat.RaiseError
		if errors.As(err, &raised) {
			return nil, set, badRequest("messages", "invalid_conversation", "the model's chat template refused the conversation: %s", raised.Msg)
		}
		return nil, set, badRequest("messages", "invalid_conversation", "cannot render the conversation with the model's chat template: %v", err)
	}
	prompt, err := s.encode(text, false, "messages")
	if err != nil {
		return nil, set, err
	}
	return prompt, set, s.checkPrompt(prompt, "messages")
}

// encode tokenizes a prompt, stopping as soon as it is known not to fit the context: a
// prompt of one long word (8 MiB of "a") took 37 s and 1 GB to encode before it was
// refused.
func (s *Server) encode(text string, addSpecial bool, param string) ([]int, error) {
	c := s.o.Runner.Planner().Context
	ids, err := s.o.Tokenizer.EncodeLimit(text, addSpecial, c)
	if errors.Is(err, tokenizer.ErrTooLong) {
		return nil, badRequest(param, "context_length_exceeded",
			"this model's context is %d tokens; the prompt has more. Shorten the prompt or the conversation", c)
	}
	if err != nil {
		return nil, badRequest(param, "invalid_value", "cannot tokenize the %s: %v", param, err)
	}
	return ids, nil
}

// fail answers a request whose generation failed before any response was written.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	ae := s.generationError(r.Context(), err)
	if ae.Status >= 500 {
		s.log.Warn("generation failed", "path", r.URL.Path, "err", err)
	}
	writeError(w, ae)
}
