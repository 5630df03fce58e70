package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/internal/testckpt"
)

// With a fixture's shape and seed, synthckpt must write exactly the fixture.
func TestFixtureShapeReproducesFixture(t *testing.T) {
	tests := []struct{ shape, dtype, fixture string }{
		{"qwen2", "f32", "qwen2"},
		{"llama", "bf16", "llama-bf16"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			dir := t.TempDir()
			var stderr bytes.Buffer
			if err := run([]string{"-shape", tt.shape, "-dtype", tt.dtype, "-o", dir}, &stderr); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stderr.String(), "100%") {
				t.Errorf("no final progress line on stderr: %q", stderr.String())
			}
			want, err := testckpt.Random(tt.fixture)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want["model.safetensors"].Data) {
				t.Errorf("model.safetensors differs from fixture %s", tt.fixture)
			}
			gotCfg, _ := os.ReadFile(filepath.Join(dir, "config.json"))
			var a, b map[string]any
			if err := json.Unmarshal(gotCfg, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want["config.json"].Data, &b); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(b, a); diff != "" {
				t.Errorf("config.json (-fixture +written):\n%s", diff)
			}
			c, err := hf.Open(mmap.DirFS(dir))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

// Parameter counts published for the real models.
func TestRealShapesHavePublishedParameterCounts(t *testing.T) {
	tests := []struct {
		shape   string
		dtype   string
		params  int64
		tensors int
	}{
		{"smollm2-135m", "float32", 134_515_008, 2 + 30*9},
		{"qwen3-0.6b", "bfloat16", 596_049_920, 2 + 28*11},
		{"llama3.2-1b", "float16", 1_235_814_400, 2 + 16*9},
		{"phi4-mini", "bfloat16", 3_836_021_760, 2 + 32*6},
		// 48 layers of 623,120,640 give the published 30.5B; 4 are kept.
		{"qwen3-30b-a3b-4l", "bfloat16", 3_114_814_464, 3 + 4*(8+1+3*128)},
	}
	for _, tt := range tests {
		t.Run(tt.shape, func(t *testing.T) {
			cfg, _, _, err := lookupShape(tt.shape)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err = withTorchDType(cfg, tt.dtype)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(cfg, []byte(`"torch_dtype": "`+tt.dtype+`"`)) {
				t.Errorf("config does not say torch_dtype %s", tt.dtype)
			}
			spec, err := testckpt.Synthesize(cfg, 1, "F32")
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			for _, ts := range spec.Tensors {
				n += ts.NumElements()
			}
			if n != tt.params || len(spec.Tensors) != tt.tensors {
				t.Errorf("%d parameters in %d tensors, want %d in %d", n, len(spec.Tensors), tt.params, tt.tensors)
			}
		})
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown shape", []string{"-shape", "gpt2", "-o", "x"}, "gpt2"},
		{"unknown dtype", []string{"-shape", "llama", "-dtype", "q4", "-o", "x"}, "q4"},
		{"no output", []string{"-shape", "llama"}, "-o"},
		{"extra argument", []string{"-shape", "llama", "-o", "x", "more"}, "more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(tt.args, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}
