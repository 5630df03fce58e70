package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program/programtest"
)

// exitCode is what main exits with for err.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.As(err, new(usageError)):
		return 2
	}
	return 1
}

// Each mistake a new user makes gets an exit code and a message that says what to do.
func TestMistakesSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gguf := write("model.gguf", []byte("GGUF\x03\x00\x00\x00 the rest of a GGUF file"))
	prog := filepath.Join(dir, "s.hfs")
	mustRun(t, "export", storiesDir, "-o", prog, "--context", "64", "-q")
	data, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	newer := bytes.Clone(data)
	newer[8] = 2 // the header's format version
	newerContract := programtest.ReplaceManifest(data, bytes.Replace(programtest.Manifest(data), []byte(`"version":1`), []byte(`"version":2`), 1))
	noTokenizer := t.TempDir()
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(storiesDir, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(noTokenizer, f), b, 0o644)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"GGUF to export", []string{"export", gguf, "-o", filepath.Join(dir, "x.hfs")}, 1,
			"this is a GGUF file (llama.cpp's format): hfstatic takes Hugging Face safetensors folders"},
		{"GGUF to generate", []string{"generate", gguf, "--prompt", "hi"}, 1,
			"this is a GGUF file (llama.cpp's format): hfstatic takes Hugging Face safetensors folders"},
		{"program to export", []string{"export", prog, "-o", filepath.Join(dir, "x.hfs")}, 1, "is already an hfstatic program"},
		{"unknown weight type", []string{"export", storiesDir, "-o", filepath.Join(dir, "x.hfs"), "--weights", "q5"}, 2,
			`--weights "q5": want f32, f16, bf16, q8 or q4`},
		{"bad export option", []string{"export", storiesDir, "-o", filepath.Join(dir, "x.hfs"), "--cache-dtype", "q8", "-q"}, 2,
			`cache dtype "q8" must be f16 or f32`},
		{"tensor weights without a type", []string{"export", storiesDir, "-o", filepath.Join(dir, "x.hfs"), "--weights", "q4", "--tensor-weights", "v_proj", "-q"}, 2,
			`--tensor-weights "v_proj": want MATCH=TYPE, e.g. v_proj=q8`},
		{"tensor weights matching nothing", []string{"export", storiesDir, "-o", filepath.Join(dir, "x.hfs"), "--weights", "q4", "--tensor-weights", "w_proj=q8", "-q"}, 2,
			`tensor weights "w_proj"=q8 matches no weight matrix of the program`},
		{"misspelt flag", []string{"generate", "--promt", "hi"}, 2, "unknown flag: --promt (did you mean --prompt?)"},
		{"newer file format", []string{"generate", write("newer.hfs", newer), "--prompt", "hi"}, 1,
			"program format version 2 was made by a newer hfstatic (this build reads version 1): upgrade hfstatic"},
		{"newer contract", []string{"generate", write("newer-contract.hfs", newerContract), "--prompt", "hi"}, 1,
			`contract: "hf_static" version 2 is not supported (supported: [hf_static/v1]): the program was made by a newer hfstatic`},
		{"folder without tokenizer.json", []string{"export", noTokenizer, "-o", filepath.Join(dir, "x.hfs"), "-q"}, 1,
			"has no tokenizer.json: a program without one cannot turn text into tokens"},
		{"directory that is no model", []string{"generate", dir, "--prompt", "hi"}, 1, "is a directory without config.json"},
		{"unknown executor", []string{"generate", prog, "--executor", "tpu", "--prompt", "hi"}, 2, `--executor "tpu": want go or ort`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := run(t, "", c.args...)
			if code := exitCode(err); code != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("hfstatic %s: exit %d, %v\nwant exit %d and a message containing %q", strings.Join(c.args, " "), code, err, c.code, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "contract: contract:") {
				t.Errorf("doubled prefix: %v", err)
			}
		})
	}
	// --no-tokenizer exports it anyway; the program then takes token ids.
	out := filepath.Join(dir, "ids.hfs")
	mustRun(t, "export", noTokenizer, "-o", out, "--no-tokenizer", "-q")
	if ids := strings.TrimSpace(mustRun(t, "generate", out, "--tokens", "1", "-n", "3", "--temperature", "0", "--ids")); ids != "403,407,261" {
		t.Errorf("generate --ids on a program without tokenizer = %q, want 403,407,261", ids)
	}
}

// A Hugging Face folder given to generate is exported in memory, with a note saying how to
// keep the export.
func TestGenerateExportsAFolderInMemory(t *testing.T) {
	out, stderr, err := run(t, "", "generate", storiesDir, "--prompt", "Once upon a time", "-n", "8", "--temperature", "0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, ", there was a little girl") || !strings.Contains(stderr, "is a Hugging Face folder: exporting it in memory (hfstatic export") {
		t.Errorf("generate FOLDER printed %q, note %q", out, stderr)
	}
}

func TestVersionNamesGoAndTheKernels(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out := mustRun(t, args...)
		if !strings.HasPrefix(out, "hfstatic ") || !strings.Contains(out, "\ncommit ") || !strings.Contains(out, "go1.") || !strings.Contains(out, "kernels ") {
			t.Errorf("hfstatic %s = %q, want module version, commit, Go version and kernels", args[0], out)
		}
	}
}

// HFSTATIC_KERNELS forces a route this CPU runs, and refuses one it cannot, naming the routes
// it can.
func TestKernelsRouteFromTheEnvironment(t *testing.T) {
	defer kernels.UseRoute("")
	routes := kernels.Routes()
	if err := useKernels("generic"); err != nil || kernels.Route() != "generic" {
		t.Fatalf("useKernels(generic) = %v, route %q", err, kernels.Route())
	}
	if v := version(); !strings.Contains(v, "kernels generic (this CPU runs: "+strings.Join(routes, ", ")) {
		t.Errorf("version() = %q, want the forced route and the routes this CPU runs", v)
	}
	err := useKernels("sse9000")
	var ue usageError
	if !errors.As(err, &ue) || !errors.Is(ue.error, kernels.ErrRoute) || !strings.Contains(err.Error(), "this CPU runs: "+routes[0]) {
		t.Errorf("useKernels(sse9000) = %v, want a usage error naming the routes", err)
	}
	if kernels.Route() != "generic" {
		t.Errorf("a refused route changed the route to %q", kernels.Route())
	}
}

// Without --prefill, export makes a prefill method of DefaultPrefill tokens (or of the whole
// context when that is shorter).
func TestExportDefaultsToAPrefillMethod(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		context string
		want    string
	}{{"256", "prefill(64)"}, {"40", "prefill(40)"}} {
		out := mustRun(t, "export", storiesDir, "-o", filepath.Join(dir, "p.hfs"), "--context", c.context, "-q")
		if !strings.Contains(out, c.want) {
			t.Errorf("export --context %s said %q, want %s", c.context, out, c.want)
		}
	}
}

// accuracy without --prompt compares a default prompt's sequence, even for tokenizers with
// no BOS (where an empty prompt has no tokens).
func TestAccuracyHasADefaultPrompt(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "q.hfs")
	mustRun(t, "export", qwen3Folder(t), "-o", prog, "--context", "64", "--prefill", "0", "-q")
	out := mustRun(t, "accuracy", prog, prog, "--generate", "4")
	if !strings.Contains(out, "100.00%") {
		t.Errorf("accuracy of a program against itself said %q, want 100.00%% agreement", out)
	}
}
