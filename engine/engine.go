// Package engine wires the pieces together for applications: it decodes a program held in
// memory (typically mmapped), loads it into an executor (the Go CPU executor, or ONNX
// Runtime over the program's ONNX graphs) and returns a runner for it.
// It adds no policy of its own.
package engine

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/hfstatic/hfstatic/internal/exec"
	"github.com/hfstatic/hfstatic/internal/ort"
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
	// Executor runs the methods: ExecutorGo ("" means it) or ExecutorORT.
	Executor string
	// ORTLib is the path of ONNX Runtime's shared library, for ExecutorORT.
	ORTLib string
}

// Executors.
const (
	// ExecutorGo runs the op lists on hfstatic's own kernels (internal/exec).
	ExecutorGo = "go"
	// ExecutorORT runs the program's ONNX graphs on ONNX Runtime (internal/ort); the
	// program must have been exported with --delegate onnx, and the binary built with the
	// ort tag (without it Load returns an *ort.LibraryError saying how to get one).
	ExecutorORT = "ort"
)

// Model is a loaded program ready to run.
type Model struct {
	File   *program.File
	Runner *runner.Runner
	exec   io.Closer // *exec.Program or *ort.Executor
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
	var x io.Closer
	var exe runner.Executor
	switch opts.Executor {
	case "", ExecutorGo:
		p, err := exec.Load(f, xopts)
		if err != nil {
			return nil, err
		}
		x, exe = p, &executor{p: p}
	case ExecutorORT:
		lib, err := ort.Open(opts.ORTLib)
		if err != nil {
			return nil, err
		}
		e, err := ort.New(lib, f, ort.Options{Threads: opts.Threads})
		if err != nil {
			return nil, err
		}
		x, exe = e, e
	default:
		return nil, fmt.Errorf("engine: Options.Executor %q: want %q or %q", opts.Executor, ExecutorGo, ExecutorORT)
	}
	r, err := runner.New(&f.Manifest, f.Fingerprint, exe, runner.Options{Allocator: opts.Allocator})
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
