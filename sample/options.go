// Package sample picks the next token from a row of logits: greedy or
// seeded random sampling with Hugging Face's penalties and filters, and
// StopMatcher, which finds stop strings in streamed text.
//
// It owns the order penalties → temperature → top-k → top-p → min-p →
// draw (as Hugging Face's generate applies them) and keeps its own PRNG so a
// seed reproduces a run. It does not compute logits, decode tokens to text
// or decide when generation ends beyond stop strings.
package sample

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidOption is wrapped by every *OptionError.
var ErrInvalidOption = errors.New("sample: invalid option")

// OptionError names the Options field that is out of range.
type OptionError struct {
	Field  string
	Value  any
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("sample: Options.%s = %v: %s", e.Field, e.Value, e.Reason)
}

func (e *OptionError) Unwrap() error { return ErrInvalidOption }

// Options configures a Sampler. The zero value is greedy decoding with no
// penalties; every zero field means "off".
type Options struct {
	// Temperature divides the logits before the filters and the draw.
	// 0 means greedy: the highest (penalised) logit, ties to the lowest id.
	// Must be finite and >= 0.
	Temperature float32
	// TopP keeps the smallest set of most likely tokens whose probability
	// mass reaches TopP. 0 means off (same as 1); otherwise in (0, 1].
	TopP float32
	// MinP drops tokens whose probability is below MinP times the most
	// likely token's. 0 means off; otherwise in (0, 1].
	MinP float32
	// TopK keeps the TopK most likely tokens; a tie at the boundary goes to
	// the lower ids, so exactly TopK stay (Hugging Face keeps every token
	// tied with the k-th). 0 means off; must be >= 0.
	TopK int
	// RepetitionPenalty (Hugging Face / CTRL) divides the positive logits
	// and multiplies the negative logits of every token in history.
	// 0 means off (same as 1); otherwise finite and > 0.
	RepetitionPenalty float32
	// PresencePenalty is subtracted once from the logit of every token in
	// history; FrequencyPenalty is subtracted once per occurrence (OpenAI's
	// definitions). 0 means off; each must be in [-2, 2].
	PresencePenalty, FrequencyPenalty float32
	// Seed seeds the sampler's own PRNG: the same seed, options, logits and
	// history give the same tokens.
	Seed uint64
}

// Validate reports the first out-of-range field as an *OptionError.
func (o Options) Validate() error {
	bad := func(field string, v any, reason string) error {
		return &OptionError{Field: field, Value: v, Reason: reason}
	}
	finite := func(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }
	switch {
	case !finite(o.Temperature) || o.Temperature < 0:
		return bad("Temperature", o.Temperature, "must be finite and >= 0 (0 means greedy)")
	case !finite(o.TopP) || o.TopP < 0 || o.TopP > 1:
		return bad("TopP", o.TopP, "must be in (0, 1], or 0 for off")
	case !finite(o.MinP) || o.MinP < 0 || o.MinP > 1:
		return bad("MinP", o.MinP, "must be in (0, 1], or 0 for off")
	case o.TopK < 0:
		return bad("TopK", o.TopK, "must be >= 0 (0 means off)")
	case !finite(o.RepetitionPenalty) || o.RepetitionPenalty < 0:
		return bad("RepetitionPenalty", o.RepetitionPenalty, "must be finite and > 0 (1 or 0 means off)")
	case !finite(o.PresencePenalty) || o.PresencePenalty < -2 || o.PresencePenalty > 2:
		return bad("PresencePenalty", o.PresencePenalty, "must be in [-2, 2]")
	case !finite(o.FrequencyPenalty) || o.FrequencyPenalty < -2 || o.FrequencyPenalty > 2:
		return bad("FrequencyPenalty", o.FrequencyPenalty, "must be in [-2, 2]")
	}
	return nil
}
