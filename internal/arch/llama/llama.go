// Package llama gives the meaning of Llama-family Hugging Face configs (LlamaForCausalLM,
// MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM) as decoder specs. It knows config
// fields and weight names; it does not read files or run anything.
package llama

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/program"
)

// rawConfig is config.json as written by transformers, for the fields this family uses.
type rawConfig struct {
	HiddenSize            int                  `json:"hidden_size"`
	NumHiddenLayers       int                  `json:"num_hidden_layers"`
	NumAttentionHeads     int                  `json:"num_attention_heads"`
	NumKeyValueHeads      *int                 `json:"num_key_value_heads"`
	HeadDim               *int                 `json:"head_dim"`
	IntermediateSize      int                  `json:"intermediate_size"`
	VocabSize             int                  `json:"vocab_size"`
	RMSNormEps            float64              `json:"rms_norm_eps"`
	RopeTheta             *float64             `json:"rope_theta"`
	RopeScaling           *decoder.RopeScaling `json:"rope_scaling"`
	TieWordEmbeddings     *bool                `json:"tie_word_embeddings"`
	AttentionBias         bool                 `json:"attention_bias"`
	MLPBias               bool                 `json:"mlp_bias"`
	HiddenAct             string               `json:"hidden_act"`
	MaxPositionEmbeddings int                  `json:"max_position_embeddings"`
	SlidingWindow         *int                 `json:"sliding_window"`
	UseSlidingWindow      *bool                `json:"use_sliding_window"`
	MaxWindowLayers       *int                 `json:"max_window_layers"`
	LayerTypes            []string             `json:"layer_types"`
}

// Variant is one architecture of the family.
type Variant struct {
	Name string
	// QKVBias: Qwen2 always has q/k/v biases; others follow attention_bias.
	QKVBias bool
	// QKNorm: Qwen3's per-head q/k RMSNorm.
	QKNorm bool
	// SlidingFromQwen: layer types from use_sliding_window / max_window_layers;
	// otherwise (Mistral) every layer slides when sliding_window is set.
	SlidingFromQwen bool
	defaultTheta    float64
}

// Variants lists the supported architectures by Hugging Face class name.
var Variants = []Variant{
	{Name: "LlamaForCausalLM", defaultTheta: 10000},
	{Name: "MistralForCausalLM", defaultTheta: 10000},
	{Name: "Qwen2ForCausalLM", QKVBias: true, SlidingFromQwen: true, defaultTheta: 10000},
	{Name: "Qwen3ForCausalLM", QKNorm: true, SlidingFromQwen: true, defaultTheta: 10000},
}

// Spec validates a raw config and returns the model's decoder spec and its trained context.
func (v Variant) Spec(raw json.RawMessage) (*decoder.Spec, int, error) {
	var c rawConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, 0, fmt.Errorf("%s config: %w", v.Name, err)
	}
	bad := func(field string, val any, want string) error {
		return fmt.Errorf("%s config: %s = %v, %s", v.Name, field, val, want)
	}
	if c.HiddenSize <= 0 {
		return nil, 0, bad("hidden_size", c.HiddenSize, "must be > 0")
	}
	if c.NumHiddenLayers <= 0 {
		return nil, 0, bad("num_hidden_layers", c.NumHiddenLayers, "must be > 0")
	}
	if c.NumAttentionHeads <= 0 {
		return nil, 0, bad("num_attention_heads", c.NumAttentionHeads, "must be > 0")
	}
	if c.IntermediateSize <= 0 {
		return nil, 0, bad("intermediate_size", c.IntermediateSize, "must be > 0")
	}
	if c.VocabSize <= 0 {
		return nil, 0, bad("vocab_size", c.VocabSize, "must be > 0")
	}
	if c.RMSNormEps <= 0 {
		return nil, 0, bad("rms_norm_eps", c.RMSNormEps, "must be > 0")
	}
	if c.MaxPositionEmbeddings <= 0 {
		return nil, 0, bad("max_position_embeddings", c.MaxPositionEmbeddings, "must be > 0")
	}
	kv := c.NumAttentionHeads
	if c.NumKeyValueHeads != nil {
		kv = *c.NumKeyValueHeads
	}
	if kv <= 0 || c.NumAttentionHeads%kv != 0 {
		return nil, 0, bad("num_key_value_heads", kv, fmt.Sprintf("must divide num_attention_heads %d", c.NumAttentionHeads))
	}
	headDim := c.HiddenSize / c.NumAttentionHeads
	if c.HeadDim != nil {
		headDim = *c.HeadDim
	} else if c.HiddenSize%c.NumAttentionHeads != 0 {
		return nil, 0, bad("hidden_size", c.HiddenSize, "must be a multiple of num_attention_heads when head_dim is absent")
	}
	if headDim <= 0 || headDim%2 != 0 {
		return nil, 0, bad("head_dim", headDim, "must be even and > 0")
	}
	act := program.ActSiLU
	switch c.HiddenAct {
	case "silu", "swish", "":
	case "gelu_pytorch_tanh", "gelu_tanh":
		act = program.ActGELUTanh
	default:
		return nil, 0, bad("hidden_act", c.HiddenAct, "unsupported (silu, gelu_pytorch_tanh)")
	}
	theta := v.defaultTheta
	if c.RopeTheta != nil {
		theta = *c.RopeTheta
	}
	rope, err := decoder.NewRoPE(headDim, theta, c.RopeScaling, c.MaxPositionEmbeddings)
	if err != nil {
		return nil, 0, fmt.Errorf("%s config: %w", v.Name, err)
	}
	types, window, err := v.layerTypes(&c)
	if err != nil {
		return nil, 0, err
	}
	s := &decoder.Spec{
		Hidden: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads, KVHeads: kv,
		HeadDim: headDim, FFN: c.IntermediateSize, Vocab: c.VocabSize,
		NormEps:    float32(c.RMSNormEps),
		Activation: act,
		QKNorm:     v.QKNorm,
		QKVBias:    v.QKVBias || c.AttentionBias,
		OBias:      c.AttentionBias,
		MLPBias:    c.MLPBias,
		EmbedScale: 1,
		AttnScale:  float32(1 / math.Sqrt(float64(headDim))),
		Tied:       c.TieWordEmbeddings != nil && *c.TieWordEmbeddings,
		LayerTypes: types,
		Window:     window,
		RoPE:       map[program.LayerType]decoder.RoPE{program.LayerFull: rope, program.LayerSliding: rope},
		Names:      Names,
	}
	return s, c.MaxPositionEmbeddings, s.Validate()
}

func (v Variant) layerTypes(c *rawConfig) ([]program.LayerType, int, error) {
	types := make([]program.LayerType, c.NumHiddenLayers)
	window := 0
	if c.SlidingWindow != nil {
		window = *c.SlidingWindow
	}
	if len(c.LayerTypes) > 0 {
		if len(c.LayerTypes) != c.NumHiddenLayers {
			return nil, 0, fmt.Errorf("%s config: layer_types has %d entries for %d layers", v.Name, len(c.LayerTypes), c.NumHiddenLayers)
		}
		for i, t := range c.LayerTypes {
			switch t {
			case "full_attention":
				types[i] = program.LayerFull
			case "sliding_attention":
				types[i] = program.LayerSliding
			default:
				return nil, 0, fmt.Errorf("%s config: layer_types[%d] = %q is not full_attention or sliding_attention", v.Name, i, t)
			}
		}
	} else {
		for i := range types {
			slide := window > 0
			if v.SlidingFromQwen {
				maxWindow := 0
				if c.MaxWindowLayers != nil {
					maxWindow = *c.MaxWindowLayers
				}
				slide = slide && c.UseSlidingWindow != nil && *c.UseSlidingWindow && i >= maxWindow
			}
			types[i] = program.LayerFull
			if slide {
				types[i] = program.LayerSliding
			}
		}
	}
	sliding := false
	for _, t := range types {
		sliding = sliding || t == program.LayerSliding
	}
	if !sliding {
		return types, 0, nil
	}
	if window <= 0 {
		return nil, 0, fmt.Errorf("%s config: sliding layers need sliding_window > 0, got %d", v.Name, window)
	}
	return types, window, nil
}

// Names are the transformers weight names of the family.
var Names = decoder.Names{
	Embed:     "model.embed_tokens.weight",
	FinalNorm: "model.norm.weight",
	LMHead:    "lm_head.weight",
	Layer: func(l int, r decoder.Role) string {
		p := fmt.Sprintf("model.layers.%d.", l)
		switch r {
		case decoder.AttnNorm:
			return p + "input_layernorm.weight"
		case decoder.FFNNorm:
			return p + "post_attention_layernorm.weight"
		case decoder.Q, decoder.K, decoder.V, decoder.O:
			return p + "self_attn." + string(r) + "_proj.weight"
		case decoder.QBias, decoder.KBias, decoder.VBias, decoder.OBias:
			return p + "self_attn." + string(r)[:1] + "_proj.bias"
		case decoder.QNorm:
			return p + "self_attn.q_norm.weight"
		case decoder.KNorm:
			return p + "self_attn.k_norm.weight"
		case decoder.Gate, decoder.Up, decoder.Down:
			return p + "mlp." + string(r) + "_proj.weight"
		case decoder.GateBias:
			return p + "mlp.gate_proj.bias"
		case decoder.UpBias:
			return p + "mlp.up_proj.bias"
		case decoder.DownBias:
			return p + "mlp.down_proj.bias"
		}
		return p + string(r)
	},
}
