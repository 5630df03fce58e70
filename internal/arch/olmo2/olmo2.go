// Package olmo2 gives the meaning of OLMo 2 Hugging Face configs (Olmo2ForCausalLM) as
// decoder specs. It knows config fields and weight names; it does not read files or run
// anything.
//
// OLMo 2 reads like Llama (sizes, rope_theta, rope_scaling, attention_bias) but computes
// two things differently, after transformers' modeling_olmo2.py: each sublayer reads the
// residual stream unnormalized and its output is normalized before the residual add
// (post_attention_layernorm, post_feedforward_layernorm; there is no input_layernorm), and
// q and k are RMS-normalized over the whole projection (q_norm [heads*head_dim], k_norm
// [kv_heads*head_dim]) before being split into heads and rotated.
package olmo2

import (
	"encoding/json"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/arch/llama"
)

// Variant is one architecture of the family.
type Variant struct {
	Class string // the Hugging Face class name (config.json architectures[0])
	// defaultTheta is Olmo2Config's rope_theta default.
	defaultTheta float64
}

// Variants lists the supported architectures by Hugging Face class name.
var Variants = []Variant{
	{Class: "Olmo2ForCausalLM", defaultTheta: 10000},
}

// Name is the class name the variant is registered under.
func (v Variant) Name() string { return v.Class }

// Spec validates a raw config and returns the model's decoder spec and its trained context.
// The sizes, RoPE and biases are read as for Llama (errors name the field); OLMo 2 has no
// sliding window.
func (v Variant) Spec(raw json.RawMessage) (*decoder.Spec, int, error) {
	s, maxPos, err := llama.Plain(v.Class, v.defaultTheta).Spec(raw)
	if err != nil {
		return nil, 0, err
	}
	s.SandwichNorms, s.NoPreNorms = true, true
	s.QKNorm, s.QKNormWhole = true, true
	s.Names = Names
	return s, maxPos, s.Validate()
}

// Names are OLMo 2's weight names: transformers' usual ones, where post_attention_layernorm
// is the norm of the attention's output (not the norm before the MLP, as in Llama).
var Names = decoder.TransformersNames(map[decoder.Role]string{
	decoder.PostAttnNorm: "post_attention_layernorm.weight",
	decoder.PostFFNNorm:  "post_feedforward_layernorm.weight",
})
