package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/internal/ort"
	"github.com/hfstatic/hfstatic/models"
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

// loadModes are the values of --load.
var loadModes = map[string]func(string) (*mmap.File, error){
	"mmap":       mmap.Open,
	"mmap-plain": func(p string) (*mmap.File, error) { return mmap.OpenWith(p, mmap.Options{}) },
	"copy":       mmap.Load,
}

// checkRootFlags rejects values of the root flags that no command could use, whether or
// not the command reads a program file.
func checkRootFlags() error {
	if loadModes[loadMode] == nil {
		return usagef("--load %q: want mmap, mmap-plain or copy", loadMode)
	}
	if executorName != engine.ExecutorGo && executorName != engine.ExecutorORT {
		return usagef("--executor %q: want go or ort", executorName)
	}
	return nil
}

// executorName and ortLib are the root --executor and --ort-lib flags.
var executorName, ortLib = engine.ExecutorGo, ""

// notes receives what commands say on the side (the command's standard error).
var notes io.Writer = os.Stderr

// openProgram opens a command's PROGRAM argument: a program file as --load says; a model
// name (ORG/NAME[@REVISION]) as its program in the program cache, exported once; a Hugging
// Face folder exported in memory (with a note saying how to save the export); or, for "",
// the embedded default model. e holds the command's export flags (nil: it has none); given
// with a program file, they are a usage error, since a program's shape is fixed.
func openProgram(cmd *cobra.Command, arg string, threads int, e *exportFlags) (*loaded, error) {
	ctx := cmd.Context()
	if threads < 1 {
		return nil, usagef("--threads %d must be ≥ 1", threads)
	}
	if err := checkRootFlags(); err != nil {
		return nil, err
	}
	if executorName == engine.ExecutorORT && !ort.Supported {
		return nil, usagef("--executor ort: %w", &ort.LibraryError{Path: ortLib, NotBuilt: true})
	}
	if executorName == engine.ExecutorORT && ortLib == "" {
		return nil, usagef("--executor ort needs ONNX Runtime's library: %s", ort.LibraryHint())
	}
	var given []string
	if e == nil {
		e = &exportFlags{prefill: hfstatic.DefaultPrefill}
	} else {
		if err := e.check(); err != nil {
			return nil, err
		}
		given = e.given(cmd.Flags())
	}
	opts := hfstatic.Options{Threads: threads, Executor: executorName, ORTLib: ortLib}
	path, name := arg, arg
	switch {
	case arg != "" && isModelName(arg):
		p, err := nameProgram(cmd, arg, *e)
		if err != nil {
			return nil, err
		}
		path, given = p, nil
	case arg == "" && len(given) > 0:
		// The embedded folder exported in memory with these options (OpenEmbedded's own are
		// fixed).
		opts.Export = hfstatic.ExportOptions{Weights: e.weights, Context: cmp.Or(e.context, 512), Prefill: e.inMemoryPrefill(cmd.Flags()), CacheDType: "f32", Model: "stories260K"}
		m, err := hfstatic.LoadCheckpoint(ctx, models.Stories260K(), opts)
		if err != nil {
			return nil, fmt.Errorf("embedded model: %w", err)
		}
		return &loaded{Model: m.Engine(), public: m, name: DefaultModelName}, nil
	case arg == "":
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
		if len(given) > 0 {
			opts.Export = hfstatic.ExportOptions{Weights: e.weights, Context: e.context, Prefill: e.inMemoryPrefill(cmd.Flags())}
		}
		m, err := hfstatic.OpenFolder(ctx, path, opts)
		if err != nil {
			return nil, err
		}
		return &loaded{Model: m.Engine(), public: m, name: path}, nil
	}
	if len(given) > 0 {
		return nil, usagef("%s choose how a model is exported; %s is a program, whose shape and weights are fixed (export the model again to change them)", strings.Join(given, ", "), path)
	}
	f, err := loadModes[loadMode](path)
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
	return &loaded{Model: m.Engine(), public: m, name: name, file: f}, nil
}

// errGGUF is hfstatic.ErrGGUF in the command's words.
var errGGUF = fmt.Errorf("%w; with a Hugging Face folder, run `hfstatic export DIR -o PROGRAM` (or give the folder itself)", hfstatic.ErrGGUF)
