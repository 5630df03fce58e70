package runner

import (
	"errors"
	"fmt"
)

// ErrContextFull is returned (wrapped, with both numbers) when tokens would not fit in the
// program's context.
var ErrContextFull = errors.New("context full")

// ErrEmpty is returned when asked to append no tokens.
var ErrEmpty = errors.New("no tokens to append")

// Planner plans appends over a program's fixed shapes: the context C and the prefill step P
// (docs/contract.md "Planning").
type Planner struct {
	Context int // C
	Prefill int // P; 0 when the program has no prefill method
	// DecodeSingle sends a one-token append through the decode method even where a prefill
	// step fits, for executors whose steps cost all their rows, padding included (a
	// fixed-shape delegate: see PaddingExecutor). The results are the same (prefill ≡ decode).
	DecodeSingle bool
}

// Chunk is one method call of a plan.
type Chunk struct {
	Prefill bool // prefill method (else decode)
	Pos     int  // absolute position of the step's first row
	N       int  // real rows (the rest of a prefill step is padding)
}

// CheckAppend reports whether m tokens can be appended at pos (docs/contract.md "Planning", rule 1).
func (sh Planner) CheckAppend(pos, m int) error {
	if m < 1 {
		return ErrEmpty
	}
	if pos+m > sh.Context {
		return fmt.Errorf("%w: %d tokens at position %d need %d positions, the program's context is %d", ErrContextFull, m, pos, pos+m, sh.Context)
	}
	return nil
}

// Next is the next step for `remaining` tokens at pos: a prefill step while a prefill
// method exists and pos+P ≤ C, else a decode step (the context-tail fallback).
// It assumes CheckAppend passed.
func (sh Planner) Next(pos, remaining int) Chunk {
	if sh.Prefill > 0 && pos+sh.Prefill <= sh.Context && !(sh.DecodeSingle && remaining == 1) {
		return Chunk{Prefill: true, Pos: pos, N: min(sh.Prefill, remaining)}
	}
	return Chunk{Pos: pos, N: 1}
}

// Plan returns every step that appending m tokens at pos takes, or an error (and no steps)
// when it is infeasible. It is a pure function.
func (sh Planner) Plan(pos, m int) ([]Chunk, error) {
	if err := sh.CheckAppend(pos, m); err != nil {
		return nil, err
	}
	var steps []Chunk
	for m > 0 {
		st := sh.Next(pos, m)
		steps = append(steps, st)
		pos += st.N
		m -= st.N
	}
	return steps, nil
}

// MaxNewTokens is how many tokens can be generated after a prompt that ends at pos:
// generating k tokens appends k-1 of them, so pos + k - 1 ≤ C (docs/contract.md "Planning", rule 3).
func (sh Planner) MaxNewTokens(pos int) int {
	return max(0, sh.Context-pos+1)
}
