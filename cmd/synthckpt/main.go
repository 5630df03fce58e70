// Command synthckpt writes a Hugging Face checkpoint folder with random
// weights and the published config of a real model, for benchmarks:
//
//	go run ./cmd/synthckpt -shape qwen3-0.6b -dtype bf16 -o /tmp/qwen3-0.6b
//
// Shapes: all-minilm-l6-v2, smollm2-135m, qwen3-0.6b, llama3.2-1b, phi4-mini, and the names of the
// internal/testckpt fixtures (llama, qwen3, gemma3, …; with their model seed,
// -seed 0, the weights are the fixture's exactly). Weights follow
// testckpt.Synthesize and are streamed to disk. No tokenizer is written.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hfstatic/hfstatic/internal/safetensors"
	"github.com/hfstatic/hfstatic/internal/testckpt"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "synthckpt:", err)
		os.Exit(1)
	}
}

var dtypes = map[string]struct {
	st    safetensors.DType
	torch string
}{
	"f32":  {safetensors.F32, "float32"},
	"bf16": {safetensors.BF16, "bfloat16"},
	"f16":  {safetensors.F16, "float16"},
}

func shapeNames() []string {
	var names []string
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	return append(names, testckpt.Names()...)
}

func run(args []string, stderr io.Writer) error {
	fl := flag.NewFlagSet("synthckpt", flag.ContinueOnError)
	fl.SetOutput(stderr)
	shape := fl.String("shape", "", "model shape: "+strings.Join(shapeNames(), ", "))
	dtypeName := fl.String("dtype", "f32", "stored weight dtype: f32, bf16 or f16")
	out := fl.String("o", "", "output folder (created; existing files are replaced)")
	seed := fl.Uint64("seed", 0, "model seed (0: 1 for real shapes, the fixture's own for fixture shapes)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	dt, ok := dtypes[*dtypeName]
	if !ok {
		return fmt.Errorf("-dtype %q: want f32, bf16 or f16", *dtypeName)
	}
	if *out == "" {
		return errors.New("-o DIR is required")
	}
	config, generation, modelSeed, err := lookupShape(*shape)
	if err != nil {
		return err
	}
	if *seed != 0 {
		modelSeed = *seed
	}
	config, err = withTorchDType(config, dt.torch)
	if err != nil {
		return err
	}
	spec, err := testckpt.Synthesize(config, modelSeed, dt.st.String())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "config.json"), config, 0o644); err != nil {
		return err
	}
	if generation != nil {
		if err := os.WriteFile(filepath.Join(*out, "generation_config.json"), generation, 0o644); err != nil {
			return err
		}
	}
	if slices.Contains(testckpt.Names(), *shape) {
		if err := writeExtras(*out, *shape); err != nil {
			return err
		}
	}
	return writeWeights(filepath.Join(*out, "model.safetensors"), spec, dt.st, stderr)
}

// writeExtras writes a fixture's other files (sentence-transformers modules, model card).
func writeExtras(dir, name string) error {
	extra, err := testckpt.Extras(name)
	if err != nil {
		return err
	}
	for p, data := range extra {
		path := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func lookupShape(name string) (config, generation []byte, seed uint64, err error) {
	if s, ok := shapes[name]; ok {
		var gen []byte
		if s.generation != "" {
			gen = []byte(s.generation + "\n")
		}
		return []byte(s.config), gen, 1, nil
	}
	if !slices.Contains(testckpt.Names(), name) {
		return nil, nil, 0, fmt.Errorf("-shape %q: want one of %s", name, strings.Join(shapeNames(), ", "))
	}
	fsys, err := testckpt.Random(name)
	if err != nil {
		return nil, nil, 0, err
	}
	spec, err := testckpt.FixtureSpec(name)
	if err != nil {
		return nil, nil, 0, err
	}
	var gen []byte
	if f, ok := fsys["generation_config.json"]; ok {
		gen = f.Data
	}
	return fsys["config.json"].Data, gen, spec.ModelSeed, nil
}

// withTorchDType returns config with "torch_dtype" set, keys sorted and
// numbers kept as written.
func withTorchDType(config []byte, torch string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	m["torch_dtype"] = torch
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func writeWeights(path string, spec testckpt.Spec, dt safetensors.DType, stderr io.Writer) error {
	size, err := testckpt.FileSize(spec, dt)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // no-op after the rename
	p := &progress{w: f, total: size, out: stderr, name: filepath.Base(path)}
	bw := bufio.NewWriterSize(p, 1<<20)
	err = testckpt.WriteSafetensors(bw, spec, dt)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if p.done != size {
		return fmt.Errorf("write %s: wrote %d bytes, expected %d", path, p.done, size)
	}
	return os.Rename(tmp, path)
}

// progress reports every 10% of the bytes written.
type progress struct {
	w           io.Writer
	out         io.Writer
	name        string
	total, done int64
	reported    int64 // last reported tenth
}

func (p *progress) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.total > 0 {
		if tenth := p.done * 10 / p.total; tenth > p.reported {
			p.reported = tenth
			fmt.Fprintf(p.out, "synthckpt: %s %3d%% (%d of %d MB)\n", p.name, tenth*10, p.done>>20, p.total>>20)
		}
	}
	return n, err
}
