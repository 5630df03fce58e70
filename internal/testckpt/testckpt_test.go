package testckpt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/internal/safetensors"
)

var allFixtures = []string{"bert", "bert-dense", "bert-rerank", "gemma3", "gemma3-bf16", "granite", "granite-bf16", "llama", "llama-bf16", "mistral",
	"mixtral", "mixtral-bf16", "olmo2", "olmo2-bf16", "phi3", "phi35", "phi4mini", "phi4mini-bf16", "qwen2", "qwen3", "qwen3-bf16",
	"qwen3-embed", "qwen3-rerank", "qwen3moe", "qwen3moe-bf16", "smollm3", "smollm3-bf16", "smollm3-swa", "xlmr", "xlmr-rerank"}

func TestNamesListsEveryFixture(t *testing.T) {
	if diff := cmp.Diff(allFixtures, Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

func TestSynthesizeReproducesFixtureSpecs(t *testing.T) {
	for _, name := range allFixtures {
		t.Run(name, func(t *testing.T) {
			want, err := FixtureSpec(name)
			if err != nil {
				t.Fatal(err)
			}
			cfgData, err := readFixture(name, "config.json")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Synthesize(cfgData, want.ModelSeed, want.DType)
			if err != nil {
				t.Fatal(err)
			}
			// The order of the tensors is not part of the weights: seeds derive from
			// names and the file sorts by name. Synthesize lists them in program order.
			byName := func(a, b TensorSpec) int { return strings.Compare(a.Name, b.Name) }
			slices.SortFunc(want.Tensors, byName)
			slices.SortFunc(got.Tensors, byName)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Synthesize(config.json) differs from weights_spec.json (-want +got):\n%s", diff)
			}
		})
	}
}

// Values computed independently of this package (Python integers for splitmix64,
// Python floats, struct.pack('<f') for the float32 rounding) from the fixture specs.
func TestRandomMatchesIndependentlyComputedValues(t *testing.T) {
	tests := []struct {
		fixture, tensor string
		index           int64
		f32Bits         uint32
		bf16Bits        uint16
	}{
		{"llama", "model.embed_tokens.weight", 0, 0xbf039893, 0xbf04},
		{"llama", "model.embed_tokens.weight", 1, 0xbfc9239e, 0xbfc9},
		{"llama", "model.embed_tokens.weight", 2, 0x3fbaf0e3, 0x3fbb},
		{"llama", "model.embed_tokens.weight", 8208383, 0xbec7a550, 0xbec8},
		{"llama", "model.layers.0.input_layernorm.weight", 0, 0x3f5c9882, 0x3f5d},
		{"llama", "model.layers.0.input_layernorm.weight", 63, 0x3f89ef29, 0x3f8a},
		{"llama", "model.norm.weight", 2, 0x3f7081d3, 0x3f71},
		{"gemma3", "model.embed_tokens.weight", 8390655, 0x3fb02a87, 0x3fb0},
		{"gemma3", "model.layers.0.input_layernorm.weight", 2, 0xbd483e40, 0xbd48},
		{"gemma3", "model.norm.weight", 0, 0xbc99f38c, 0xbc9a},
		{"gemma3", "model.norm.weight", 31, 0xbd81dcdc, 0xbd82},
	}
	for _, tt := range tests {
		for _, variant := range []string{tt.fixture, tt.fixture + "-bf16"} {
			f := openRandom(t, variant)
			tensor, ok := f.Lookup(tt.tensor)
			if !ok {
				t.Fatalf("%s: no tensor %s", variant, tt.tensor)
			}
			raw, err := f.Raw(tensor)
			if err != nil {
				t.Fatal(err)
			}
			switch tensor.DType {
			case safetensors.F32:
				if got := binary.LittleEndian.Uint32(raw[4*tt.index:]); got != tt.f32Bits {
					t.Errorf("%s %s[%d] = %#08x, want %#08x", variant, tt.tensor, tt.index, got, tt.f32Bits)
				}
			case safetensors.BF16:
				if got := binary.LittleEndian.Uint16(raw[2*tt.index:]); got != tt.bf16Bits {
					t.Errorf("%s %s[%d] = %#04x, want %#04x", variant, tt.tensor, tt.index, got, tt.bf16Bits)
				}
			default:
				t.Errorf("%s %s: dtype %s", variant, tt.tensor, tensor.DType)
			}
		}
	}
}

func openRandom(t testing.TB, name string) *safetensors.File {
	t.Helper()
	fsys, err := Random(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.FromBytes(fsys["model.safetensors"].Data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRandomFilesAreWellFormed(t *testing.T) {
	for _, name := range allFixtures {
		t.Run(name, func(t *testing.T) {
			spec, err := FixtureSpec(name)
			if err != nil {
				t.Fatal(err)
			}
			fsys, err := Random(name)
			if err != nil {
				t.Fatal(err)
			}
			files := []string{"config.json", "model.safetensors"}
			if !encoderFixture(name) {
				files = append(files, "generation_config.json")
			}
			for _, file := range files {
				if f, ok := fsys[file]; !ok || len(f.Data) == 0 {
					t.Errorf("%s is missing or empty", file)
				}
			}
			data := fsys["model.safetensors"].Data
			first := spec.Tensors[0].Name
			for _, ts := range spec.Tensors {
				first = min(first, ts.Name)
			}
			if !bytes.HasPrefix(data[8:], []byte(`{"__metadata__":{"format":"pt"},"`+first+`"`)) {
				t.Errorf("header starts %q; want metadata then the first tensor by name", data[8:80])
			}
			f, err := safetensors.FromBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Tensors()) != len(spec.Tensors) {
				t.Fatalf("%d tensors, spec has %d", len(f.Tensors()), len(spec.Tensors))
			}
			prevEnd := f.Tensors()[0].Offset
			for _, ts := range spec.Tensors {
				tensor, ok := f.Lookup(ts.Name)
				if !ok || !cmp.Equal(tensor.Shape, ts.Shape) || tensor.DType.String() != spec.DType {
					t.Errorf("tensor %s = %+v, want shape %v dtype %s", ts.Name, tensor, ts.Shape, spec.DType)
				}
			}
			for _, tensor := range f.Tensors() { // sorted by name, contiguous in that order
				if tensor.Offset != prevEnd {
					t.Errorf("tensor %s starts at %d, want %d (data in name order, no gaps)", tensor.Name, tensor.Offset, prevEnd)
				}
				prevEnd = tensor.Offset + tensor.Length
			}
			if prevEnd != int64(len(data)) {
				t.Errorf("data ends at %d, file is %d bytes", prevEnd, len(data))
			}
		})
	}
}

// The bf16 fixtures store exactly the f32 fixtures' values rounded to nearest even.
func TestBF16FixturesAreRoundedF32Fixtures(t *testing.T) {
	for _, name := range []string{"llama", "qwen3", "gemma3", "olmo2", "smollm3", "granite"} {
		f32, bf16 := openRandom(t, name), openRandom(t, name+"-bf16")
		ties := 0
		for _, t32 := range f32.Tensors() {
			t16, _ := bf16.Lookup(t32.Name)
			a, _ := f32.Raw(t32)
			b, _ := bf16.Raw(t16)
			for i := range t32.NumElements() {
				bits := binary.LittleEndian.Uint32(a[4*i:])
				got := binary.LittleEndian.Uint16(b[2*i:])
				want := uint16(bits >> 16) // truncate, then round
				if rest := bits & 0xffff; rest > 0x8000 || (rest == 0x8000 && want&1 == 1) {
					want++
				}
				if rest := bits & 0xffff; rest == 0x8000 {
					ties++
				}
				if got != want {
					t.Fatalf("%s %s[%d]: bf16 %#04x, want %#04x from f32 %#08x", name, t32.Name, i, got, want, bits)
				}
			}
		}
		t.Logf("%s: %d exact ties rounded to even", name, ties)
	}
}

func TestGenerateIsDeterministicAndCached(t *testing.T) {
	spec, err := FixtureSpec("qwen2")
	if err != nil {
		t.Fatal(err)
	}
	a, err := Generate(spec, safetensors.F32)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(spec, safetensors.F32)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("two Generate calls differ")
	}
	size, err := FileSize(spec, safetensors.F32)
	if err != nil || size != int64(len(a)) {
		t.Errorf("FileSize = %d, %v; Generate wrote %d bytes", size, err, len(a))
	}
	r1, _ := Random("qwen2")
	r2, _ := Random("qwen2")
	if !bytes.Equal(r1["model.safetensors"].Data, a) {
		t.Errorf("Random(qwen2) differs from Generate(its spec)")
	}
	if &r1["model.safetensors"].Data[0] != &r2["model.safetensors"].Data[0] {
		t.Errorf("Random regenerated the weights instead of reusing them")
	}
}

func TestGenerateF16RoundsValues(t *testing.T) {
	spec := Spec{ModelSeed: 9, DType: "F16", Tensors: []TensorSpec{{Name: "w", Shape: []int{3, 5}, Seed: 42, Center: 0.5, Scale: 2}}}
	data, err := Generate(spec, safetensors.F16)
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.FromBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := f.Lookup("w")
	got, err := f.Float32(w)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		want := spec.Tensors[0].Value(int64(i))
		if math.Abs(float64(g-want)) > math.Abs(float64(want))/1024 || g < -1.5 || g > 2.5 {
			t.Errorf("w[%d] = %v, want %v within f16 precision and in [-1.5, 2.5]", i, g, want)
		}
	}
}

// tinyConfig is a complete config.json of a one-layer model of arch with fields replaced
// (nil deletes a field).
func tinyConfig(t *testing.T, arch string, set map[string]any) []byte {
	t.Helper()
	cfg := map[string]any{"architectures": []string{arch}, "vocab_size": 10, "hidden_size": 8,
		"intermediate_size": 12, "num_hidden_layers": 1, "num_attention_heads": 2, "head_dim": 4,
		"rms_norm_eps": 1e-6, "max_position_embeddings": 64}
	for k, v := range set {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = v
		}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSynthesizeOptions(t *testing.T) {
	tests := []struct {
		name      string
		cfg       []byte
		has, lack []string
		count     int
	}{
		{"llama untied with bias", tinyConfig(t, "LlamaForCausalLM", map[string]any{"tie_word_embeddings": false, "attention_bias": true}),
			[]string{"lm_head.weight", "model.layers.0.self_attn.v_proj.bias", "model.layers.0.self_attn.o_proj.bias"},
			[]string{"model.layers.0.self_attn.q_norm.weight"}, 16},
		{"llama defaults untied like transformers", tinyConfig(t, "LlamaForCausalLM", map[string]any{"num_hidden_layers": 2, "num_key_value_heads": 2, "head_dim": nil}),
			[]string{"lm_head.weight", "model.layers.1.mlp.down_proj.weight"}, []string{"model.layers.0.self_attn.q_proj.bias"}, 21},
		{"qwen2 has q/k/v biases", tinyConfig(t, "Qwen2ForCausalLM", nil),
			[]string{"model.layers.0.self_attn.k_proj.bias"}, []string{"model.layers.0.self_attn.o_proj.bias"}, 15},
		{"gemma3 defaults tied", tinyConfig(t, "Gemma3ForCausalLM", map[string]any{"num_key_value_heads": 1}),
			[]string{"model.layers.0.pre_feedforward_layernorm.weight"}, []string{"lm_head.weight"}, 15},
		{"gemma2 has no q/k norms", tinyConfig(t, "Gemma2ForCausalLM", map[string]any{"num_key_value_heads": 1}),
			[]string{"model.layers.0.post_feedforward_layernorm.weight"}, []string{"model.layers.0.self_attn.q_norm.weight"}, 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Synthesize(tt.cfg, 1, "F32")
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]TensorSpec{}
			for _, ts := range s.Tensors {
				names[ts.Name] = ts
			}
			for _, n := range tt.has {
				if _, ok := names[n]; !ok {
					t.Errorf("missing %s", n)
				}
			}
			for _, n := range tt.lack {
				if _, ok := names[n]; ok {
					t.Errorf("unexpected %s", n)
				}
			}
			if len(s.Tensors) != tt.count {
				t.Errorf("%d tensors, want %d", len(s.Tensors), tt.count)
			}
		})
	}
	s, _ := Synthesize(tests[3].cfg, 1, "F32")
	for _, ts := range s.Tensors {
		if ts.Name == "model.layers.0.self_attn.q_norm.weight" && (ts.Shape[0] != 4 || ts.Center != 0) {
			t.Errorf("gemma3 q_norm = %+v, want [head_dim 4] centred at 0 (Gemma stores w of (1+w))", ts)
		}
	}
}

func TestSynthesizeRejectsBadConfigs(t *testing.T) {
	tests := []struct {
		name, want string
		cfg        []byte
		dtype      string
	}{
		{"unknown architecture", "PhiForCausalLM", tinyConfig(t, "PhiForCausalLM", nil), "F32"},
		{"no architectures", "no architectures", tinyConfig(t, "x", map[string]any{"architectures": []string{}}), "F32"},
		{"zero hidden", "hidden_size", tinyConfig(t, "LlamaForCausalLM", map[string]any{"hidden_size": 0}), "F32"},
		{"not json", "config.json", []byte("{"), "F32"},
		{"bad dtype", "I8", tinyConfig(t, "LlamaForCausalLM", nil), "I8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Synthesize(tt.cfg, 1, tt.dtype)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// Every fixture has llama.cpp's summary, a float64 one (OLMo 2, SmolLM3, Granite), or both;
// each is well formed.
func TestReference(t *testing.T) {
	readers := []struct {
		file string
		read func(string) (*Summary, error)
	}{{"reference.summary.json", Reference}, {"reference64.summary.json", Float64Reference}}
	for _, name := range allFixtures {
		t.Run(name, func(t *testing.T) {
			found := 0
			for _, r := range readers {
				s, err := r.read(name)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				found++
				checkSummary(t, r.file, s)
			}
			if _, err := EncodeReference(name); err == nil {
				found++
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			if found == 0 {
				t.Errorf("no reference summary (%s, %s or reference64.encode.json)", readers[0].file, readers[1].file)
			}
		})
	}
	s, _ := Reference("llama")
	if s.InputIDs[0] != 128000 || s.Positions[0].Top10[0] != (IDLogit{100707, 35.84468}) {
		t.Errorf("llama: input_ids[0] = %d, top1 at 0 = %+v; want 128000, {100707 35.84468}", s.InputIDs[0], s.Positions[0].Top10[0])
	}
	if _, err := Reference("nope"); err == nil {
		t.Errorf("Reference(unknown) succeeded")
	}
	if _, err := Random("nope"); err == nil {
		t.Errorf("Random(unknown) succeeded")
	}
}

func checkSummary(t *testing.T, file string, s *Summary) {
	t.Helper()
	if len(s.GreedyIDs) != 16 || len(s.ProbeIDs) != 64 || s.NVocab <= 0 {
		t.Fatalf("%s has %d greedy ids, %d probe ids, vocab %d", file, len(s.GreedyIDs), len(s.ProbeIDs), s.NVocab)
	}
	for k, id := range s.ProbeIDs {
		if id != k*(s.NVocab/64) {
			t.Errorf("%s: probe_ids[%d] = %d, want %d", file, k, id, k*(s.NVocab/64))
		}
	}
	for i, p := range s.Positions {
		if p.Pos != i || len(p.Top10) != 10 || len(p.ProbeLogits) != 64 {
			t.Fatalf("%s position %d: pos %d, %d top, %d probes", file, i, p.Pos, len(p.Top10), len(p.ProbeLogits))
		}
		if p.Top10[0].ID != p.Argmax || float64(p.Top10[0].Logit) > p.LogSumExp+1e-4 { // float32 logit vs float64 logsumexp
			t.Errorf("%s position %d: top1 %+v, argmax %d, logsumexp %v", file, i, p.Top10[0], p.Argmax, p.LogSumExp)
		}
	}
}

func TestRandomIsSafeForConcurrentUse(t *testing.T) {
	const callers = 4
	results := make(chan []byte, callers)
	for range callers {
		go func() {
			fsys, err := Random("mistral")
			if err != nil {
				t.Error(err)
				results <- nil
				return
			}
			results <- fsys["model.safetensors"].Data
		}()
	}
	first := <-results
	for range callers - 1 {
		if got := <-results; len(got) == 0 || &got[0] != &first[0] {
			t.Errorf("concurrent Random calls returned different weight buffers")
		}
	}
}

func TestParseSpecRejectsBadSpecs(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"other generator", `{"generator":"numpy","safetensors_dtype":"F32","tensors":[{"name":"a","shape":[1]}]}`, "numpy"},
		{"bad dtype", `{"safetensors_dtype":"I8","tensors":[{"name":"a","shape":[1]}]}`, "I8"},
		{"no tensors", `{"safetensors_dtype":"F32","tensors":[]}`, "no tensors"},
		{"repeated name", `{"safetensors_dtype":"F32","tensors":[{"name":"a","shape":[1]},{"name":"a","shape":[1]}]}`, "repeated"},
		{"zero dimension", `{"safetensors_dtype":"F32","tensors":[{"name":"a","shape":[0]}]}`, "positive"},
		{"not json", `{`, "weights spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSpec([]byte(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestSynthesizeLinearReproducesTheDenseModuleSpec(t *testing.T) {
	b, err := fs.ReadFile(fixtures, "testdata/bert-dense/2_Dense/weights_spec.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ParseSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SynthesizeLinear("2_Dense", 32, 16, true, want.ModelSeed, want.DType)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SynthesizeLinear differs from 2_Dense/weights_spec.json (-want +got):\n%s", diff)
	}
}

func TestRandomHasTheSentenceTransformersModules(t *testing.T) {
	fsys, err := Random("bert-dense")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"modules.json", "1_Pooling/config.json", "2_Dense/config.json", "2_Dense/model.safetensors"} {
		if _, ok := fsys[f]; !ok {
			t.Errorf("bert-dense has no %s", f)
		}
	}
	for f := range fsys {
		if strings.Contains(f, "weights_spec") || strings.Contains(f, "reference") {
			t.Errorf("Random includes %s", f)
		}
	}
	if _, ok := fsys["generation_config.json"]; ok {
		t.Error("an encoder fixture has a generation_config.json")
	}
}

// encoderFixture reports whether a fixture is a BERT or XLM-RoBERTa one.
func encoderFixture(name string) bool {
	return strings.HasPrefix(name, "bert") || strings.HasPrefix(name, "xlmr")
}
