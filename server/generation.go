package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/grammar"
	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/sample"
)

// outcome is what one generation produced besides its text.
type outcome struct {
	promptTokens, cachedTokens, completionTokens int
	finishReason                                 string   // choice 0's: "stop", "length" (or "tool_calls", set by the handler)
	finishReasons                                []string // every choice's
}

// maxChoices bounds n: each choice beyond the first forks the session (outside the pool's
// memory budget).
const maxChoices = 8

// checkPrompt refuses prompts the program cannot take: empty, ids outside the
// vocabulary, or longer than the context.
func (s *Server) checkPrompt(prompt []int, param string) error {
	if len(prompt) == 0 {
		return badRequest(param, "invalid_value", "the prompt encodes to no tokens")
	}
	vocab := s.o.Runner.Metadata().VocabSize
	for i, t := range prompt {
		if t < 0 || t >= vocab {
			return badRequest(param, "invalid_value", "token %d at index %d is outside the vocabulary [0,%d)", t, i, vocab)
		}
	}
	if c := s.o.Runner.Planner().Context; len(prompt) > c {
		return badRequest(param, "context_length_exceeded",
			"this model's context is %d tokens; the prompt has %d. Shorten the prompt or the conversation", c, len(prompt))
	}
	return nil
}

// generation is one admitted request: its prompt and settings, and where its text goes.
type generation struct {
	prompt []int
	set    settings
	// begin is called once a session is leased, before any text (streams send headers).
	begin func() error
	// emit receives choice i's text as it becomes final. With several choices it is called
	// from several goroutines, one per choice.
	emit func(i int, text string) error
	// raw, if set, receives every token of choice i but end-of-sequence ones (tool calls are
	// parsed from the tokens, special ones included).
	raw func(i int, tok int)
	// arrived is when the request came in (the first token's latency counts from it).
	arrived time.Time
}

// run admits the request, leases a session with the longest cached prefix of the prompt,
// generates set.n choices and returns the outcome. The prompt is processed once: further
// choices fork the session after it. ctx ends the generation early (client gone, shutdown).
func (s *Server) run(ctx context.Context, g generation) (outcome, error) {
	g.arrived = time.Now()
	out := outcome{promptTokens: len(g.prompt)}
	release, err := s.admit(ctx)
	if err != nil {
		return out, err
	}
	defer release()
	if s.o.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.o.RequestTimeout)
		defer cancel()
	}
	if g.set.constraint != nil {
		// Compiled inside admission: it holds this generation's slot.
		format, release, err := s.constrain(ctx, g.set.constraint)
		if err != nil {
			return out, err
		}
		defer release()
		g.set.format = format
	}
	lease, err := s.o.Pool.Acquire(ctx, g.prompt)
	if err != nil {
		return out, fmt.Errorf("acquire a session: %w", err)
	}
	defer lease.Release()
	sess := lease.Session()
	reused := lease.Reused()
	if reused < 0 || reused >= len(g.prompt) || sess.Position() != reused || !slices.Equal(sess.Tokens(), g.prompt[:reused]) {
		// The pool broke its promise; start over rather than generate from a wrong state.
		s.log.Warn("pool lent a session that does not hold the reported prefix; resetting it",
			"reused", reused, "position", sess.Position(), "prompt", len(g.prompt))
		if err := sess.Reset(); err != nil {
			return out, err
		}
		reused = 0
	}
	out.cachedTokens = reused
	seq, err := s.batch.Join(sess)
	if err != nil {
		return out, fmt.Errorf("join the batch: %w", err)
	}
	defer seq.Leave()

	s.metrics.started()
	start := time.Now()
	defer func() {
		d := time.Since(start)
		s.metrics.finished(out.promptTokens, out.cachedTokens, out.completionTokens, d)
		s.log.Info("generation", "prompt_tokens", out.promptTokens, "cached_tokens", out.cachedTokens,
			"completion_tokens", out.completionTokens, "finish", out.finishReason, "duration", d)
	}()
	if err := g.begin(); err != nil {
		return out, err
	}
	n := max(g.set.n, 1)
	prompt := g.prompt[reused:]
	sessions, steppers := []*runner.Session{sess}, []generate.Stepper{seq}
	if n > 1 {
		if err := seq.Append(ctx, prompt); err != nil {
			resetIfPoisoned(sess, err)
			return out, err
		}
		prompt = nil
		for i := 1; i < n; i++ {
			f, err := sess.Fork()
			if err != nil {
				return out, fmt.Errorf("fork the session for choice %d: %w", i, err)
			}
			defer f.Close()
			fseq, err := s.batch.Join(f)
			if err != nil {
				return out, fmt.Errorf("join the batch: %w", err)
			}
			defer fseq.Leave()
			sessions, steppers = append(sessions, f), append(steppers, fseq)
		}
	}
	results := s.generateChoices(ctx, g, sessions, steppers, prompt)
	var failed error
	for i, r := range results {
		out.completionTokens += r.tokens
		out.finishReasons = append(out.finishReasons, r.finish)
		if r.err == nil {
			continue
		}
		if i == 0 {
			resetIfPoisoned(sess, r.err)
		}
		// A choice stopped because a sibling failed reports a cancellation: the request
		// fails with the sibling's error.
		if failed == nil || errors.Is(failed, context.Canceled) && !errors.Is(r.err, context.Canceled) {
			failed = r.err
		}
	}
	if failed != nil {
		return out, failed
	}
	out.finishReason = out.finishReasons[0]
	return out, nil
}

// generateChoices generates one choice per session, concurrently when there are several.
func (s *Server) generateChoices(ctx context.Context, g generation, sessions []*runner.Session, steppers []generate.Stepper, prompt []int) []choiceResult {
	n := len(sessions)
	results := make([]choiceResult, n)
	if n == 1 {
		results[0] = s.generateChoice(ctx, g, 0, sessions[0], steppers[0], prompt)
		return results
	}
	// The request fails when one choice fails: the first failure (an error or a panic)
	// cancels the other choices, which stop at their next token instead of generating
	// text nobody receives.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A panic on a choice's goroutine would end the process: it is carried back to this
	// one, once every choice has stopped using its session, for the handler to recover.
	var wg sync.WaitGroup
	panics := make([]any, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if v := recover(); v != nil {
					panics[i] = fmt.Sprintf("choice %d: %v\n%s", i, v, debug.Stack())
					cancel()
				}
			}()
			results[i] = s.generateChoice(ctx, g, i, sessions[i], steppers[i], prompt)
			if results[i].err != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, v := range panics {
		if v != nil {
			panic(v)
		}
	}
	return results
}

func resetIfPoisoned(sess *runner.Session, err error) {
	var poisoned *runner.PoisonedError
	if errors.As(err, &poisoned) {
		sess.Reset()
	}
}

// choiceResult is what one choice produced.
type choiceResult struct {
	tokens int
	finish string
	err    error
}

// generateChoice generates choice i on sess (its prompt appended already, or prompt still
// to append), with its own sampler (seed + i), stop strings, grammar matcher and logprobs.
func (s *Server) generateChoice(ctx context.Context, g generation, i int, sess *runner.Session, step generate.Stepper, prompt []int) (r choiceResult) {
	opts := g.set.sampling
	opts.Seed += uint64(i)
	sampler, err := sample.New(opts)
	if err != nil {
		return choiceResult{err: badRequest("", "invalid_value", "%v", err)}
	}
	stops, err := sample.NewStopMatcher(g.set.stops)
	if err != nil {
		return choiceResult{err: badRequest("stop", "invalid_value", "%v", err)}
	}
	detok := s.o.Tokenizer.NewStream(true)
	if len(g.prompt) > 0 {
		// The prompt's last token primes the detokenizer, so the first new token keeps
		// its leading space (SentencePiece decoders strip it at the start of a text).
		detok.Prime(g.prompt[len(g.prompt)-1])
	}
	maxTokens := g.set.maxTokens
	if maxTokens == 0 {
		maxTokens = s.o.Runner.Planner().MaxNewTokens(len(g.prompt))
	}
	var constraint generate.Constraint
	var matcher *grammar.Matcher
	if g.set.format != nil {
		matcher = g.set.format.NewMatcherContext(ctx, s.vocab())
		constraint = matcher
	}
	var observe func(int, []float32, []uint64)
	if i < len(g.set.logprobs) {
		observe = g.set.logprobs[i].observe
	}
	lastToken := g.arrived
	res, err := generate.Run(ctx, sess, prompt, generate.Options{
		MaxTokens: maxTokens, Sampler: sampler, EOS: s.eos, Vocab: s.o.Tokenizer.VocabSize(), Stepper: step,
		Constraint: constraint,
		Observe:    observe,
		OnToken: func(tok int) error {
			now := time.Now()
			s.metrics.token(r.tokens == 0, now.Sub(lastToken))
			lastToken = now
			r.tokens++
			if hook := s.tokenHook.Load(); hook != nil {
				(*hook)(ctx)
			}
			if slices.Contains(s.eos, tok) {
				return nil
			}
			if g.raw != nil {
				g.raw(i, tok)
			}
			piece, err := detok.Add(tok)
			if err != nil {
				return err
			}
			text, stopped := stops.Push(piece)
			if text != "" {
				if err := g.emit(i, text); err != nil {
					return err
				}
			}
			if stopped {
				return generate.ErrStop
			}
			return nil
		},
	})
	if err == nil && matcher != nil && matcher.Err() != nil {
		// The matcher stopped (the client left, or the grammar needs more automaton than
		// its cache holds): the generation ended early, not at the grammar's end.
		err = matcher.Err()
		if errors.Is(err, grammar.ErrTooLarge) {
			err = badRequest("", "grammar_too_large", "the reply's grammar cannot be followed: %v; simplify it", err)
		}
	}
	if err != nil {
		r.err = err
		return r
	}
	r.finish = "stop"
	if res.Reason == generate.StopMaxTokens || res.Reason == generate.StopContextFull {
		r.finish = "length"
	}
	if _, stopped := stops.Stopped(); !stopped {
		text, stopped := stops.Push(detok.Flush())
		if stopped {
			r.finish = "stop"
		}
		if tail := text + stops.Flush(); tail != "" {
			if err := g.emit(i, tail); err != nil {
				r.err = err
			}
		}
	}
	return r
}

// generationError turns an error from run into the client's error.
func (s *Server) generationError(ctx context.Context, err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &apiError{Status: http.StatusGatewayTimeout, Type: typeServer, Code: "timeout",
			Message: fmt.Sprintf("generation took longer than this server's limit of %v; ask for fewer tokens", s.o.RequestTimeout)}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: http.StatusServiceUnavailable, Type: typeServer, Code: "cancelled",
			Message: "the request was cancelled (client gone or server shutting down)"}
	case errors.Is(err, runner.ErrContextFull):
		return badRequest("", "context_length_exceeded", "%v", err)
	}
	return &apiError{Status: http.StatusInternalServerError, Type: typeServer, Message: err.Error()}
}
