package testckpt

import (
	"encoding/json"
	"fmt"
	"math"
)

// RawConfigFields are the config.json fields Synthesize needs.
type RawConfigFields struct {
	Architectures     []string `json:"architectures"`
	VocabSize         int      `json:"vocab_size"`
	HiddenSize        int      `json:"hidden_size"`
	IntermediateSize  int      `json:"intermediate_size"`
	NumHiddenLayers   int      `json:"num_hidden_layers"`
	NumAttentionHeads int      `json:"num_attention_heads"`
	NumKeyValueHeads  *int     `json:"num_key_value_heads"` // default NumAttentionHeads
	HeadDim           *int     `json:"head_dim"`            // default HiddenSize/NumAttentionHeads (Gemma 3: 256)
	TieWordEmbeddings *bool    `json:"tie_word_embeddings"` // default per architecture, as in transformers
	AttentionBias     *bool    `json:"attention_bias"`      // Llama/Mistral/Qwen3; Qwen2 always has q/k/v biases
}

// ParseConfig reads the fields Synthesize needs from a config.json.
func ParseConfig(data []byte) (RawConfigFields, error) {
	var c RawConfigFields
	if err := json.Unmarshal(data, &c); err != nil {
		return RawConfigFields{}, fmt.Errorf("testckpt: config.json: %w", err)
	}
	return c, nil
}

// family describes how an architecture names and initialises its weights.
type family struct {
	qkvBias   bool // always has q/k/v biases (Qwen2)
	qkNorm    bool // per-head q_norm / k_norm (Qwen3, Gemma 3)
	sandwich  bool // pre/post feed-forward norms (Gemma 3)
	normZero  bool // norms are stored as w in (1+w): centred at 0 (Gemma 3)
	tiedByDef bool // tie_word_embeddings default in transformers
	headDim   int  // default head_dim when absent; 0 means hidden/heads
}

var families = map[string]family{
	"LlamaForCausalLM":   {},
	"MistralForCausalLM": {},
	"Qwen2ForCausalLM":   {qkvBias: true},
	"Qwen3ForCausalLM":   {qkNorm: true},
	"Gemma3ForCausalLM":  {qkNorm: true, sandwich: true, normZero: true, tiedByDef: true, headDim: 256},
}

// Initialisation, as the fixtures use it: uniform with these half-widths.
var (
	embedScale = math.Sqrt(3)       // unit variance
	normScale  = 0.1 * math.Sqrt(3) // 0.1 standard deviation around the centre
	biasScale  = 0.5
)

// linearScale gives unit output variance for unit-variance inputs: 3/in.
func linearScale(in int) float64 { return math.Sqrt(3 / float64(in)) }

// Synthesize returns the Spec of random weights for any Llama, Mistral,
// Qwen2, Qwen3 or Gemma 3 (text) config, with the fixtures' tensor names,
// order and initialisation (norms centred at 1, or 0 for Gemma's (1+w);
// linear weights ±sqrt(3/in); embeddings ±sqrt(3); biases ±0.5) and
// seeds SeedFor(modelSeed, name). dtype is the stored dtype ("F32", "BF16", "F16").
func Synthesize(c RawConfigFields, modelSeed uint64, dtype string) (Spec, error) {
	if len(c.Architectures) == 0 {
		return Spec{}, fmt.Errorf("testckpt: config has no architectures")
	}
	arch := c.Architectures[0]
	fam, ok := families[arch]
	if !ok {
		return Spec{}, fmt.Errorf("testckpt: cannot synthesize %s; supported: Llama, Mistral, Qwen2, Qwen3, Gemma3 ForCausalLM", arch)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads}} {
		if f.v <= 0 {
			return Spec{}, fmt.Errorf("testckpt: config %s = %d; want > 0", f.name, f.v)
		}
	}
	kvHeads := c.NumAttentionHeads
	if c.NumKeyValueHeads != nil {
		kvHeads = *c.NumKeyValueHeads
	}
	headDim := c.HiddenSize / c.NumAttentionHeads
	if fam.headDim != 0 {
		headDim = fam.headDim
	}
	if c.HeadDim != nil {
		headDim = *c.HeadDim
	}
	if kvHeads <= 0 || headDim <= 0 {
		return Spec{}, fmt.Errorf("testckpt: config num_key_value_heads %d, head_dim %d; want > 0", kvHeads, headDim)
	}
	tied := fam.tiedByDef
	if c.TieWordEmbeddings != nil {
		tied = *c.TieWordEmbeddings
	}
	bias := fam.qkvBias || (c.AttentionBias != nil && *c.AttentionBias)
	normCenter := 1.0
	if fam.normZero {
		normCenter = 0
	}

	s := Spec{Generator: Generator, ModelSeed: modelSeed, DType: dtype}
	add := func(name string, center, scale float64, shape ...int) {
		s.Tensors = append(s.Tensors, TensorSpec{Name: name, Shape: shape, Seed: SeedFor(modelSeed, name), Center: center, Scale: scale})
	}
	hidden, inter, q, kv := c.HiddenSize, c.IntermediateSize, c.NumAttentionHeads*headDim, kvHeads*headDim
	add("model.embed_tokens.weight", 0, embedScale, c.VocabSize, hidden)
	for l := range c.NumHiddenLayers {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", normCenter, normScale, hidden)
		add(p+"post_attention_layernorm.weight", normCenter, normScale, hidden)
		if fam.sandwich {
			add(p+"pre_feedforward_layernorm.weight", normCenter, normScale, hidden)
			add(p+"post_feedforward_layernorm.weight", normCenter, normScale, hidden)
		}
		add(p+"self_attn.q_proj.weight", 0, linearScale(hidden), q, hidden)
		add(p+"self_attn.k_proj.weight", 0, linearScale(hidden), kv, hidden)
		add(p+"self_attn.v_proj.weight", 0, linearScale(hidden), kv, hidden)
		add(p+"self_attn.o_proj.weight", 0, linearScale(q), hidden, q)
		if bias {
			add(p+"self_attn.q_proj.bias", 0, biasScale, q)
			add(p+"self_attn.k_proj.bias", 0, biasScale, kv)
			add(p+"self_attn.v_proj.bias", 0, biasScale, kv)
		}
		if fam.qkNorm {
			add(p+"self_attn.q_norm.weight", normCenter, normScale, headDim)
			add(p+"self_attn.k_norm.weight", normCenter, normScale, headDim)
		}
		add(p+"mlp.gate_proj.weight", 0, linearScale(hidden), inter, hidden)
		add(p+"mlp.up_proj.weight", 0, linearScale(hidden), inter, hidden)
		add(p+"mlp.down_proj.weight", 0, linearScale(inter), hidden, inter)
	}
	add("model.norm.weight", normCenter, normScale, hidden)
	if !tied {
		add("lm_head.weight", 0, linearScale(hidden), c.VocabSize, hidden)
	}
	if err := s.validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}
