// Package engine wires the pieces together for applications: it decodes a program held in
// memory (typically mmapped), loads it into the CPU executor and returns a runner for it.
// It adds no policy of its own.
package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/hfstatic/hfstatic/internal/exec"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// Options configure Load.
type Options struct {
	// Threads for matrix products; must be ≥ 1.
	Threads int
	// Allocator for session buffers; nil means a runner.PageAllocator.
	Allocator runner.Allocator
	// SkipDataChecksums skips verifying tensor checksums at load.
	SkipDataChecksums bool
}

// Model is a loaded program ready to run.
type Model struct {
	File   *program.File
	Runner *runner.Runner
	exec   *exec.Program
}

// Load decodes, validates and loads a program. data must stay valid and unmodified until
// Close.
func Load(data []byte, opts Options) (*Model, error) {
	return load(data, opts, exec.Options{Threads: opts.Threads})
}

func load(data []byte, opts Options, xopts exec.Options) (*Model, error) {
	f, err := program.Decode(data, program.DecodeOptions{SkipDataChecksums: opts.SkipDataChecksums, Workers: opts.Threads})
	if err != nil {
		return nil, err
	}
	if err := runner.ValidateContract(&f.Manifest); err != nil {
		return nil, err
	}
	x, err := exec.Load(f, xopts)
	if err != nil {
		return nil, err
	}
	r, err := runner.New(&f.Manifest, f.Fingerprint, &executor{p: x}, runner.Options{Allocator: opts.Allocator})
	if err != nil {
		x.Close()
		return nil, err
	}
	return &Model{File: f, Runner: r, exec: x}, nil
}

// Close stops the executor's threads.
func (m *Model) Close() error { return m.exec.Close() }

// executor adapts an exec.Program to runner.Executor and runner.BatchExecutor.
type executor struct {
	p     *exec.Program
	mu    sync.Mutex   // guards steps
	steps []*exec.Step // RunBatch's steps, reused
}

func (e *executor) Bind(name string, bufs map[string][]byte) (runner.Step, error) {
	m, ok := e.p.Method(name)
	if !ok {
		return nil, fmt.Errorf("program has no method %q", name)
	}
	return m.Bind(bufs)
}

// RunBatch runs steps bound by Bind as one pass.
func (e *executor) RunBatch(ctx context.Context, steps []runner.Step, errs []error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.steps = e.steps[:0]
	for i, st := range steps {
		s, ok := st.(*exec.Step)
		if !ok {
			errs[i] = fmt.Errorf("engine: RunBatch: step %d was not bound by this executor", i)
			s = nil
		}
		e.steps = append(e.steps, s)
	}
	e.p.RunBatch(ctx, e.steps, errs)
}
