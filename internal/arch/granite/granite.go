// Package granite gives the meaning of IBM Granite 3 Hugging Face configs
// (GraniteForCausalLM) as decoder specs. It knows config fields and weight names; it does
// not read files or run anything.
//
// Granite is Llama with four multipliers, after transformers' modeling_granite.py:
// embeddings × embedding_multiplier; attention scores × attention_multiplier (instead of
// 1/sqrt(head_dim)); each sublayer's output × residual_multiplier before the residual add;
// logits ÷ logits_scaling. Each defaults to 1 when absent. The residual and logits factors
// become program ops (scale) rather than being folded into the weights: folding would round
// bfloat16 weights a second time.
package granite

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/arch/llama"
)

// rawConfig holds GraniteConfig's fields beyond Llama's and the sizes head_dim is checked
// against.
type rawConfig struct {
	EmbeddingMultiplier *float64 `json:"embedding_multiplier"`
	ResidualMultiplier  *float64 `json:"residual_multiplier"`
	AttentionMultiplier *float64 `json:"attention_multiplier"`
	LogitsScaling       *float64 `json:"logits_scaling"`
	HiddenSize          int      `json:"hidden_size"`
	NumAttentionHeads   int      `json:"num_attention_heads"`
	HeadDim             *int     `json:"head_dim"`
}

// Variant is one architecture of the family.
type Variant struct {
	Class string // the Hugging Face class name (config.json architectures[0])
	// defaultTheta is GraniteConfig's rope_theta default.
	defaultTheta float64
}

// Variants lists the supported architectures by Hugging Face class name.
var Variants = []Variant{
	{Class: "GraniteForCausalLM", defaultTheta: 10000},
}

// Name is the class name the variant is registered under.
func (v Variant) Name() string { return v.Class }

// Spec validates a raw config and returns the model's decoder spec and its trained context.
// The sizes, RoPE and biases are read as for Llama (errors name the field); each multiplier
// must be finite and > 0 (a *decoder.FieldError names it otherwise).
func (v Variant) Spec(raw json.RawMessage) (*decoder.Spec, int, error) {
	s, maxPos, err := llama.Plain(v.Class, v.defaultTheta).Spec(raw)
	if err != nil {
		return nil, 0, err
	}
	var m rawConfig
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, 0, fmt.Errorf("%s config: %w", v.Class, err)
	}
	// GraniteConfig has no head_dim: transformers would still honour one, llama.cpp's
	// converter drops it. Refuse one that disagrees with hidden_size/num_attention_heads.
	if m.HeadDim != nil && *m.HeadDim*m.NumAttentionHeads != m.HiddenSize {
		return nil, 0, &decoder.FieldError{Class: v.Class, Field: "head_dim",
			Problem: fmt.Sprintf("= %d, Granite's head_dim is hidden_size/num_attention_heads = %d/%d; remove the field", *m.HeadDim, m.HiddenSize, m.NumAttentionHeads)}
	}
	factor := func(field string, p *float64) (float64, error) {
		if p == nil {
			return 1, nil // GraniteConfig's default
		}
		if f := float64(float32(*p)); !(*p > 0) || f == 0 || math.IsInf(f, 0) {
			return 0, &decoder.FieldError{Class: v.Class, Field: field, Problem: fmt.Sprintf("= %v, must be > 0 and within float32's range", *p)}
		}
		return *p, nil
	}
	var embed, residual, attn, logits float64
	for _, f := range []struct {
		field string
		p     *float64
		dst   *float64
	}{{"embedding_multiplier", m.EmbeddingMultiplier, &embed}, {"residual_multiplier", m.ResidualMultiplier, &residual},
		{"attention_multiplier", m.AttentionMultiplier, &attn}, {"logits_scaling", m.LogitsScaling, &logits}} {
		if *f.dst, err = factor(f.field, f.p); err != nil {
			return nil, 0, err
		}
	}
	s.EmbedScale = float32(embed)
	s.AttnScale = float32(attn)
	if residual != 1 {
		s.ResidualScale = float32(residual)
	}
	if logits != 1 {
		s.LogitScale = float32(1 / logits)
	}
	s.Names = Names
	return s, maxPos, s.Validate()
}

// Names are Granite's weight names: transformers' usual (Llama's) ones.
var Names = decoder.TransformersNames(nil)
