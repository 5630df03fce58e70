package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/safetensors"
	"github.com/hfstatic/hfstatic/program/programtest"
)

const storiesDir = "../../models/stories260K"

// run executes the command in-process, as main does, and returns its output.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	err = execute(t.Context(), root, args)
	return out.String(), errb.String(), err
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := run(t, "", args...)
	if err != nil {
		t.Fatalf("hfstatic %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

func TestGenerateDefaultModelReproducesRunCStory(t *testing.T) {
	want, err := os.ReadFile("testdata/expected_t0_n200.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := mustRun(t, "generate", "--prompt", "", "-n", "200", "--temperature", "0")
	if got != string(want)+"\n" {
		t.Errorf("generate printed\n%q\nwant\n%q", got, want)
	}
}

func TestExportInspectGenerateLogits(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "s.hfs")
	out := mustRun(t, "export", storiesDir, "-o", prog, "--prefill", "16", "--context", "128", "--cache-dtype", "f32", "-q")
	if !strings.Contains(out, "wrote "+prog) || !strings.Contains(out, "prefill(16)") {
		t.Errorf("export said %q", out)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", prog, "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Contract != "hf_static" || rep.Version != 1 || rep.Context != 128 || len(rep.Layers) != 5 || rep.Layers[0].CacheRows != 128 {
		t.Errorf("inspect: %+v", rep)
	}
	// stories260K: 512×64 embedding (tied) + 5 layers of 4 64×64-or-32×64 attention and 3 172×64
	// MLP matrices + 2 norms of 64 each, + the final norm.
	if want := int64(512*64 + 5*(64*64*2+32*64*2+3*172*64+2*64) + 64); rep.Parameters != want || !rep.Tokenizer || rep.ChatTemplate {
		t.Errorf("inspect: %d parameters, tokenizer %v, chat template %v; want %d, true, false", rep.Parameters, rep.Tokenizer, rep.ChatTemplate, want)
	}
	if rep.Source.Model != "stories260K" || !strings.HasPrefix(rep.Source.Writer, "hfstatic ") {
		t.Errorf("inspect: source model %q, writer %q; want stories260K and the hfstatic version", rep.Source.Model, rep.Source.Writer)
	}
	if out := mustRun(t, "inspect", prog); !strings.Contains(out, "model           stories260K (written by hfstatic ") {
		t.Errorf("inspect does not name the model and its writer:\n%s", out)
	}
	// A program written before the model and writer were recorded still loads, and says so.
	data, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	manifest := programtest.Manifest(data)
	old := regexp.MustCompile(`,"model":"[^"]*","writer":"[^"]*"`).ReplaceAll(manifest, nil)
	if bytes.Equal(old, manifest) {
		t.Fatalf("no model and writer in the manifest %s", manifest)
	}
	oldProg := filepath.Join(dir, "old.hfs")
	os.WriteFile(oldProg, programtest.ReplaceManifest(data, old), 0o644)
	if out := mustRun(t, "inspect", oldProg); !strings.Contains(out, "model           not recorded") {
		t.Errorf("inspect of an older program:\n%s", out)
	}
	if want := int64(5 * 2 * 4 * 128 * 8 * 4); rep.CacheBytes != want {
		t.Errorf("cache bytes %d, want %d", rep.CacheBytes, want)
	}
	ids := strings.TrimSpace(mustRun(t, "generate", prog, "--tokens", "1", "-n", "5", "--temperature", "0", "--ids"))
	if ids != "403,407,261,378,432" {
		t.Errorf("generate --ids = %q, want run.c's first tokens 403,407,261,378,432", ids)
	}
	lf := filepath.Join(dir, "l.f32")
	mustRun(t, "logits", prog, "--tokens", "1,403,407", "-o", lf)
	if st, err := os.Stat(lf); err != nil || st.Size() != 3*512*4 {
		t.Errorf("logits file: %v, %d bytes, want %d", err, st.Size(), 3*512*4)
	}
}

func TestTokenizeAndDetokenize(t *testing.T) {
	out := mustRun(t, "tokenize", storiesDir, "--text", "Once upon a time", "--special")
	var ids []int
	if err := json.Unmarshal([]byte(out), &ids); err != nil || len(ids) < 2 || ids[0] != 1 {
		t.Fatalf("tokenize = %q (%v), want a JSON array starting with BOS 1", out, err)
	}
	out, _, err := run(t, "\"a\"\n\"b c\"\n", "tokenize", storiesDir)
	if err != nil || strings.Count(out, "\n") != 2 {
		t.Errorf("tokenize from stdin = %q, %v", out, err)
	}
	b, _ := json.Marshal(ids)
	text := mustRun(t, "detokenize", "--tokens", strings.Trim(string(b), "[]"), "--skip-special")
	if strings.TrimSpace(text) != "Once upon a time" {
		t.Errorf("detokenize = %q", text)
	}
}

// Bad input gets a clear error (a non-zero exit), never a panic.
func TestBadInputIsAClearError(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.hfs")
	mustRun(t, "export", storiesDir, "-o", good, "--context", "64", "-q")
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := bytes.Clone(data)
	flipped[100] ^= 1
	manifest := programtest.Manifest(data)
	v2 := programtest.ReplaceManifest(data, bytes.Replace(manifest, []byte(`"version":1`), []byte(`"version":2`), 1))
	programs := []struct{ name, path, want string }{
		{"truncated", write("trunc.hfs", data[:len(data)/2]), "truncated"},
		{"byte-flipped", write("flip.hfs", flipped), "checksum"},
		{"empty", write("empty.hfs", nil), "empty"},
		{"foreign", write("foreign.hfs", []byte("GGUF\x03\x00\x00\x00 not ours")), "this is a GGUF file (llama.cpp's format): hfstatic takes Hugging Face safetensors folders"},
		{"not a program", write("foreign.bin", []byte("PK\x03\x04 not ours, long enough")), "not an hfstatic program"},
		{"unknown contract version", write("v2.hfs", v2), `"hf_static" version 2 is not supported`},
		{"missing", filepath.Join(dir, "nope.hfs"), "nope.hfs"}, // the system's words differ: "no such file", "cannot find the file"
	}
	for _, c := range programs {
		t.Run("program/"+c.name, func(t *testing.T) {
			_, _, err := run(t, "", "generate", c.path, "--tokens", "1", "-n", "2")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}

	ckpt := func(t *testing.T, edit func(dir string)) string {
		d := t.TempDir()
		for _, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
			b, err := os.ReadFile(filepath.Join(storiesDir, f))
			if err != nil {
				t.Fatal(err)
			}
			write := filepath.Join(d, f)
			if err := os.WriteFile(write, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		edit(d)
		return d
	}
	rewriteWeights := func(d string, change func(ts []safetensors.WriteTensor) []safetensors.WriteTensor) {
		b, _ := os.ReadFile(filepath.Join(d, "model.safetensors"))
		f, err := safetensors.FromBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		var ts []safetensors.WriteTensor
		for _, tt := range f.Tensors() {
			raw, _ := f.Raw(tt)
			ts = append(ts, safetensors.WriteTensor{Name: tt.Name, DType: tt.DType, Shape: tt.Shape, Data: raw})
		}
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, change(ts), nil); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "model.safetensors"), buf.Bytes(), 0o644)
	}
	checkpoints := []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"unknown architecture", func(d string) {
			b, _ := os.ReadFile(filepath.Join(d, "config.json"))
			os.WriteFile(filepath.Join(d, "config.json"), bytes.Replace(b, []byte("LlamaForCausalLM"), []byte("FooForCausalLM"), 1), 0o644)
		}, `"FooForCausalLM" is not supported; supported: `},
		{"missing tensor", func(d string) {
			rewriteWeights(d, func(ts []safetensors.WriteTensor) []safetensors.WriteTensor {
				out := ts[:0]
				for _, x := range ts {
					if x.Name != "model.layers.2.mlp.up_proj.weight" {
						out = append(out, x)
					}
				}
				return out
			})
		}, `"model.layers.2.mlp.up_proj.weight": missing`},
		{"mis-shaped tensor", func(d string) {
			rewriteWeights(d, func(ts []safetensors.WriteTensor) []safetensors.WriteTensor {
				for i := range ts {
					if ts[i].Name == "model.layers.0.self_attn.k_proj.weight" {
						ts[i].Shape = []int{64, 32} // same bytes, wrong shape
					}
				}
				return ts
			})
		}, `"model.layers.0.self_attn.k_proj.weight": shape [64 32], the config implies [32 64]`},
		{"truncated safetensors", func(d string) {
			b, _ := os.ReadFile(filepath.Join(d, "model.safetensors"))
			os.WriteFile(filepath.Join(d, "model.safetensors"), b[:len(b)-1000], 0o644)
		}, "truncated"},
	}
	for _, c := range checkpoints {
		t.Run("checkpoint/"+c.name, func(t *testing.T) {
			d := ckpt(t, c.edit)
			_, _, err := run(t, "", "export", d, "-o", filepath.Join(t.TempDir(), "x.hfs"), "-q")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
	if _, _, err := run(t, "", "generate", "--bogus-flag"); !errors.As(err, new(usageError)) {
		t.Errorf("unknown flag: %v, want a usage error (exit 2)", err)
	}
}

// The continuation keeps the space between the prompt and the first new word.
func TestGenerateContinuesThePromptsText(t *testing.T) {
	got := mustRun(t, "generate", "--prompt", "Lily", "-n", "3", "--temperature", "0")
	if !strings.HasPrefix(got, " ") {
		t.Errorf("generate printed %q, want the continuation's leading space", got)
	}
}
