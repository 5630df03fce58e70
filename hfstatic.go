// Package hfstatic is the embedding API: open a model, generate text, chat.
//
//	m, err := hfstatic.OpenEmbedded(ctx, hfstatic.Options{})  // or Open("model.hfs", …), OpenFolder(dir, …)
//	if err != nil { … }
//	defer m.Close()
//	res, err := m.Generate(ctx, "Once upon a time", hfstatic.GenerateOptions{MaxTokens: 40})
//
// A model comes from one of three places: a program file written by `hfstatic export`
// (Open maps it into memory, zero-copy), the stories260K model embedded in this module
// (OpenEmbedded), or a Hugging Face folder with config.json, *.safetensors and
// tokenizer.json (OpenFolder exports it in memory first, which takes as long as
// `hfstatic export` does). Generate continues a prompt; Chat and NewChat render
// conversations with the program's chat template.
//
// This package owns the common path only. The layers under it stay public for what it does
// not cover: Model.Engine gives the program (package program) and its runner (package
// runner: sessions that append, fork, rewind, save and restore, pools of sessions), and
// packages generate, sample and tokenizer are the loop, the samplers and the tokenizer.
package hfstatic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// EmbeddedName names the embedded model.
const EmbeddedName = "stories260K (embedded)"

// DefaultPrefill is the prefill step of programs exported in memory, and of
// `hfstatic export` without --prefill: prompts run in chunks of 64 tokens (`hfstatic export
// --help` says how that size was chosen).
const DefaultPrefill = 64

// Options configure how a model is opened. The zero value maps program files and runs on
// every CPU.
type Options struct {
	// Threads for matrix products; 0 means one per CPU (runtime.NumCPU).
	Threads int
	// Load says how Open brings a program file into memory; "" means LoadMapped.
	Load LoadMode
	// Allocator for session buffers; nil means a runner.PageAllocator.
	Allocator runner.Allocator
	// Export configures the in-memory export of OpenFolder and LoadCheckpoint.
	Export ExportOptions
	// Executor runs the program: "" or "go" for hfstatic's own kernels, "ort" for ONNX
	// Runtime over the program's ONNX graphs (export with --delegate onnx; only in builds
	// with the ort tag, docs/delegate.md: others return an error saying so).
	Executor string
	// ORTLib is the path of ONNX Runtime's shared library (libonnxruntime.so), for "ort".
	ORTLib string
}

// LoadMode says how a program file is brought into memory.
type LoadMode string

// Load modes.
const (
	// LoadMapped maps the file read-only, zero-copy, in 2 MiB pages where the kernel can.
	LoadMapped LoadMode = "mmap"
	// LoadMappedPlain maps the file read-only, zero-copy, with the page cache as it is.
	LoadMappedPlain LoadMode = "mmap-plain"
	// LoadCopied reads the file into (huge-page) memory.
	LoadCopied LoadMode = "copy"
)

// ExportOptions configure Export, and the in-memory export of OpenFolder and
// LoadCheckpoint. The zero value exports the checkpoint's
// weights with float16 caches, the model's own context (capped at 4096) and DefaultPrefill.
type ExportOptions struct {
	// Context is the program's capacity in tokens; 0 means the model's
	// max_position_embeddings capped at 4096.
	Context int
	// Prefill is the prefill step; 0 means DefaultPrefill.
	Prefill int
	// Weights is f32, f16, bf16, q8 or q4; "" keeps the checkpoint's float type.
	Weights string
	// CacheDType is f16 or f32; "" means f16.
	CacheDType string
	// Model names the model in the program's metadata (`hfstatic inspect` shows it);
	// OpenFolder uses the folder's name when it is "".
	Model string
}

// Errors for inputs that are not programs; match them with errors.Is.
var (
	// ErrFolder: a Hugging Face folder was given where a program file was expected.
	ErrFolder = errors.New("this is a Hugging Face folder, not a program: run `hfstatic export DIR -o PROGRAM` first (or open it with OpenFolder)")
	// ErrGGUF: a GGUF file (llama.cpp's format) was given.
	ErrGGUF = errors.New("this is a GGUF file (llama.cpp's format): hfstatic takes Hugging Face safetensors folders (config.json, *.safetensors, tokenizer.json) and the programs it exports from them; download the model's original Hugging Face repository (transformers can also turn a GGUF file back into one: from_pretrained(..., gguf_file=...) then save_pretrained, dequantized)")
	// ErrNoTokenizer: the program was exported without tokenizer files.
	ErrNoTokenizer = engine.ErrNoTokenizer
	// ErrNoChatTemplate: the program carries no chat template.
	ErrNoChatTemplate = engine.ErrNoChatTemplate
)

// Model is an opened program, ready to generate. Its methods are safe for concurrent use;
// each generation runs in its own session.
type Model struct {
	eng  *engine.Model
	name string
	file *mmap.File // the program file's mapping; nil when the program is in memory
	mode LoadMode
	tok  *tokenizer.Tokenizer
	// tokErr is why tok is nil.
	tokErr error
}

// Open maps the program file at path (see Options.Load) and loads it.
func Open(path string, opts Options) (*Model, error) {
	if err := checkProgramPath(path); err != nil {
		return nil, err
	}
	var f *mmap.File
	var err error
	switch opts.Load {
	case LoadMapped, "":
		f, err = mmap.Open(path)
	case LoadMappedPlain:
		f, err = mmap.OpenWith(path, mmap.Options{})
	case LoadCopied:
		f, err = mmap.Load(path)
	default:
		return nil, fmt.Errorf("hfstatic: Options.Load %q: want %q, %q or %q", opts.Load, LoadMapped, LoadMappedPlain, LoadCopied)
	}
	if err != nil {
		return nil, err
	}
	m, err := load(f.Bytes(), path, opts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m.file, m.mode = f, opts.Load
	return m, nil
}

// checkProgramPath tells a Hugging Face folder and a GGUF file from a program before they
// are mapped, so the error says what the input is.
func checkProgramPath(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		if _, err := os.Stat(path + "/config.json"); err == nil {
			return fmt.Errorf("%s: %w", path, ErrFolder)
		}
		return fmt.Errorf("%s is a directory, not a program file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err == nil && string(magic) == "GGUF" {
		return fmt.Errorf("%s: %w", path, ErrGGUF)
	}
	return nil
}

// Load loads a program held in memory. data must be 64-byte aligned (as mapped files and
// runner.HeapAllocator memory are) and stay valid and unmodified until Close.
func Load(data []byte, opts Options) (*Model, error) {
	return load(data, "", opts)
}

func load(data []byte, name string, opts Options) (*Model, error) {
	threads := opts.Threads
	switch {
	case threads == 0:
		threads = runtime.NumCPU()
	case threads < 0:
		return nil, fmt.Errorf("hfstatic: Options.Threads %d: want ≥ 1, or 0 for one per CPU", threads)
	}
	if len(data) >= 4 && string(data[:4]) == "GGUF" {
		return nil, ErrGGUF
	}
	eng, err := engine.Load(data, engine.Options{Threads: threads, Allocator: opts.Allocator, Executor: opts.Executor, ORTLib: opts.ORTLib})
	if err != nil {
		return nil, err
	}
	m := &Model{eng: eng, name: name}
	m.tok, m.tokErr = eng.Tokenizer()
	return m, nil
}

// OpenEmbedded exports the embedded stories260K model (a 260K-parameter Llama trained on
// children's stories; no chat template) in memory and loads it. opts.Export is ignored: the
// program has a context of 512, a prefill step of 32 and float32 caches, as run.c computes.
func OpenEmbedded(ctx context.Context, opts Options) (*Model, error) {
	data, err := exportFS(ctx, models.Stories260K(), export.Options{Context: 512, Prefill: 32, CacheDType: program.F32,
		Model: "stories260K", Writer: "hfstatic " + Version()})
	if err != nil {
		return nil, fmt.Errorf("embedded model: %w", err)
	}
	m, err := load(data, EmbeddedName, opts)
	if err != nil {
		return nil, fmt.Errorf("embedded model: %w", err)
	}
	return m, nil
}

// OpenFolder exports the Hugging Face folder dir in memory (see Options.Export) and loads
// the program. Weights are read through memory maps.
func OpenFolder(ctx context.Context, dir string, opts Options) (*Model, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		if err := checkProgramPath(dir); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s is a file; OpenFolder takes a Hugging Face folder (open programs with Open)", dir)
	}
	if opts.Export.Model == "" {
		if abs, err := filepath.Abs(dir); err == nil {
			opts.Export.Model = filepath.Base(abs)
		}
	}
	m, err := LoadCheckpoint(ctx, mmap.DirFS(dir), opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	m.name = dir
	return m, nil
}

// LoadCheckpoint exports the Hugging Face checkpoint in fsys (config.json, *.safetensors,
// tokenizer files) in memory and loads the program.
func LoadCheckpoint(ctx context.Context, fsys fs.FS, opts Options) (*Model, error) {
	data, err := exportFS(ctx, fsys, opts.Export.export())
	if err != nil {
		return nil, err
	}
	return load(data, "", opts)
}

// Export writes the program for the Hugging Face checkpoint in fsys (config.json,
// *.safetensors, tokenizer files) to w, as `hfstatic export` does with the same options.
func Export(ctx context.Context, fsys fs.FS, w io.Writer, opts ExportOptions) error {
	ckpt, err := hf.Open(fsys)
	if err != nil {
		return err
	}
	defer ckpt.Close()
	_, err = export.Export(ctx, ckpt, w, opts.export())
	return err
}

func (eo ExportOptions) export() export.Options {
	prefill := eo.Prefill
	if prefill == 0 {
		prefill = defaultPrefill(eo.Context)
	}
	return export.Options{Context: eo.Context, Prefill: prefill, Weights: eo.Weights, CacheDType: program.DType(eo.CacheDType),
		Model: eo.Model, Writer: "hfstatic " + Version()}
}

// defaultPrefill is DefaultPrefill, or the whole context when that is shorter (0: none
// for a context of 1).
func defaultPrefill(context int) int {
	if context > 0 && context < DefaultPrefill {
		if context < 2 {
			return 0
		}
		return context
	}
	return DefaultPrefill
}

// exportFS exports the checkpoint in fsys into 64-byte aligned memory.
func exportFS(ctx context.Context, fsys fs.FS, opts export.Options) ([]byte, error) {
	ckpt, err := hf.Open(fsys)
	if err != nil {
		return nil, err
	}
	defer ckpt.Close()
	data, _, err := export.ToMemory(ctx, ckpt, opts)
	return data, err
}

// Name is the program's path, the folder it was exported from, or EmbeddedName.
func (m *Model) Name() string { return m.name }

// Engine returns the loaded program and its runner, for what this package does not cover.
// It is valid until Close.
func (m *Model) Engine() *engine.Model { return m.eng }

// Tokenizer returns the tokenizer embedded in the program, or ErrNoTokenizer.
func (m *Model) Tokenizer() (*tokenizer.Tokenizer, error) { return m.tok, m.tokErr }

// Mapping describes how a program file is held in memory.
type Mapping struct {
	// Mapped is true when the program is a memory map of its file.
	Mapped bool
	// Bytes is the program's size.
	Bytes int64
	// HugeBytes is how much of a mapping the kernel backs with 2 MiB pages (where /proc
	// tells; 0 elsewhere).
	HugeBytes int64
	// Recached is true when the file's small pages were dropped from the page cache and
	// read again in huge pages (see LoadMapped).
	Recached bool
}

// Mapping reports how the program is held in memory.
func (m *Model) Mapping() Mapping {
	mp := Mapping{Bytes: m.eng.File.Size()}
	if m.file != nil {
		mp.Mapped = m.mode != LoadCopied
		mp.HugeBytes, mp.Recached = m.file.HugeBytes(), m.file.Recached()
	}
	return mp
}

// Close stops the model's threads and unmaps its file. Sessions and chats must be closed
// first.
func (m *Model) Close() error {
	err := m.eng.Close()
	if m.file != nil {
		if e := m.file.Close(); err == nil {
			err = e
		}
	}
	return err
}
