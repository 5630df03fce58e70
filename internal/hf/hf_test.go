package hf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/internal/safetensors"
)

const llamaConfig = `{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":4,
"bos_token_id":1,"eos_token_id":2,"torch_dtype":"bfloat16"}`

func f32Tensor(name string, shape []int, vs ...float32) safetensors.WriteTensor {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return safetensors.WriteTensor{Name: name, DType: safetensors.F32, Shape: shape, Data: b}
}

func safetensorsFile(t testing.TB, tensors ...safetensors.WriteTensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, tensors, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func singleFileFS(t testing.TB) fstest.MapFS {
	return fstest.MapFS{
		"config.json": {Data: []byte(llamaConfig)},
		"model.safetensors": {Data: safetensorsFile(t,
			f32Tensor("model.norm.weight", []int{4}, 1, 2, 3, 4),
			safetensors.WriteTensor{Name: "model.embed_tokens.weight", DType: safetensors.BF16, Shape: []int{1, 2}, Data: []byte{0x80, 0x3f, 0x00, 0x40}},
		)},
		"tokenizer.json": {Data: []byte(`{"model":{}}`)},
	}
}

func shardedFS(t testing.TB) fstest.MapFS {
	return fstest.MapFS{
		"config.json": {Data: []byte(llamaConfig)},
		"model.safetensors.index.json": {Data: []byte(`{"metadata":{"total_size":24},"weight_map":{
			"a.weight":"model-00001-of-00002.safetensors",
			"b.weight":"model-00002-of-00002.safetensors",
			"c.weight":"model-00001-of-00002.safetensors"}}`)},
		"model-00001-of-00002.safetensors": {Data: safetensorsFile(t, f32Tensor("a.weight", []int{2}, 1, 2), f32Tensor("c.weight", []int{1}, 3))},
		"model-00002-of-00002.safetensors": {Data: safetensorsFile(t, f32Tensor("b.weight", []int{1, 3}, 4, 5, 6))},
	}
}

func TestOpenSingleFile(t *testing.T) {
	c, err := Open(singleFileFS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if diff := cmp.Diff([]string{"model.embed_tokens.weight", "model.norm.weight"}, c.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if c.Config.Architectures[0] != "LlamaForCausalLM" || c.Config.ModelType != "llama" || c.Config.TorchDType != "bfloat16" {
		t.Errorf("Config = %+v", c.Config)
	}
	var raw struct {
		Hidden int `json:"hidden_size"`
	}
	if err := json.Unmarshal(c.Config.Raw, &raw); err != nil || raw.Hidden != 4 {
		t.Errorf("Config.Raw does not hold hidden_size 4: %v %+v", err, raw)
	}
	v, shape, err := c.Float32("model.embed_tokens.weight")
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(v, []float32{1, 2}) || !cmp.Equal(shape, []int{1, 2}) {
		t.Errorf("Float32(embed) = %v %v, want [1 2] [1 2]", v, shape)
	}
	if string(c.TokenizerJSON) != `{"model":{}}` || c.TokenizerConfigJSON != nil || c.GenerationConfigJSON != nil {
		t.Errorf("raw files: tokenizer %q, tokenizer_config %q, generation_config %q", c.TokenizerJSON, c.TokenizerConfigJSON, c.GenerationConfigJSON)
	}
	if _, _, err := c.Float32("lm_head.weight"); !errors.Is(err, ErrTensorNotFound) {
		t.Errorf("Float32(missing) err = %v, want ErrTensorNotFound", err)
	}
}

func TestOpenSharded(t *testing.T) {
	c, err := Open(shardedFS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if diff := cmp.Diff([]string{"a.weight", "b.weight", "c.weight"}, c.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	tests := []struct {
		name  string
		file  string
		want  []float32
		shape []int
	}{
		{"a.weight", "model-00001-of-00002.safetensors", []float32{1, 2}, []int{2}},
		{"b.weight", "model-00002-of-00002.safetensors", []float32{4, 5, 6}, []int{1, 3}},
		{"c.weight", "model-00001-of-00002.safetensors", []float32{3}, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f, _ := c.File(tt.name); f != tt.file {
				t.Errorf("File = %q, want %q", f, tt.file)
			}
			v, shape, err := c.Float32(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(v, tt.want) || !cmp.Equal(shape, tt.shape) {
				t.Errorf("Float32 = %v %v, want %v %v", v, shape, tt.want, tt.shape)
			}
			dst := make([]float32, len(tt.want))
			if err := c.Float32Into(dst, tt.name); err != nil || !cmp.Equal(dst, tt.want) {
				t.Errorf("Float32Into = %v, %v", dst, err)
			}
		})
	}
}

func TestOpenRejectsBrokenFolders(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(fstest.MapFS)
		is     error  // errors.Is target
		file   string // the *FileError or *TensorError must name this file
		tensor string // and, for a *TensorError, this tensor
	}{
		{"missing config", func(m fstest.MapFS) { delete(m, "config.json") }, fs.ErrNotExist, "config.json", ""},
		{"config not json", func(m fstest.MapFS) { m["config.json"] = &fstest.MapFile{Data: []byte("{")} }, nil, "config.json", ""},
		{"config without architectures", func(m fstest.MapFS) { m["config.json"] = &fstest.MapFile{Data: []byte(`{"model_type":"llama"}`)} }, nil, "config.json", ""},
		{"bad eos type", func(m fstest.MapFS) {
			m["config.json"] = &fstest.MapFile{Data: []byte(`{"architectures":["X"],"eos_token_id":"two"}`)}
		}, nil, "config.json", ""},
		{"bad generation config", func(m fstest.MapFS) {
			m["generation_config.json"] = &fstest.MapFile{Data: []byte(`{"bos_token_id":[1,2]}`)}
		}, nil, "generation_config.json", ""},
		{"no weights", func(m fstest.MapFS) {
			delete(m, "model.safetensors.index.json")
		}, ErrNoWeights, "model.safetensors", ""},
		{"missing shard", func(m fstest.MapFS) { delete(m, "model-00002-of-00002.safetensors") }, fs.ErrNotExist, "model-00002-of-00002.safetensors", ""},
		{"truncated shard", func(m fstest.MapFS) {
			d := m["model-00002-of-00002.safetensors"].Data
			m["model-00002-of-00002.safetensors"] = &fstest.MapFile{Data: d[:len(d)-1]}
		}, safetensors.ErrTruncated, "model-00002-of-00002.safetensors", ""},
		{"tensor absent from its shard", func(m fstest.MapFS) {
			m["model-00002-of-00002.safetensors"] = &fstest.MapFile{Data: safetensorsFile(t, f32Tensor("other", []int{1}, 0))}
		}, ErrNotInShard, "model-00002-of-00002.safetensors", "b.weight"},
		{"shard path escapes folder", func(m fstest.MapFS) {
			m["model.safetensors.index.json"] = &fstest.MapFile{Data: []byte(`{"weight_map":{"a":"../x.safetensors"}}`)}
		}, nil, "model.safetensors.index.json", ""},
		{"empty weight map", func(m fstest.MapFS) {
			m["model.safetensors.index.json"] = &fstest.MapFile{Data: []byte(`{"weight_map":{}}`)}
		}, nil, "model.safetensors.index.json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := shardedFS(t)
			tt.edit(m)
			_, err := Open(m)
			if err == nil {
				t.Fatal("Open succeeded, want an error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.is)
			}
			var fe *FileError
			var te *TensorError
			switch {
			case errors.As(err, &te):
				if te.File != tt.file || te.Tensor != tt.tensor {
					t.Errorf("TensorError names %q in %q, want %q in %q", te.Tensor, te.File, tt.tensor, tt.file)
				}
			case errors.As(err, &fe):
				if fe.File != tt.file || tt.tensor != "" {
					t.Errorf("FileError names %q, want %q (tensor %q)", fe.File, tt.file, tt.tensor)
				}
			default:
				t.Errorf("err = %v (%T), want *FileError or *TensorError", err, err)
			}
		})
	}
}

func ptr(v int) *int { return &v }

func TestGenerationTokenIDs(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		gen     string // "" means no generation_config.json
		wantBOS *int
		wantEOS []int
		wantPad *int
	}{
		{"config only", `{"architectures":["X"],"bos_token_id":1,"eos_token_id":2}`, "", ptr(1), []int{2}, nil},
		{"eos list in generation config wins", `{"architectures":["X"],"bos_token_id":1,"eos_token_id":2}`,
			`{"eos_token_id":[2,7,9]}`, ptr(1), []int{2, 7, 9}, nil},
		{"generation config overrides each field", `{"architectures":["X"],"bos_token_id":1,"eos_token_id":2,"pad_token_id":0}`,
			`{"bos_token_id":5,"eos_token_id":6,"pad_token_id":3}`, ptr(5), []int{6}, ptr(3)},
		{"null falls back to config", `{"architectures":["X"],"bos_token_id":1,"eos_token_id":[2,3]}`,
			`{"bos_token_id":null}`, ptr(1), []int{2, 3}, nil},
		{"nothing given", `{"architectures":["X"]}`, `{}`, nil, nil, nil},
		{"pad zero is kept", `{"architectures":["X"],"pad_token_id":0}`, "", nil, nil, ptr(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := singleFileFS(t)
			m["config.json"] = &fstest.MapFile{Data: []byte(tt.config)}
			if tt.gen != "" {
				m["generation_config.json"] = &fstest.MapFile{Data: []byte(tt.gen)}
			}
			c, err := Open(m)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			g := c.Generation
			if diff := cmp.Diff(tt.wantBOS, g.BOSID); diff != "" {
				t.Errorf("BOSID (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEOS, g.EOSIDs); diff != "" {
				t.Errorf("EOSIDs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPad, g.PadID); diff != "" {
				t.Errorf("PadID (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGenerationSamplingDefaults(t *testing.T) {
	m := singleFileFS(t)
	m["generation_config.json"] = &fstest.MapFile{Data: []byte(`{"do_sample":true,"temperature":0.6,"top_k":20,"top_p":0.95}`)}
	c, err := Open(m)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g := c.Generation
	if g.DoSample == nil || !*g.DoSample || *g.Temperature != 0.6 || *g.TopK != 20 || *g.TopP != 0.95 || g.MinP != nil {
		t.Errorf("sampling defaults = %+v", g)
	}
}

func TestOpenThroughMmapIsZeroCopy(t *testing.T) {
	dir := t.TempDir()
	for name, f := range shardedFS(t) {
		if err := os.WriteFile(filepath.Join(dir, name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Open(mmap.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	raw1, err := c.Raw("b.weight")
	if err != nil {
		t.Fatal(err)
	}
	raw2, _ := c.Raw("b.weight")
	if &raw1[0] != &raw2[0] {
		t.Errorf("Raw through mmap.DirFS copies the data; want a view of the mapping")
	}
	if v, _, err := c.Float32("b.weight"); err != nil || !cmp.Equal(v, []float32{4, 5, 6}) {
		t.Errorf("Float32(b.weight) = %v, %v", v, err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestFingerprintChangesWithContent(t *testing.T) {
	fingerprint := func(m fstest.MapFS) string {
		t.Helper()
		c, err := Open(m)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.Fingerprint()
	}
	base := fingerprint(shardedFS(t))
	if base != fingerprint(shardedFS(t)) {
		t.Errorf("same folder, different fingerprints")
	}
	if !strings.HasPrefix(base, "sha256:") || len(base) != len("sha256:")+64 {
		t.Errorf("fingerprint %q is not sha256:<64 hex digits>", base)
	}
	edits := map[string]func(fstest.MapFS){
		"config": func(m fstest.MapFS) {
			m["config.json"] = &fstest.MapFile{Data: []byte(strings.Replace(llamaConfig, `"hidden_size":4`, `"hidden_size":5`, 1))}
		},
		"tokenizer": func(m fstest.MapFS) { m["tokenizer.json"] = &fstest.MapFile{Data: []byte(`{}`)} },
		"shard shape": func(m fstest.MapFS) {
			m["model-00002-of-00002.safetensors"] = &fstest.MapFile{Data: safetensorsFile(t, f32Tensor("b.weight", []int{3, 1}, 4, 5, 6))}
		},
	}
	for name, edit := range edits {
		m := shardedFS(t)
		edit(m)
		if fingerprint(m) == base {
			t.Errorf("changing the %s kept the fingerprint", name)
		}
	}
}
