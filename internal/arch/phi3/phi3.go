// Package phi3 gives the meaning of Phi-3 Hugging Face configs (Phi3ForCausalLM: Phi-3-mini,
// Phi-3.5-mini, Phi-4-mini) as decoder specs. It knows config fields and weight names; it
// does not read files or run anything.
//
// What differs from Llama:
//   - q/k/v and gate/up are one matrix each in the checkpoint (qkv_proj: rows q, k, v;
//     gate_up_proj: rows gate, up); the exporter cuts them into the usual roles.
//   - partial_rotary_factor (Phi-4-mini: 0.75) rotates only the first
//     int(head_dim × factor) dims of each head.
//   - rope_scaling type longrope (Phi-3-mini-128k, Phi-3.5-mini, Phi-4-mini): the frequencies
//     are divided by short_factor or long_factor, and cos and sin multiplied by
//     sqrt(1 + ln(max_position_embeddings/original)/ln(original)) with original =
//     original_max_position_embeddings (4096 when absent). transformers switches from the
//     short to the long factors once a sequence outgrows original (and recomputes the cache);
//     a static program cannot switch, so its context C fixes the choice at export: long
//     factors when C > original, short otherwise (llama.cpp decides by n_ctx the same way).
//     A program with C > original therefore computes short sequences with the long factors,
//     as transformers does only after the switch.
//   - sliding_window, when set, makes every layer slide (Phi-3-mini-4k: 2047; Phi-3.5 and
//     Phi-4-mini: 262144, beyond any context), as transformers' mask does; llama.cpp
//     currently ignores Phi's window.
//
// attention_bias and mlp_bias are ignored, as transformers' Phi3 modules have no biases.
package phi3

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/program"
)

// rawConfig is config.json as transformers writes it for Phi3ForCausalLM.
type rawConfig struct {
	HiddenSize                    int                  `json:"hidden_size"`
	NumHiddenLayers               int                  `json:"num_hidden_layers"`
	NumAttentionHeads             int                  `json:"num_attention_heads"`
	NumKeyValueHeads              *int                 `json:"num_key_value_heads"` // absent or null: num_attention_heads
	HeadDim                       *int                 `json:"head_dim"`            // absent: hidden_size / num_attention_heads
	IntermediateSize              int                  `json:"intermediate_size"`
	VocabSize                     int                  `json:"vocab_size"`
	RMSNormEps                    decoder.Opt[float64] `json:"rms_norm_eps"`
	RopeTheta                     decoder.Opt[float64] `json:"rope_theta"`
	RopeScaling                   *decoder.RopeScaling `json:"rope_scaling"`
	RopeParameters                *ropeParameters      `json:"rope_parameters"` // transformers v5: replaces rope_theta, rope_scaling
	PartialRotaryFactor           decoder.Opt[float64] `json:"partial_rotary_factor"`
	MaxPositionEmbeddings         decoder.Opt[int]     `json:"max_position_embeddings"`
	OriginalMaxPositionEmbeddings decoder.Opt[int]     `json:"original_max_position_embeddings"`
	SlidingWindow                 decoder.Opt[int]     `json:"sliding_window"`
	TieWordEmbeddings             bool                 `json:"tie_word_embeddings"`
	HiddenAct                     string               `json:"hidden_act"`
}

// ropeParameters is transformers v5's rope_parameters for Phi-3: the base, the scaling
// and the rotary fraction in one object.
type ropeParameters struct {
	decoder.RopeParameters
	PartialRotaryFactor *float64 `json:"partial_rotary_factor"`
}

// Phi3Config's defaults for absent fields.
const (
	defaultEps      = 1e-5
	defaultTheta    = 10000
	defaultMaxPos   = 4096
	defaultOrigPos  = 4096
	defaultRotation = 1.0 // partial_rotary_factor
)

// Variant is the one architecture of the family.
type Variant struct {
	Class string // the Hugging Face class name (config.json architectures[0])
}

// Variants lists the supported architectures by Hugging Face class name.
var Variants = []Variant{{Class: "Phi3ForCausalLM"}}

// Name is the class name the variant is registered under.
func (v Variant) Name() string { return v.Class }

// Names are transformers' weight names for Phi-3: the usual ones, with the fused
// self_attn.qkv_proj and mlp.gate_up_proj. The program holds the cut parts under the
// usual q_proj, k_proj, v_proj, gate_proj and up_proj names.
var Names = decoder.TransformersNames(map[decoder.Role]string{
	decoder.QKV:    "self_attn.qkv_proj.weight",
	decoder.GateUp: "mlp.gate_up_proj.weight",
})

// Spec validates a raw config and returns the model's decoder spec and its trained context.
func (v Variant) Spec(raw json.RawMessage) (*decoder.Spec, int, error) {
	var c rawConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, 0, fmt.Errorf("%s config: %w", v.Class, err)
	}
	bad := func(field string, val any, want string) error {
		return &decoder.FieldError{Class: v.Class, Field: field, Problem: fmt.Sprintf("= %v, %s", val, want)}
	}
	sizes := []struct {
		field string
		v     int
	}{{"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumHiddenLayers},
		{"num_attention_heads", c.NumAttentionHeads}, {"intermediate_size", c.IntermediateSize},
		{"vocab_size", c.VocabSize}}
	for _, f := range sizes {
		if f.v <= 0 {
			return nil, 0, bad(f.field, f.v, "must be present and > 0")
		}
	}
	kv, headDim, err := decoder.Heads(v.Class, c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim)
	if err != nil {
		return nil, 0, err
	}
	switch c.HiddenAct {
	case "silu", "swish", "":
	default:
		return nil, 0, bad("hidden_act", fmt.Sprintf("%q", c.HiddenAct), "unsupported (silu)")
	}
	eps := *nonNull(c.RMSNormEps, defaultEps)
	if !(eps > 0) {
		return nil, 0, bad("rms_norm_eps", eps, "must be > 0")
	}
	maxPos := *nonNull(c.MaxPositionEmbeddings, defaultMaxPos)
	if maxPos <= 0 {
		return nil, 0, bad("max_position_embeddings", maxPos, "must be > 0")
	}
	rope, rotary, err := v.rope(&c, headDim, maxPos)
	if err != nil {
		return nil, 0, err
	}
	types, window, err := decoder.LayerTypes(v.Class, decoder.AllSliding, decoder.SlidingConfig{
		Layers: c.NumHiddenLayers,
		Window: c.SlidingWindow.Value, // Phi3Config's default is None
	})
	if err != nil {
		return nil, 0, err
	}
	s := &decoder.Spec{
		Hidden: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads, KVHeads: kv,
		HeadDim: headDim, FFN: c.IntermediateSize, Vocab: c.VocabSize,
		NormEps:     float32(eps),
		Activation:  program.ActSiLU,
		FusedQKV:    true,
		FusedGateUp: true,
		RotaryDim:   rotary,
		EmbedScale:  1,
		AttnScale:   float32(1 / math.Sqrt(float64(headDim))),
		Tied:        c.TieWordEmbeddings,
		LayerTypes:  types,
		Window:      window,
		RoPE:        map[program.LayerType]decoder.RoPE{program.LayerFull: rope, program.LayerSliding: rope},
		Names:       Names,
	}
	return s, maxPos, s.Validate()
}

// rope reads the rotary fraction and the RoPE scaling (none or longrope, as Phi3Config
// accepts) and returns the rotary dimension with its frequencies.
func (v Variant) rope(c *rawConfig, headDim, maxPos int) (decoder.RoPE, int, error) {
	theta := *nonNull(c.RopeTheta, defaultTheta)
	fraction := *nonNull(c.PartialRotaryFactor, defaultRotation)
	scaling, field := c.RopeScaling, "rope_scaling"
	if p := c.RopeParameters; p != nil {
		if p.RopeTheta != nil {
			theta = *p.RopeTheta
		}
		if p.PartialRotaryFactor != nil {
			fraction = *p.PartialRotaryFactor
		}
		scaling, field = &p.RopeScaling, "rope_parameters"
	}
	if !(fraction > 0 && fraction <= 1) {
		return decoder.RoPE{}, 0, &decoder.FieldError{Class: v.Class, Field: "partial_rotary_factor", Problem: fmt.Sprintf("= %g, must be in (0, 1]", fraction)}
	}
	rotary := int(float64(headDim) * fraction)
	if rotary <= 0 || rotary%2 != 0 {
		return decoder.RoPE{}, 0, &decoder.FieldError{Class: v.Class, Field: "partial_rotary_factor",
			Problem: fmt.Sprintf("= %g gives %d rotary dims of head_dim %d; they must be even and > 0", fraction, rotary, headDim)}
	}
	switch kind := scaling.Kind(); kind {
	case "default", "longrope":
	default:
		name := field + ".type"
		if scaling.RopeType != "" {
			name = field + ".rope_type"
		}
		return decoder.RoPE{}, 0, &decoder.FieldError{Class: v.Class, Field: name,
			Problem: fmt.Sprintf("= %q is not supported for Phi-3 (longrope, or null for none)", kind)}
	}
	if scaling != nil {
		// Phi3Config keeps the pretrained context at the top level (4096 when absent there
		// and in the scaling object); transformers prefers the top level's.
		s := *scaling
		if o := c.OriginalMaxPositionEmbeddings.Value; o != nil {
			s.OriginalMaxPositionEmbeddings = *o
		} else if s.OriginalMaxPositionEmbeddings == 0 {
			s.OriginalMaxPositionEmbeddings = defaultOrigPos
		}
		if s.OriginalMaxPositionEmbeddings <= 0 {
			return decoder.RoPE{}, 0, &decoder.FieldError{Class: v.Class, Field: "original_max_position_embeddings",
				Problem: fmt.Sprintf("= %d, must be > 0", s.OriginalMaxPositionEmbeddings)}
		}
		scaling = &s
	}
	r, err := decoder.NewRoPE(rotary, theta, scaling, maxPos)
	var fe *decoder.FieldError
	if errors.As(err, &fe) {
		fe.Class = v.Class
		if rest, ok := strings.CutPrefix(fe.Field, "rope_scaling"); ok {
			fe.Field = field + rest
		}
		return decoder.RoPE{}, 0, fe
	}
	if err != nil {
		return decoder.RoPE{}, 0, fmt.Errorf("%s config: %w", v.Class, err)
	}
	return r, rotary, nil
}

// nonNull is the field's value, or def when it is absent or null.
func nonNull[T any](o decoder.Opt[T], def T) *T {
	if o.Value != nil {
		return o.Value
	}
	return &def
}
