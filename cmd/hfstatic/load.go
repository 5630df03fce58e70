package main

import (
	"bytes"
	"context"
	"fmt"
	"runtime"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// DefaultModelName is shown where the embedded model stands in for a program path.
const DefaultModelName = "stories260K (embedded)"

// loaded is a program opened for running, with what must be released afterwards.
type loaded struct {
	*engine.Model
	name string
	file *mmap.File // the program file's mapping; nil for the embedded model
}

func (l *loaded) Close() error {
	err := l.Model.Close()
	if l.file != nil {
		if e := l.file.Close(); err == nil {
			err = e
		}
	}
	return err
}

func defaultThreads() int { return runtime.NumCPU() }

// loadMode is the root --load flag: how program files are brought into memory.
var loadMode = "mmap"

// openProgram opens path as --load says, or exports the embedded default model in
// memory when path is empty.
func openProgram(ctx context.Context, path string, threads int) (*loaded, error) {
	mode := loadMode
	if threads < 1 {
		return nil, usagef("--threads %d must be ≥ 1", threads)
	}
	opts := engine.Options{Threads: threads}
	if path == "" {
		data, err := defaultProgram(ctx)
		if err != nil {
			return nil, err
		}
		m, err := engine.Load(data, opts)
		if err != nil {
			return nil, err
		}
		return &loaded{Model: m, name: DefaultModelName}, nil
	}
	var open func(string) (*mmap.File, error)
	switch mode {
	case "mmap":
		open = mmap.Open
	case "mmap-plain":
		open = func(p string) (*mmap.File, error) { return mmap.OpenWith(p, mmap.Options{}) }
	case "copy":
		open = mmap.Load
	default:
		return nil, usagef("--load %q: want mmap, mmap-plain or copy", mode)
	}
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	m, err := engine.Load(f.Bytes(), opts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &loaded{Model: m, name: path, file: f}, nil
}

// defaultProgram exports the embedded stories260K checkpoint.
func defaultProgram(ctx context.Context) ([]byte, error) {
	ckpt, err := hf.Open(models.Stories260K())
	if err != nil {
		return nil, fmt.Errorf("embedded model: %w", err)
	}
	defer ckpt.Close()
	var buf bytes.Buffer
	_, err = export.Export(ctx, ckpt, &buf, export.Options{Context: 512, Prefill: 32, CacheDType: program.F32})
	if err != nil {
		return nil, fmt.Errorf("embedded model: %w", err)
	}
	// The executor views tensors in place: give it 64-byte aligned memory.
	aligned, err := runner.HeapAllocator{}.Alloc(buf.Len())
	if err != nil {
		return nil, err
	}
	copy(aligned, buf.Bytes())
	return aligned, nil
}
