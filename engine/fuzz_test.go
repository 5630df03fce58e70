package engine

import (
	"bytes"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/safetensors"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/program/programtest"
	"github.com/hfstatic/hfstatic/runner"
)

// tinyLlama is a Llama config small enough that loading its program and
// running a step take microseconds even under the fuzzer's instrumentation
// (stories260K took seconds per input there).
const tinyLlama = `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16,
"intermediate_size": 24, "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 2,
"vocab_size": 32, "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
"tie_word_embeddings": true, "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}`

// tinyProgram exports tinyLlama with random weights.
func tinyProgram(t testing.TB, opts export.Options) []byte {
	t.Helper()
	spec, err := testckpt.Synthesize([]byte(tinyLlama), 1, "F32")
	if err != nil {
		t.Fatal(err)
	}
	w, err := testckpt.Generate(spec, safetensors.F32)
	if err != nil {
		t.Fatal(err)
	}
	return exporttest.Program(t, fstest.MapFS{"config.json": {Data: []byte(tinyLlama)}, "model.safetensors": {Data: w}}, opts)
}

// FuzzLoadManifest: any manifest either loads or is rejected with an error; nothing panics,
// and a program that loads can run a step.
func FuzzLoadManifest(f *testing.F) {
	good := tinyProgram(f, export.Options{Context: 16, Prefill: 4, CacheDType: program.F32})
	js := programtest.Manifest(good)
	f.Add(bytes.Clone(js))
	f.Add(bytes.ReplaceAll(js, []byte(`"step":4`), []byte(`"step":40`)))
	f.Add(bytes.ReplaceAll(js, []byte(`"cache_rows":16`), []byte(`"cache_rows":8`)))
	f.Add(bytes.ReplaceAll(js, []byte(`"head_dim":8`), []byte(`"head_dim":16`)))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		// The manifest is what is fuzzed: skip the tensor checksums, and take
		// session buffers from the heap rather than fresh mappings.
		m, err := Load(programtest.ReplaceManifest(good, manifest), Options{Threads: 1, SkipDataChecksums: true, Allocator: runner.HeapAllocator{}})
		if err != nil {
			return
		}
		defer m.Close()
		if m.Runner.SessionBytes() > 64<<20 {
			return // a consistent but huge program: allocating it is not what this fuzzes
		}
		s, err := m.Runner.NewSession()
		if err != nil {
			return
		}
		defer s.Close()
		_ = s.Append(t.Context(), []int{1, 2, 3})
	})
}
