// Package gemma gives the meaning of Gemma 2 and Gemma 3 Hugging Face configs
// (Gemma2ForCausalLM, Gemma3ForCausalLM with model_type gemma3_text) as decoder specs:
// (1+w) RMSNorm folded into the weights at export, embeddings scaled by sqrt(hidden), pre-
// and post-norms around attention and feed-forward, GELU (tanh), attention scaled by
// query_pre_attn_scalar^-0.5, interleaved sliding-window and full layers, Gemma 3's q/k norm
// and separate local/global RoPE bases, Gemma 2's attention and final logit soft-caps.
//
// Gemma3ForConditionalGeneration (every Gemma 3 above 1B) is exported as its text model: the
// config nested under text_config, with Gemma3TextConfig's defaults for absent fields, and
// the weights under language_model.model.* or model.language_model.* (spec Layouts); the
// vision tower and projector are not read.
//
// It knows config fields and weight names; it does not read files or run anything.
package gemma

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/program"
)

// rawConfig is config.json as transformers writes it for Gemma 2 and Gemma 3 (text).
// Fields that transformers defaults when absent are Opt, so the default applies only to
// an absent field and an explicit null keeps its meaning.
type rawConfig struct {
	ModelType         string               `json:"model_type"`
	HiddenSize        int                  `json:"hidden_size"`
	NumHiddenLayers   int                  `json:"num_hidden_layers"`
	NumAttentionHeads int                  `json:"num_attention_heads"`
	NumKeyValueHeads  int                  `json:"num_key_value_heads"`
	HeadDim           int                  `json:"head_dim"`
	IntermediateSize  int                  `json:"intermediate_size"`
	VocabSize         int                  `json:"vocab_size"`
	RMSNormEps        decoder.Opt[float64] `json:"rms_norm_eps"`
	RopeTheta         decoder.Opt[float64] `json:"rope_theta"`
	RopeLocalBaseFreq decoder.Opt[float64] `json:"rope_local_base_freq"`
	RopeScaling       *decoder.RopeScaling `json:"rope_scaling"`
	// RopeParameters (transformers v5) replaces rope_theta, rope_scaling and
	// rope_local_base_freq: one object, or one per layer type (full_attention,
	// sliding_attention).
	RopeParameters        json.RawMessage      `json:"rope_parameters"`
	QueryPreAttnScalar    decoder.Opt[float64] `json:"query_pre_attn_scalar"`
	AttnLogitSoftcapping  decoder.Opt[float64] `json:"attn_logit_softcapping"`
	FinalLogitSoftcapping decoder.Opt[float64] `json:"final_logit_softcapping"`
	TieWordEmbeddings     decoder.Opt[bool]    `json:"tie_word_embeddings"`
	AttentionBias         bool                 `json:"attention_bias"`
	HiddenActivation      string               `json:"hidden_activation"`
	HiddenAct             string               `json:"hidden_act"` // older spelling, used when hidden_activation is absent
	MaxPositionEmbeddings decoder.Opt[int]     `json:"max_position_embeddings"`
	SlidingWindow         decoder.Opt[int]     `json:"sliding_window"`
	SlidingWindowPattern  decoder.Opt[int]     `json:"sliding_window_pattern"`
	LayerTypes            []string             `json:"layer_types"`
}

// Variant is one Gemma generation. The defaults are transformers' for absent fields.
type Variant struct {
	Class string // the Hugging Face class name (config.json architectures[0])
	// ModelTypes lists the accepted model_type values.
	ModelTypes []string
	// Sliding decides the layer types when config.json has no layer_types.
	Sliding decoder.SlidingRule
	// QKNorm: Gemma 3's per-head q/k RMSNorm.
	QKNorm bool
	// LocalRoPE: sliding layers use rope_local_base_freq without scaling (Gemma 3);
	// otherwise every layer uses rope_theta and rope_scaling.
	LocalRoPE bool
	// TextConfig: the config nests the text model under text_config, absent size fields
	// take Gemma3TextConfig's defaults, and the weights sit under a language-model prefix
	// (Gemma3ForConditionalGeneration).
	TextConfig bool

	defaultTheta, defaultLocalTheta         float64
	defaultAttnSoftCap, defaultFinalSoftCap float64
	defaultQueryPreAttnScalar               float64
	defaultMaxPos, defaultWindow            int
	defaultPattern                          int
}

// Variants lists the supported architectures by Hugging Face class name.
var Variants = []Variant{
	{
		Class: "Gemma2ForCausalLM", ModelTypes: []string{"gemma2"}, Sliding: decoder.AlternateSliding,
		defaultTheta: 10000, defaultMaxPos: 8192, defaultAttnSoftCap: 50, defaultFinalSoftCap: 30,
		defaultWindow: 4096, defaultQueryPreAttnScalar: 256,
	},
	{
		Class: "Gemma3ForCausalLM", ModelTypes: []string{"gemma3_text"}, Sliding: decoder.PatternSliding,
		QKNorm: true, LocalRoPE: true,
		defaultTheta: 1e6, defaultMaxPos: 131072, defaultWindow: 4096, defaultPattern: 6,
		defaultQueryPreAttnScalar: 256, defaultLocalTheta: 1e4,
	},
	{
		Class: "Gemma3ForConditionalGeneration", ModelTypes: []string{"gemma3_text"}, Sliding: decoder.PatternSliding,
		QKNorm: true, LocalRoPE: true, TextConfig: true,
		defaultTheta: 1e6, defaultMaxPos: 131072, defaultWindow: 4096, defaultPattern: 6,
		defaultQueryPreAttnScalar: 256, defaultLocalTheta: 1e4,
	},
}

// textDefaults are Gemma3TextConfig's defaults for the size fields that the released
// multimodal configs leave out of text_config (gemma-3-4b's has no vocab_size, heads or
// head_dim).
var textDefaults = map[string]int{
	"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
	"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
}

// Layouts are the two places Gemma3ForConditionalGeneration folders keep the text model:
// transformers before 4.52 wrote language_model.model.* and language_model.lm_head.*,
// later versions model.language_model.* with lm_head.* at the top.
var Layouts = []decoder.Layout{
	decoder.Prefixed("language_model.model.", "language_model.lm_head."),
	decoder.Prefixed("model.language_model.", ""),
}

// textConfig returns the text_config of a multimodal config with Gemma3TextConfig's
// defaults filled in for absent size fields and the top level's tie_word_embeddings when
// text_config has none.
func (v Variant) textConfig(raw json.RawMessage) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("%s config: %w", v.Class, err)
	}
	nested, ok := top["text_config"]
	if !ok || string(nested) == "null" {
		return nil, &decoder.FieldError{Class: v.Class, Field: "text_config", Problem: "is missing; it holds the text model's config (hidden_size, num_hidden_layers, …)"}
	}
	var text map[string]json.RawMessage
	if err := json.Unmarshal(nested, &text); err != nil {
		return nil, &decoder.FieldError{Class: v.Class, Field: "text_config", Problem: "must be an object: " + err.Error()}
	}
	for field, def := range textDefaults {
		if _, ok := text[field]; !ok {
			text[field] = json.RawMessage(fmt.Sprint(def))
		}
	}
	if tie, ok := top["tie_word_embeddings"]; ok {
		if _, ok := text["tie_word_embeddings"]; !ok {
			text["tie_word_embeddings"] = tie
		}
	}
	return json.Marshal(text)
}

// Name is the class name the variant is registered under.
func (v Variant) Name() string { return v.Class }

// Spec validates a raw config and returns the model's decoder spec and its trained context.
func (v Variant) Spec(raw json.RawMessage) (*decoder.Spec, int, error) {
	if v.TextConfig {
		text, err := v.textConfig(raw)
		if err != nil {
			return nil, 0, err
		}
		raw = text
	}
	var c rawConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, 0, fmt.Errorf("%s config: %w", v.Class, err)
	}
	bad := func(field string, val any, want string) error {
		return fmt.Errorf("%s config: %s%s = %v, %s", v.Class, v.fieldPrefix(), field, val, want)
	}
	if c.ModelType != "" && !slices.Contains(v.ModelTypes, c.ModelType) {
		return nil, 0, bad("model_type", fmt.Sprintf("%q", c.ModelType), fmt.Sprintf("want one of %q for %s", v.ModelTypes, v.Class))
	}
	sizes := []struct {
		field string
		v     int
	}{{"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumHiddenLayers},
		{"num_attention_heads", c.NumAttentionHeads}, {"num_key_value_heads", c.NumKeyValueHeads},
		{"head_dim", c.HeadDim}, {"intermediate_size", c.IntermediateSize}, {"vocab_size", c.VocabSize}}
	for _, f := range sizes {
		if f.v <= 0 {
			return nil, 0, bad(f.field, f.v, "must be present and > 0")
		}
	}
	if c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return nil, 0, bad("num_key_value_heads", c.NumKeyValueHeads, fmt.Sprintf("must divide num_attention_heads %d", c.NumAttentionHeads))
	}
	if c.HeadDim%2 != 0 {
		return nil, 0, bad("head_dim", c.HeadDim, "must be even for RoPE")
	}
	if c.AttentionBias {
		return nil, 0, bad("attention_bias", true, "unsupported for Gemma (no released checkpoint uses it)")
	}
	act := c.HiddenActivation
	if act == "" {
		act = c.HiddenAct
	}
	switch act {
	case "gelu_pytorch_tanh", "gelu_tanh", "":
	default:
		return nil, 0, bad("hidden_activation", act, "unsupported (gelu_pytorch_tanh)")
	}
	eps, err := positive(c.RMSNormEps, 1e-6, v.fieldPrefix()+"rms_norm_eps")
	if err != nil {
		return nil, 0, fmt.Errorf("%s config: %w", v.Class, err)
	}
	maxPos, err := positive(c.MaxPositionEmbeddings, v.defaultMaxPos, v.fieldPrefix()+"max_position_embeddings")
	if err != nil {
		return nil, 0, fmt.Errorf("%s config: %w", v.Class, err)
	}
	scalar, err := positive(c.QueryPreAttnScalar, v.defaultQueryPreAttnScalar, v.fieldPrefix()+"query_pre_attn_scalar")
	if err != nil {
		return nil, 0, fmt.Errorf("%s config: %w", v.Class, err)
	}
	attnCap, finalCap := optional(c.AttnLogitSoftcapping, v.defaultAttnSoftCap), optional(c.FinalLogitSoftcapping, v.defaultFinalSoftCap)
	if attnCap < 0 || finalCap < 0 {
		return nil, 0, bad("attn_logit_softcapping / final_logit_softcapping", fmt.Sprint(attnCap, " / ", finalCap), "must be > 0 or null")
	}
	ropes, err := v.ropes(&c, maxPos)
	if err != nil {
		return nil, 0, err
	}
	types, window, err := decoder.LayerTypes(v.Class, v.Sliding, decoder.SlidingConfig{
		Layers:     c.NumHiddenLayers,
		LayerTypes: c.LayerTypes,
		Window:     c.SlidingWindow.Or(v.defaultWindow),
		Pattern:    *nonNull(c.SlidingWindowPattern, v.defaultPattern),
	})
	if err != nil {
		return nil, 0, err
	}
	s := &decoder.Spec{
		Hidden: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads,
		HeadDim: c.HeadDim, FFN: c.IntermediateSize, Vocab: c.VocabSize,
		NormEps:       float32(eps),
		NormOffset:    1, // Gemma's RMSNorm multiplies by (1 + w)
		Activation:    program.ActGELUTanh,
		QKNorm:        v.QKNorm,
		SandwichNorms: true,
		// transformers computes hidden_size**0.5 and keeps it as a float32 tensor when the
		// model runs in float32 (in bfloat16 it would round the factor to bfloat16 first).
		EmbedScale:   float32(math.Sqrt(float64(c.HiddenSize))),
		AttnScale:    float32(math.Pow(scalar, -0.5)),
		AttnSoftCap:  float32(attnCap),
		FinalSoftCap: float32(finalCap),
		Tied:         *nonNull(c.TieWordEmbeddings, true),
		LayerTypes:   types,
		Window:       window,
		RoPE:         ropes,
		Names:        Names,
	}
	if v.TextConfig {
		s.Layouts = Layouts
	}
	return s, maxPos, s.Validate()
}

// fieldPrefix is the JSON path of the fields Spec reads: "text_config." for multimodal
// configs.
func (v Variant) fieldPrefix() string {
	if v.TextConfig {
		return "text_config."
	}
	return ""
}

// ropes returns the RoPE of each layer type: Gemma 3's sliding layers use
// rope_local_base_freq without scaling, its full layers rope_theta with rope_scaling;
// Gemma 2 uses rope_theta everywhere. A v5 rope_parameters object overrides these.
func (v Variant) ropes(c *rawConfig, maxPos int) (map[program.LayerType]decoder.RoPE, error) {
	theta, err := positive(c.RopeTheta, v.defaultTheta, v.fieldPrefix()+"rope_theta")
	if err != nil {
		return nil, fmt.Errorf("%s config: %w", v.Class, err)
	}
	global := decoder.RopeParameters{RopeTheta: &theta}
	if c.RopeScaling != nil {
		global.RopeScaling = *c.RopeScaling
	}
	local := global
	if v.LocalRoPE {
		localTheta, err := positive(c.RopeLocalBaseFreq, v.defaultLocalTheta, v.fieldPrefix()+"rope_local_base_freq")
		if err != nil {
			return nil, fmt.Errorf("%s config: %w", v.Class, err)
		}
		local = decoder.RopeParameters{RopeTheta: &localTheta}
	}
	if err := v.applyRopeParameters(c.RopeParameters, &global, &local); err != nil {
		return nil, err
	}
	out := map[program.LayerType]decoder.RoPE{}
	for t, p := range map[program.LayerType]decoder.RopeParameters{program.LayerFull: global, program.LayerSliding: local} {
		if p.RopeTheta == nil || *p.RopeTheta <= 0 {
			return nil, fmt.Errorf("%s config: rope_parameters for %s layers need rope_theta > 0", v.Class, t)
		}
		r, err := decoder.NewRoPE(c.HeadDim, *p.RopeTheta, &p.RopeScaling, maxPos)
		if err != nil {
			return nil, fmt.Errorf("%s config: %s layers: %w", v.Class, t, err)
		}
		out[t] = r
	}
	return out, nil
}

// applyRopeParameters replaces global and local with a v5 rope_parameters object: either
// {"full_attention": {...}, "sliding_attention": {...}} (a missing or null entry keeps
// that type's RoPE) or one object for every layer (Gemma 2) or for the full layers
// (Gemma 3). Each object is complete: rope_type and rope_theta.
func (v Variant) applyRopeParameters(raw json.RawMessage, global, local *decoder.RopeParameters) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var byType map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byType); err != nil {
		return fmt.Errorf("%s config: rope_parameters: %w", v.Class, err)
	}
	merge := func(field string, b json.RawMessage, dst *decoder.RopeParameters) error {
		if len(b) == 0 || string(b) == "null" {
			return nil
		}
		var p decoder.RopeParameters
		if err := json.Unmarshal(b, &p); err != nil {
			return fmt.Errorf("%s config: %s: %w", v.Class, field, err)
		}
		if p.RopeTheta == nil {
			return fmt.Errorf("%s config: %s has no rope_theta", v.Class, field)
		}
		*dst = p
		return nil
	}
	full, hasFull := byType["full_attention"]
	sliding, hasSliding := byType["sliding_attention"]
	if !hasFull && !hasSliding {
		if err := merge("rope_parameters", raw, global); err != nil {
			return err
		}
		if !v.LocalRoPE {
			*local = *global
		}
		return nil
	}
	if err := merge("rope_parameters.full_attention", full, global); err != nil {
		return err
	}
	return merge("rope_parameters.sliding_attention", sliding, local)
}

type number interface{ ~int | ~float64 }

// positive reads a field that must be > 0, defaulting when absent or null.
func positive[T number](o decoder.Opt[T], def T, field string) (T, error) {
	v := *nonNull(o, def)
	if v <= 0 {
		return 0, fmt.Errorf("%s = %v, must be > 0", field, v)
	}
	return v, nil
}

// optional reads a soft-cap: def when absent, 0 (none) when null.
func optional(o decoder.Opt[float64], def float64) float64 {
	if p := o.Or(def); p != nil {
		return *p
	}
	return 0
}

// nonNull is the field's value, or def when it is absent or null.
func nonNull[T any](o decoder.Opt[T], def T) *T {
	if o.Value != nil {
		return o.Value
	}
	return &def
}

// Names are the transformers weight names of Gemma 2 and 3. Unlike Llama, where
// post_attention_layernorm is the norm before the MLP, in Gemma it normalizes the
// attention output; pre_feedforward_layernorm is the norm before the MLP.
var Names = decoder.TransformersNames(map[decoder.Role]string{
	decoder.PostAttnNorm: "post_attention_layernorm.weight",
	decoder.FFNNorm:      "pre_feedforward_layernorm.weight",
	decoder.PostFFNNorm:  "post_feedforward_layernorm.weight",
})
