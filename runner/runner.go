// Package runner drives any program that satisfies a registered I/O contract (hf_static
// v1, see docs/contract.md). It owns the contract registry and its load-time checks, the
// planner (appends become prefill and decode steps, with padding and the context-tail
// decode fallback), sessions (caches, counters, positions, logits, poison and Reset,
// Inspect, Rewind, Fork, Save/Restore bound to the program's fingerprint), a Pool that
// adopts the session with the longest common token prefix, a Batcher that runs the steps
// of several sessions together (continuous batching, through an Executor's optional
// BatchExecutor capability), and the Allocator through which every I/O buffer is obtained.
//
// It does not know kernels, files, tokenizers or HTTP: methods are executed through the
// small Executor interface, and session files are plain io.Reader/io.Writer streams.
package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/hfstatic/hfstatic/program"
)

// ErrNotGenerative is returned (wrapped) by New for an hf_encode program, and
// ErrNotEncoder by NewEncoder for an hf_static one.
var (
	ErrNotGenerative = errors.New("not a generative program")
	ErrNotEncoder    = errors.New("not an embedding or scoring program")
)

// Step is one method bound to a session's buffers.
type Step interface {
	// Run executes the method once over the bound buffers.
	Run(ctx context.Context) error
}

// Executor binds a program's methods to buffers.
type Executor interface {
	// Bind binds every input and output of the named method, by name. A buffer that is
	// both an input and an output appears once and is mutated in place.
	Bind(method string, buffers map[string][]byte) (Step, error)
}

// PaddingExecutor is an optional capability of an Executor: ComputesPadding reports that a
// step costs all of its rows, padding included (a fixed-shape graph on another engine), so
// that the runner sends one-token appends through the decode method (Planner.DecodeSingle).
// hfstatic's own executor computes only the real rows and does not implement it.
type PaddingExecutor interface {
	ComputesPadding() bool
}

// Options configure a Runner.
type Options struct {
	// Allocator provides session buffers; nil means a PageAllocator.
	Allocator Allocator
}

// Runner drives one program.
type Runner struct {
	man         *program.Manifest
	fingerprint string
	exe         Executor
	alloc       Allocator
	planner     Planner
	decode      *program.Method
	prefill     *program.Method // nil when absent
}

// New validates the manifest against its contract and returns a runner.
// fingerprint identifies the program (program.File.Fingerprint); it must not be empty.
func New(m *program.Manifest, fingerprint string, exe Executor, opts Options) (*Runner, error) {
	switch {
	case m == nil:
		return nil, errors.New("runner: nil manifest")
	case exe == nil:
		return nil, errors.New("runner: nil Executor")
	case fingerprint == "":
		return nil, errors.New("runner: empty fingerprint (saved sessions are bound to it; pass program.File.Fingerprint)")
	}
	if err := ValidateContract(m); err != nil {
		return nil, err
	}
	if c := m.Metadata.Contract; c != program.ContractName {
		return nil, fmt.Errorf("runner: the program follows %s v%d, not %s: its models embed or score text and do not generate (drive it with NewEncoder): %w",
			c, m.Metadata.Version, program.ContractName, ErrNotGenerative)
	}
	r := &Runner{man: m, fingerprint: fingerprint, exe: exe, alloc: opts.Allocator}
	if r.alloc == nil {
		r.alloc = &PageAllocator{}
	}
	r.decode, _ = m.Method(program.MethodDecode)
	r.prefill, _ = m.Method(program.MethodPrefill)
	r.planner = Planner{Context: m.Metadata.MaxContext}
	if r.prefill != nil {
		r.planner.Prefill = r.prefill.Step
	}
	if pe, ok := exe.(PaddingExecutor); ok && pe.ComputesPadding() {
		r.planner.DecodeSingle = true
	}
	return r, nil
}

// Metadata is the program's contract metadata.
func (r *Runner) Metadata() program.Metadata { return r.man.Metadata }

// Shape is the planning shape (context, prefill step).
func (r *Runner) Planner() Planner { return r.planner }

// Fingerprint identifies the program; saved sessions are bound to it.
func (r *Runner) Fingerprint() string { return r.fingerprint }

// PrefillLogitsAll reports whether the prefill method returns logits for every row.
func (r *Runner) PrefillLogitsAll() bool {
	return r.prefill != nil && r.prefill.Logits == program.LogitsAll
}

// SessionBytes is the memory one session's I/O buffers take.
func (r *Runner) SessionBytes() int64 {
	var n int64
	seen := map[string]bool{}
	for _, mt := range []*program.Method{r.decode, r.prefill} {
		if mt == nil {
			continue
		}
		for _, list := range [][]program.IO{mt.Inputs, mt.Outputs} {
			for _, b := range list {
				key := b.Name
				if !isState(b.Name) {
					key = mt.Name + "/" + b.Name
				}
				if !seen[key] {
					seen[key] = true
					n += int64(b.Bytes())
				}
			}
		}
	}
	return n
}

// isState reports whether a buffer is shared session state (caches, counters) rather
// than per-method I/O.
func isState(name string) bool {
	switch name {
	case program.InputIDs, program.AttentionMask, program.PositionIDs, program.Logits:
		return false
	}
	return true
}

func (r *Runner) String() string {
	return fmt.Sprintf("runner(%s v%d, C=%d, P=%d)", r.man.Metadata.Contract, r.man.Metadata.Version, r.planner.Context, r.planner.Prefill)
}
