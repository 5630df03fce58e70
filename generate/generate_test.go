package generate_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/runner"
)

// countingStepper appends through the session and records each call's token count; it
// fails the call numbered failAt (1-based) when failAt > 0.
type countingStepper struct {
	s      *runner.Session
	calls  []int
	failAt int
}

var errStep = errors.New("step refused")

func (c *countingStepper) Append(ctx context.Context, tokens []int) error {
	c.calls = append(c.calls, len(tokens))
	if len(c.calls) == c.failAt {
		return errStep
	}
	return c.s.Append(ctx, tokens)
}

func newSession(t *testing.T) *runner.Session {
	t.Helper()
	m, err := hfstatic.OpenEmbedded(context.Background(), hfstatic.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s, err := m.Engine().Runner.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStepperRunsThePromptAndEveryTokenButTheLast(t *testing.T) {
	prompt := []int{1, 403, 407, 261, 378}
	alone, err := generate.Run(context.Background(), newSession(t), prompt, generate.Options{MaxTokens: 12})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t)
	step := &countingStepper{s: s}
	via, err := generate.Run(context.Background(), s, prompt, generate.Options{MaxTokens: 12, Stepper: step})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(alone.Tokens, via.Tokens) {
		t.Errorf("through a Stepper: %v, want %v as through the session", via.Tokens, alone.Tokens)
	}
	want := []int{len(prompt)}
	for range len(via.Tokens) - 1 {
		want = append(want, 1)
	}
	if !slices.Equal(step.calls, want) {
		t.Errorf("Stepper calls (tokens each) %v, want %v", step.calls, want)
	}
}

func TestStepperErrorEndsTheRun(t *testing.T) {
	s := newSession(t)
	step := &countingStepper{s: s, failAt: 3}
	res, err := generate.Run(context.Background(), s, []int{1, 403, 407}, generate.Options{MaxTokens: 10, Stepper: step})
	if !errors.Is(err, errStep) {
		t.Fatalf("err = %v, want the Stepper's error", err)
	}
	if len(res.Tokens) != 2 {
		t.Errorf("%d tokens, want 2 (the failed third call appended the second)", len(res.Tokens))
	}
}
