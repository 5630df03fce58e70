package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/internal/ort"
)

// DefaultModelName is shown where the embedded model stands in for a program path.
const DefaultModelName = hfstatic.EmbeddedName

// loaded is a program opened for running, with what must be released afterwards.
type loaded struct {
	*engine.Model
	public *hfstatic.Model
	name   string
	file   *mmap.File // the program file's mapping; nil for a program in memory
}

func (l *loaded) Close() error {
	err := l.public.Close()
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

// executorName and ortLib are the root --executor and --ort-lib flags.
var executorName, ortLib = engine.ExecutorGo, ""

// ortProvider is the root --ort-provider flag.
var ortProvider = string(ort.ProviderCPU)

// notes receives what commands say on the side (the command's standard error).
var notes io.Writer = os.Stderr

// openProgram opens path as --load says; exports a Hugging Face folder in memory (with a
// note saying how to save the export); or exports the embedded default model in memory when
// path is empty.
func openProgram(ctx context.Context, path string, threads int) (*loaded, error) {
	if threads < 1 {
		return nil, usagef("--threads %d must be ≥ 1", threads)
	}
	switch executorName {
	case engine.ExecutorGo:
	case engine.ExecutorORT:
		if ortLib == "" {
			return nil, usagef("--executor ort needs ONNX Runtime's library: give --ort-lib PATH or set HFSTATIC_ORT_LIB (npm install --ignore-scripts onnxruntime-node@%s.0 ships it under node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1)", ort.Version)
		}
	default:
		return nil, usagef("--executor %q: want go or ort", executorName)
	}
	if _, err := ort.ParseProvider(ortProvider); err != nil {
		return nil, usagef("--ort-provider: %v", err)
	}
	opts := hfstatic.Options{Threads: threads, Executor: executorName, ORTLib: ortLib, ORTProvider: ortProvider}
	if path == "" {
		m, err := hfstatic.OpenEmbedded(ctx, opts)
		if err != nil {
			return nil, err
		}
		return &loaded{Model: m.Engine(), public: m, name: DefaultModelName}, nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "config.json")); err != nil {
			return nil, fmt.Errorf("%s is a directory without config.json: give a program file (hfstatic export writes one) or a Hugging Face model folder", path)
		}
		fmt.Fprintf(notes, "%s is a Hugging Face folder: exporting it in memory (hfstatic export %s -o PROGRAM saves a program that opens at once)\n", path, path)
		m, err := hfstatic.OpenFolder(ctx, path, opts)
		if err != nil {
			return nil, err
		}
		return &loaded{Model: m.Engine(), public: m, name: path}, nil
	}
	var open func(string) (*mmap.File, error)
	switch loadMode {
	case "mmap":
		open = mmap.Open
	case "mmap-plain":
		open = func(p string) (*mmap.File, error) { return mmap.OpenWith(p, mmap.Options{}) }
	case "copy":
		open = mmap.Load
	default:
		return nil, usagef("--load %q: want mmap, mmap-plain or copy", loadMode)
	}
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	m, err := hfstatic.Load(f.Bytes(), opts)
	if err != nil {
		f.Close()
		if errors.Is(err, hfstatic.ErrGGUF) {
			return nil, fmt.Errorf("%s: %w", path, errGGUF)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &loaded{Model: m.Engine(), public: m, name: path, file: f}, nil
}

// errGGUF is hfstatic.ErrGGUF in the command's words.
var errGGUF = fmt.Errorf("%w; with a Hugging Face folder, run `hfstatic export DIR -o PROGRAM` (or give the folder itself)", hfstatic.ErrGGUF)
