package hfstatic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/sample"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// DefaultMaxTokens is how many tokens a generation makes at most when
// GenerateOptions.MaxTokens is 0.
const DefaultMaxTokens = 256

// GenerateOptions configure one generation. The zero value generates up to
// DefaultMaxTokens tokens greedily.
type GenerateOptions struct {
	// MaxTokens is the most new tokens; 0 means DefaultMaxTokens. Generation also stops at
	// an end-of-sequence token and when the program's context is full.
	MaxTokens int
	// Sampling configures the sampler; the zero value is greedy (see sample.Options, whose
	// Seed makes a random run reproducible).
	Sampling sample.Options
	// Stop ends generation when one of these strings appears; it is not part of the text.
	Stop []string
	// OnText, if set, is called with each piece of text as it is generated (text that may
	// start a stop string is held back until it cannot). Returning an error ends the
	// generation with that error; returning generate.ErrStop ends it without one.
	OnText func(text string) error
}

// StopReason says why a generation ended.
type StopReason = generate.StopReason

// Result is a finished generation.
type Result struct {
	// Text is the generated text, without the prompt, a stop string or the EOS token.
	Text string
	// Tokens are the generated token ids, including an EOS id that ended generation.
	Tokens []int
	// PromptTokens is how many tokens the prompt took (for a chat, the new ones only).
	PromptTokens int
	// Reason says why generation ended: generate.StopEOS, StopMaxTokens,
	// StopContextFull or StopCondition (a stop string or OnText's generate.ErrStop).
	Reason StopReason
}

// Generate continues prompt (encoded with the tokenizer's BOS, if it has one) in a new
// session. On error, the Result holds what was generated before it (a cancelled ctx stops
// between tokens and returns ctx's error).
func (m *Model) Generate(ctx context.Context, prompt string, opts GenerateOptions) (Result, error) {
	if m.eng.Runner == nil {
		return Result{}, m.notGenerative()
	}
	if m.tok == nil {
		return Result{}, m.tokErr
	}
	ids, err := m.tok.Encode(prompt, true)
	if err != nil {
		return Result{}, fmt.Errorf("encode prompt: %w", err)
	}
	if len(ids) == 0 {
		return Result{}, errors.New("the prompt has no tokens and the tokenizer adds no BOS: give a non-empty prompt")
	}
	sess, err := m.eng.Runner.NewSession()
	if err != nil {
		return Result{}, err
	}
	defer sess.Close()
	return m.run(ctx, sess, ids, m.eng.Runner.Metadata().Tokens.EOSIDs(), opts)
}

// run appends prompt to sess and generates, streaming text.
func (m *Model) run(ctx context.Context, sess *runner.Session, prompt, eos []int, opts GenerateOptions) (Result, error) {
	n := opts.MaxTokens
	switch {
	case n == 0:
		n = DefaultMaxTokens
	case n < 0:
		return Result{}, fmt.Errorf("GenerateOptions.MaxTokens %d: want ≥ 1, or 0 for %d", n, DefaultMaxTokens)
	}
	var sampler generate.Sampler = generate.Greedy{}
	if opts.Sampling != (sample.Options{}) {
		s, err := sample.New(opts.Sampling)
		if err != nil {
			return Result{}, err
		}
		sampler = s
	}
	em, err := newEmitter(m.tok, prompt, opts.Stop, eos, opts.OnText)
	if err != nil {
		return Result{}, err
	}
	res, err := generate.Run(ctx, sess, prompt, generate.Options{
		MaxTokens: n, Sampler: sampler, EOS: eos, OnToken: em.token, Vocab: m.tok.VocabSize()})
	if ferr := em.finish(res.Reason == generate.StopCondition); err == nil && ferr != nil {
		err = ferr
	}
	return Result{Text: em.text.String(), Tokens: res.Tokens, PromptTokens: res.PromptTokens, Reason: res.Reason}, err
}

// emitter turns generated tokens into text: it holds back text that may start a stop
// string and ends generation when one appears.
type emitter struct {
	stream *tokenizer.Stream
	stops  *sample.StopMatcher
	eos    []int
	onText func(string) error
	text   strings.Builder
}

// newEmitter starts a text stream that continues after prompt: the prompt's last token
// primes the detokenizer, so the first new token keeps its leading space.
func newEmitter(tok *tokenizer.Tokenizer, prompt []int, stops []string, eos []int, onText func(string) error) (*emitter, error) {
	sm, err := sample.NewStopMatcher(stops)
	if err != nil {
		return nil, err
	}
	e := &emitter{stream: tok.NewStream(true), stops: sm, eos: eos, onText: onText}
	if len(prompt) > 0 {
		e.stream.Prime(prompt[len(prompt)-1]) // its text was the prompt's, not the reply's
	}
	return e, nil
}

func (e *emitter) token(tok int) error {
	if slices.Contains(e.eos, tok) {
		return nil
	}
	piece, err := e.stream.Add(tok)
	if err != nil {
		return err
	}
	text, stopped := e.stops.Push(piece)
	if err := e.emit(text); err != nil {
		return err
	}
	if stopped {
		return generate.ErrStop
	}
	return nil
}

func (e *emitter) emit(text string) error {
	if text == "" {
		return nil
	}
	e.text.WriteString(text)
	if e.onText != nil {
		return e.onText(text)
	}
	return nil
}

// finish emits what is still held back, unless a stop string ended generation.
func (e *emitter) finish(stopped bool) error {
	if stopped {
		return nil
	}
	text, _ := e.stops.Push(e.stream.Flush())
	if err := e.emit(text); err != nil {
		return err
	}
	return e.emit(e.stops.Flush())
}
