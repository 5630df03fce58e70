// Package generate runs the token generation loop over a runner session: it appends the
// prompt, picks each next token with a Sampler, stops on end-of-sequence ids, stop
// conditions or the context limit (docs/contract.md "Planning", rule 3), and reports why
// it stopped.
// It knows nothing about kernels, files or HTTP.
package generate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/sample"
)

// Stepper runs tokens through the session Run generates on and leaves that session's
// logits, tokens and position updated, as runner.Session.Append does. A batched sequence
// of the session (runner.Seq) is one: its steps share each weight read with other sessions.
type Stepper interface {
	Append(ctx context.Context, tokens []int) error
}

// Sampler picks the next token from a read-only logits view and the token history.
type Sampler interface {
	Sample(logits []float32, history []int) int
}

// Constraint restricts which tokens may come next (a grammar.Matcher is one): FillMask sets
// the bits of the allowed ids before each sampling, Accept follows the chosen token.
type Constraint interface {
	FillMask(allowed []uint64)
	Accept(token int) error
}

// MaskedSampler samples within a bitset of allowed ids (sample.Sampler is one); a Sampler
// used with a Constraint must be one.
type MaskedSampler interface {
	SampleMasked(logits []float32, history []int, allowed []uint64) int
}

// Greedy picks the argmax (lowest id on ties).
type Greedy struct{}

// Sample implements Sampler.
func (Greedy) Sample(logits []float32, _ []int) int { return max(sample.Argmax(logits), 0) }

// SampleMasked implements MaskedSampler: the argmax among the allowed ids (-1 if none).
func (Greedy) SampleMasked(logits []float32, _ []int, allowed []uint64) int {
	return sample.ArgmaxMasked(logits, allowed)
}

// StopReason says why generation ended.
type StopReason string

// Stop reasons.
const (
	StopEOS         StopReason = "eos"          // an end-of-sequence id was generated
	StopMaxTokens   StopReason = "max_tokens"   // the requested number of tokens was generated
	StopContextFull StopReason = "context_full" // the program's context has no room for more
	StopCondition   StopReason = "stop"         // the caller's token callback asked to stop
)

// ErrStop may be returned by an OnToken callback to end generation without error.
var ErrStop = errors.New("stop generation")

// Options configure Run.
type Options struct {
	// MaxTokens is the most new tokens to generate (≥ 1).
	MaxTokens int
	// Sampler picks tokens; nil means Greedy.
	Sampler Sampler
	// EOS ids end generation; the EOS token is reported to OnToken but not appended.
	EOS []int
	// OnToken is called with each new token; returning ErrStop ends generation.
	OnToken func(tok int) error
	// Vocab, when > 0, restricts sampling to ids below it: some checkpoints have more
	// output rows than their tokenizer has tokens (Gemma 3: 262,208 vs 262,145).
	Vocab int
	// Stepper runs the prompt and each new token; nil means the session itself.
	Stepper Stepper
	// Constraint, if set, restricts every token (structured output); Sampler must then be
	// a MaskedSampler, and nil means a greedy one.
	Constraint Constraint
	// Observe, if set, sees each chosen token with the logits it was drawn from and the
	// Constraint's mask (nil without one), before OnToken; for log-probabilities.
	Observe func(tok int, logits []float32, allowed []uint64)
}

// Result describes a finished generation.
type Result struct {
	Tokens       []int
	PromptTokens int
	Reason       StopReason
	// Clamped is set when MaxTokens exceeded what the context allows after the prompt.
	Clamped bool
}

// Run appends prompt to the session (which may already hold earlier tokens) and generates.
// The prompt may be empty only if the session already has logits from an earlier step.
func Run(ctx context.Context, s *runner.Session, prompt []int, opts Options) (Result, error) {
	if opts.MaxTokens < 1 {
		return Result{}, fmt.Errorf("generate: MaxTokens %d must be ≥ 1", opts.MaxTokens)
	}
	sampler := opts.Sampler
	if sampler == nil {
		sampler = Greedy{}
	}
	var masked MaskedSampler
	var mask []uint64
	if opts.Constraint != nil {
		var ok bool
		if masked, ok = sampler.(MaskedSampler); !ok {
			if _, greedy := sampler.(Greedy); !greedy {
				return Result{}, fmt.Errorf("generate: the sampler %T cannot apply a Constraint's mask", sampler)
			}
			masked = Greedy{}
		}
	}
	var step Stepper = s
	if opts.Stepper != nil {
		step = opts.Stepper
	}
	res := Result{PromptTokens: len(prompt)}
	if len(prompt) > 0 {
		if err := step.Append(ctx, prompt); err != nil {
			return res, err
		}
	} else if !s.Logits().Valid() {
		return res, fmt.Errorf("generate: empty prompt and no earlier step to continue from")
	}
	limit := s.Runner().Planner().MaxNewTokens(s.Position())
	n := opts.MaxTokens
	if n > limit {
		n, res.Clamped = limit, true
	}
	for k := 0; ; k++ {
		if k == n {
			res.Reason = StopMaxTokens
			if res.Clamped {
				res.Reason = StopContextFull
			}
			return res, nil
		}
		logits := s.Logits().View()
		if opts.Vocab > 0 && opts.Vocab < len(logits) {
			logits = logits[:opts.Vocab]
		}
		var tok int
		if opts.Constraint != nil {
			if words := (len(logits) + 63) / 64; len(mask) != words {
				mask = make([]uint64, words)
			}
			opts.Constraint.FillMask(mask)
			if tok = masked.SampleMasked(logits, s.Tokens(), mask); tok < 0 {
				// The constraint is complete and the model has no end-of-sequence id to say
				// so: the output is whole.
				res.Reason = StopCondition
				return res, nil
			}
			if err := opts.Constraint.Accept(tok); err != nil {
				return res, fmt.Errorf("generate: %w", err)
			}
		} else {
			tok = sampler.Sample(logits, s.Tokens())
		}
		res.Tokens = append(res.Tokens, tok)
		if opts.Observe != nil {
			if opts.Constraint != nil {
				opts.Observe(tok, logits, mask)
			} else {
				opts.Observe(tok, logits, nil)
			}
		}
		if opts.OnToken != nil {
			if err := opts.OnToken(tok); err != nil {
				if errors.Is(err, ErrStop) {
					res.Reason = StopCondition
					return res, nil
				}
				return res, err
			}
		}
		if slices.Contains(opts.EOS, tok) {
			res.Reason = StopEOS
			return res, nil
		}
		if k == n-1 {
			continue // the last token is not appended: nothing reads its logits
		}
		if err := step.Append(ctx, []int{tok}); err != nil {
			return res, err
		}
	}
}
