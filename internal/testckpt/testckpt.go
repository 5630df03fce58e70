// Package testckpt provides checkpoints for tests and benchmarks: the
// random-weight Hugging Face fixtures (Llama 3, Qwen2, Qwen3, Mistral,
// Gemma 3, OLMo 2, SmolLM3, Granite, Qwen3-MoE, Mixtral, Phi-3/3.5/4-mini; f32 and
// bf16) regenerated bit-exactly from their embedded weights_spec.json, the llama.cpp (and,
// for the families after Gemma 3, float64) reference logits summaries computed on them,
// and Synthesize/Generate to build random checkpoints of any size of any registered
// architecture (internal/arch), with the tensors its decoder spec reads.
//
// It owns the fixture data and the generator rule. It does not read or
// interpret checkpoints (see internal/hf) and holds no tokenizers.
package testckpt

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/internal/safetensors"
)

//go:embed testdata/*/*.json testdata/*/*/*.json testdata/*/*.md
var fixtures embed.FS

// Names returns the names of the embedded fixtures, sorted
// ("gemma3", "gemma3-bf16", "llama", …).
func Names() []string {
	entries, _ := fs.ReadDir(fixtures, "testdata") // embedded: cannot fail
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

func readFixture(name, file string) ([]byte, error) {
	b, err := fs.ReadFile(fixtures, "testdata/"+name+"/"+file)
	if err != nil {
		return nil, fmt.Errorf("testckpt: unknown fixture %q (have %v): %w", name, Names(), err)
	}
	return b, nil
}

// FixtureSpec returns the parsed weights_spec.json of fixture name.
func FixtureSpec(name string) (Spec, error) {
	b, err := readFixture(name, "weights_spec.json")
	if err != nil {
		return Spec{}, err
	}
	return ParseSpec(b)
}

// generated caches each fixture's model.safetensors for the process.
var generated struct {
	sync.Mutex
	byName map[string]*generation
}

type generation struct {
	once sync.Once
	data []byte
	err  error
}

func weights(name string) ([]byte, error) {
	generated.Lock()
	if generated.byName == nil {
		generated.byName = make(map[string]*generation)
	}
	g, ok := generated.byName[name]
	if !ok {
		g = &generation{}
		generated.byName[name] = g
	}
	generated.Unlock()
	g.once.Do(func() {
		spec, err := FixtureSpec(name)
		if err != nil {
			g.err = err
			return
		}
		dt, _ := safetensors.ParseDType(spec.DType)
		g.data, g.err = Generate(spec, dt)
	})
	return g.data, g.err
}

// Random returns fixture name as an in-memory Hugging Face folder:
// config.json, generation_config.json (decoders) and model.safetensors (generated once
// per process and shared: do not modify the files' Data), and the Extras. There is no
// tokenizer.
func Random(name string) (fstest.MapFS, error) {
	cfg, err := readFixture(name, "config.json")
	if err != nil {
		return nil, err
	}
	w, err := weights(name)
	if err != nil {
		return nil, err
	}
	fsys := fstest.MapFS{
		"config.json":       {Data: cfg, Mode: 0o444},
		"model.safetensors": {Data: w, Mode: 0o444},
	}
	// Encoders' folders have no generation_config.json.
	if gen, err := fs.ReadFile(fixtures, "testdata/"+name+"/generation_config.json"); err == nil {
		fsys["generation_config.json"] = &fstest.MapFile{Data: gen, Mode: 0o444}
	}
	extra, err := Extras(name)
	if err != nil {
		return nil, err
	}
	for p, data := range extra {
		fsys[p] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
	return fsys, nil
}

// Extras returns the files of fixture name beyond config.json, generation_config.json and
// the model's weights, by path: sentence-transformers' modules (modules.json, each module
// folder's config.json, and its model.safetensors generated from its weights_spec.json),
// config_sentence_transformers.json, README.md. References and weight specs are left out.
func Extras(name string) (map[string][]byte, error) {
	root := "testdata/" + name
	out := map[string][]byte{}
	err := fs.WalkDir(fixtures, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(p, root+"/")
		base := path.Base(rel)
		switch {
		case rel == "config.json" || rel == "generation_config.json" || rel == "weights_spec.json" || strings.HasPrefix(base, "reference"):
			return nil
		case base == "weights_spec.json": // a module's weights
			b, err := fs.ReadFile(fixtures, p)
			if err != nil {
				return err
			}
			spec, err := ParseSpec(b)
			if err != nil {
				return fmt.Errorf("testckpt: %s/%s: %w", name, rel, err)
			}
			dt, _ := safetensors.ParseDType(spec.DType)
			data, err := Generate(spec, dt)
			if err != nil {
				return err
			}
			out[path.Join(path.Dir(rel), "model.safetensors")] = data
			return nil
		}
		b, err := fs.ReadFile(fixtures, p)
		out[rel] = b
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("testckpt: fixture %q: %w", name, err)
	}
	return out, nil
}

// Summary is a reference run on a fixture: llama.cpp's (reference.summary.json: CPU, f32
// KV cache, on llama.cpp's own conversion of the checkpoint) or a float64 one
// (reference64.summary.json).
type Summary struct {
	Reference       string     `json:"reference"` // the implementation that produced it
	Model           string     `json:"model"`
	NVocab          int        `json:"n_vocab"`
	NPositions      int        `json:"n_positions"`
	InputIDs        []int      `json:"input_ids"`         // the prompt, BOS first where the tokenizer adds one
	GreedyIDs       []int      `json:"greedy_ids"`        // 16 tokens greedily generated after the prompt
	GreedyMaxLogits []float32  `json:"greedy_max_logits"` // the max logit at each greedy step
	ProbeIDs        []int      `json:"probe_ids"`         // probe_ids[k] = k * (vocab/64)
	Positions       []Position `json:"positions"`         // one per prompt position
	// MinRouterMargin (mixture-of-experts models, float64 references) is the smallest gap
	// between a token's k-th and (k+1)-th router logit in any layer.
	MinRouterMargin float64 `json:"min_router_margin,omitempty"`
}

// Position holds the reference logits summary at one prompt position.
type Position struct {
	Pos         int       `json:"pos"`
	Argmax      int       `json:"argmax"`
	LogSumExp   float64   `json:"logsumexp"`
	Top10       []IDLogit `json:"top10"`        // highest first
	ProbeLogits []float32 `json:"probe_logits"` // the logits at Summary.ProbeIDs
}

// IDLogit is a token id with its logit, stored as [id, logit] in JSON.
type IDLogit struct {
	ID    int
	Logit float32
}

// UnmarshalJSON reads [id, logit].
func (p *IDLogit) UnmarshalJSON(b []byte) error {
	var pair [2]json.Number
	if err := json.Unmarshal(b, &pair); err != nil {
		return fmt.Errorf("want [id, logit]: %w", err)
	}
	id, err := pair[0].Int64()
	if err != nil {
		return fmt.Errorf("token id %s: %w", pair[0], err)
	}
	logit, err := pair[1].Float64()
	if err != nil {
		return fmt.Errorf("logit %s: %w", pair[1], err)
	}
	*p = IDLogit{ID: int(id), Logit: float32(logit)}
	return nil
}

// Reference returns the parsed reference.summary.json of fixture name: llama.cpp's run.
func Reference(name string) (*Summary, error) { return readSummary(name, "reference.summary.json") }

// Float64Reference returns the parsed reference64.summary.json of fixture name: a float64
// NumPy forward pass written from transformers' modeling code (tools/refs/ref64.py), kept
// for the families added after the first six (OLMo 2, SmolLM3, Granite; Qwen3-MoE and
// Mixtral from tools/refs/moe64.py; Phi-3 from tools/refs/phi3_ref64.py).
func Float64Reference(name string) (*Summary, error) {
	return readSummary(name, "reference64.summary.json")
}

func readSummary(name, file string) (*Summary, error) {
	b, err := readFixture(name, file)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("testckpt: %s/%s: %w", name, file, err)
	}
	if len(s.Positions) != s.NPositions || len(s.InputIDs) != s.NPositions {
		return nil, fmt.Errorf("testckpt: %s/%s: %d positions and %d input ids, header says %d",
			name, file, len(s.Positions), len(s.InputIDs), s.NPositions)
	}
	return &s, nil
}

// EncodeSummary is a float64 reference run of an embedding or reranking fixture
// (reference64.encode.json, written by tools/refs/encode64.py from transformers' modeling
// code and sentence-transformers' modules): each input run alone, unpadded.
type EncodeSummary struct {
	Reference string        `json:"reference"`
	Model     string        `json:"model"`
	Task      string        `json:"task"` // "embed" or "rerank"
	Inputs    []EncodeInput `json:"inputs"`
	// Outputs has one row per input: its embedding, or its scores (a cross-encoder's logit;
	// Qwen3-Reranker's logit(yes) - logit(no)).
	Outputs [][]float64 `json:"outputs"`
	// Relevance (rerank) is each input's relevance: sigmoid(score), softmax([no, yes])[yes]
	// for Qwen3-Reranker.
	Relevance []float64 `json:"relevance,omitempty"`
}

// EncodeInput is one sequence of an EncodeSummary: token ids and types (nil: all 0).
type EncodeInput struct {
	IDs   []int `json:"ids"`
	Types []int `json:"types,omitempty"`
}

// EncodeReference returns the parsed reference64.encode.json of fixture name.
func EncodeReference(name string) (*EncodeSummary, error) {
	b, err := readFixture(name, "reference64.encode.json")
	if err != nil {
		return nil, err
	}
	var s EncodeSummary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("testckpt: %s/reference64.encode.json: %w", name, err)
	}
	if len(s.Inputs) == 0 || len(s.Outputs) != len(s.Inputs) || (s.Task == "rerank") != (len(s.Relevance) == len(s.Inputs)) {
		return nil, fmt.Errorf("testckpt: %s/reference64.encode.json: %d inputs, %d outputs, %d relevances for task %q",
			name, len(s.Inputs), len(s.Outputs), len(s.Relevance), s.Task)
	}
	return &s, nil
}
