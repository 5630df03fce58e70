// Package llama gives the meaning of Llama-family Hugging Face configs (LlamaForCausalLM,
// MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, and the mixtures of experts
// Qwen3MoeForCausalLM and MixtralForCausalLM: moe.go) as decoder specs. It knows config
// fields and weight names; it does not read files or run anything.
//
// Sliding layers follow transformers (decoder.LayerTypes): Mistral slides every layer when
// sliding_window is set (4096 when the field is absent, none when null); Qwen2/3 slide the
// layers from max_window_layers (default 28) on when use_sliding_window is true; Llama
// ignores sliding_window. An explicit layer_types list wins, except for Llama.
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
	HiddenSize            int                     `json:"hidden_size"`
	NumHiddenLayers       int                     `json:"num_hidden_layers"`
	NumAttentionHeads     int                     `json:"num_attention_heads"`
	NumKeyValueHeads      *int                    `json:"num_key_value_heads"`
	HeadDim               *int                    `json:"head_dim"`
	IntermediateSize      int                     `json:"intermediate_size"`
	VocabSize             int                     `json:"vocab_size"`
	RMSNormEps            float64                 `json:"rms_norm_eps"`
	RopeTheta             *float64                `json:"rope_theta"`
	RopeScaling           *decoder.RopeScaling    `json:"rope_scaling"`
	RopeParameters        *decoder.RopeParameters `json:"rope_parameters"` // transformers v5: replaces rope_theta and rope_scaling
	TieWordEmbeddings     *bool                   `json:"tie_word_embeddings"`
	AttentionBias         bool                    `json:"attention_bias"`
	MLPBias               bool                    `json:"mlp_bias"`
	HiddenAct             string                  `json:"hidden_act"`
	MaxPositionEmbeddings int                     `json:"max_position_embeddings"`
	SlidingWindow         decoder.Opt[int]        `json:"sliding_window"`
	UseSlidingWindow      bool                    `json:"use_sliding_window"`
	MaxWindowLayers       decoder.Opt[int]        `json:"max_window_layers"`
	LayerTypes            []string                `json:"layer_types"`
	moeConfig
}

// Variant is one architecture of the family.
type Variant struct {
	Class string // the Hugging Face class name (config.json architectures[0])
	// QKVBias: Qwen2 always has q/k/v biases; others follow attention_bias.
	QKVBias bool
	// QKNorm: Qwen3's per-head q/k RMSNorm.
	QKNorm bool
	// Sliding decides the layer types when config.json has no layer_types.
	Sliding decoder.SlidingRule
	// Experts: how the config describes a mixture of experts (none for dense variants).
	Experts experts
	// windowIfUsed: sliding_window applies only when use_sliding_window is true
	// (Qwen3MoeConfig sets it to None otherwise).
	windowIfUsed bool
	// defaultWindow is transformers' sliding_window default, used when the field is
	// absent (an explicit null means no window).
	defaultWindow int
	defaultTheta  float64
}

// Variants lists the supported architectures by Hugging Face class name.
var Variants = []Variant{
	{Class: "LlamaForCausalLM", Sliding: decoder.NoSliding, defaultTheta: 10000},
	{Class: "MistralForCausalLM", Sliding: decoder.AllSliding, defaultWindow: 4096, defaultTheta: 10000},
	{Class: "Qwen2ForCausalLM", QKVBias: true, Sliding: decoder.WindowLayersSliding, defaultWindow: 4096, defaultTheta: 10000},
	{Class: "Qwen3ForCausalLM", QKNorm: true, Sliding: decoder.WindowLayersSliding, defaultWindow: 4096, defaultTheta: 10000},
	{Class: "Qwen3MoeForCausalLM", QKNorm: true, Experts: qwen3MoeExperts, Sliding: decoder.AllSliding, windowIfUsed: true, defaultWindow: 4096, defaultTheta: 10000},
	{Class: "MixtralForCausalLM", Experts: mixtralExperts, Sliding: decoder.AllSliding, defaultTheta: 1e6},
}

// Name is the class name the variant is registered under.
func (v Variant) Name() string { return v.Class }

// defaultMaxWindowLayers is Qwen2Config's and Qwen3Config's max_window_layers default.
const defaultMaxWindowLayers = 28

// Spec validates a raw config and returns the model's decoder spec and its trained context.
func (v Variant) Spec(raw json.RawMessage) (*decoder.Spec, int, error) {
	var c rawConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, 0, fmt.Errorf("%s config: %w", v.Class, err)
	}
	bad := func(field string, val any, want string) error {
		return &decoder.FieldError{Class: v.Class, Field: field, Problem: fmt.Sprintf("= %v, %s", val, want)}
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
	kv, headDim, err := decoder.Heads(v.Class, c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim)
	if err != nil {
		return nil, 0, err
	}
	act := program.ActSiLU
	switch c.HiddenAct {
	case "silu", "swish", "":
	case "gelu_pytorch_tanh", "gelu_tanh":
		act = program.ActGELUTanh
	default:
		return nil, 0, bad("hidden_act", c.HiddenAct, "unsupported (silu, gelu_pytorch_tanh)")
	}
	theta, scaling := v.defaultTheta, c.RopeScaling
	if c.RopeTheta != nil {
		theta = *c.RopeTheta
	}
	if p := c.RopeParameters; p != nil {
		if p.RopeTheta != nil {
			theta = *p.RopeTheta
		}
		scaling = &p.RopeScaling
	}
	rope, err := decoder.NewRoPE(headDim, theta, scaling, c.MaxPositionEmbeddings)
	if err != nil {
		return nil, 0, fmt.Errorf("%s config: %w", v.Class, err)
	}
	types, window, err := v.layerTypes(&c)
	if err != nil {
		return nil, 0, err
	}
	moe, err := v.moe(&c)
	if err != nil {
		return nil, 0, err
	}
	names := Names
	if v.Experts != noExperts {
		names = v.moeNames()
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
		Names:      names,
		MoE:        moe,
	}
	return s, c.MaxPositionEmbeddings, s.Validate()
}

// layerTypes applies transformers' defaults for absent fields, then the family's rule.
func (v Variant) layerTypes(c *rawConfig) ([]program.LayerType, int, error) {
	maxWindow := defaultMaxWindowLayers
	if p := c.MaxWindowLayers.Value; p != nil {
		maxWindow = *p
	}
	window := c.SlidingWindow.Or(v.defaultWindow)
	if (v.windowIfUsed && !c.UseSlidingWindow) || (v.defaultWindow == 0 && !c.SlidingWindow.Present) {
		window = nil // no window: absent with no default, or not switched on
	}
	return decoder.LayerTypes(v.Class, v.Sliding, decoder.SlidingConfig{
		Layers:           c.NumHiddenLayers,
		LayerTypes:       c.LayerTypes,
		Window:           window,
		UseSlidingWindow: c.UseSlidingWindow,
		MaxWindowLayers:  maxWindow,
	})
}

// Names are the transformers weight names of the family: the common ones, where
// post_attention_layernorm is the norm before the MLP.
var Names = decoder.TransformersNames(nil)

// Plain is a Llama-shaped variant with none of the family's switches (no sliding window,
// no q/k norm, biases only as attention_bias and mlp_bias say) and the class's rope_theta
// default: the base of families whose configs read like Llama's and that change the graph
// afterwards (OLMo 2, SmolLM3, Granite). Its Spec's errors name class.
func Plain(class string, defaultTheta float64) Variant {
	return Variant{Class: class, Sliding: decoder.NoSliding, defaultTheta: defaultTheta}
}
