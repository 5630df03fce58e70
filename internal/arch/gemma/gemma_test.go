package gemma

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/program"
)

// Real configs as published on the Hugging Face hub (google/gemma-2-2b, google/gemma-3-1b-pt),
// abridged to the fields transformers reads.
const gemma2Config = `{
  "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2",
  "attention_bias": false, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
  "head_dim": 256, "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 2304, "intermediate_size": 9216, "max_position_embeddings": 8192,
  "num_attention_heads": 8, "num_hidden_layers": 26, "num_key_value_heads": 4,
  "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
  "sliding_window": 4096, "vocab_size": 256000}`

const gemma3Config = `{
  "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
  "attention_bias": false, "attn_logit_softcapping": null, "final_logit_softcapping": null,
  "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
  "intermediate_size": 6912, "max_position_embeddings": 32768, "num_attention_heads": 4,
  "num_hidden_layers": 26, "num_key_value_heads": 1, "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000, "rope_scaling": null,
  "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
  "vocab_size": 262144}`

// edit returns config with fields replaced (nil sets null) or removed (listed in drop).
func edit(t *testing.T, config string, set map[string]any, drop ...string) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(config), &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		m[k] = v
	}
	for _, k := range drop {
		delete(m, k)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func variant(t *testing.T, name string) Variant {
	t.Helper()
	for _, v := range Variants {
		if v.Class == name {
			return v
		}
	}
	t.Fatalf("no variant %s", name)
	return Variant{}
}

func layerString(ts []program.LayerType) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteByte(string(t)[0])
	}
	return b.String()
}

// want is the part of a spec a config decides.
type want struct {
	Layers                 string // 's' sliding, 'f' full
	Window                 int
	AttnScale              float32
	AttnSoftCap, FinalCap  float32
	EmbedScale, NormOffset float32
	QKNorm, Sandwich, Tied bool
	Activation             string
	Global, Local          decoder.RoPE // the RoPE of full and sliding layers
	MaxPos                 int
}

// rope is the RoPE a head_dim 256 layer gets from base theta and an optional scaling.
func rope(t *testing.T, theta float64, scaling *decoder.RopeScaling) decoder.RoPE {
	t.Helper()
	r, err := decoder.NewRoPE(256, theta, scaling, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func got(s *decoder.Spec, maxPos int) want {
	return want{
		Layers: layerString(s.LayerTypes), Window: s.Window, AttnScale: s.AttnScale,
		AttnSoftCap: s.AttnSoftCap, FinalCap: s.FinalSoftCap, EmbedScale: s.EmbedScale, NormOffset: s.NormOffset,
		QKNorm: s.QKNorm, Sandwich: s.SandwichNorms, Tied: s.Tied, Activation: s.Activation,
		Global: s.RoPE[program.LayerFull], Local: s.RoPE[program.LayerSliding], MaxPos: maxPos,
	}
}

func TestSpecsFollowTheConfigs(t *testing.T) {
	g2 := want{Layers: strings.Repeat("sf", 13), Window: 4096, AttnScale: 1.0 / 16, AttnSoftCap: 50, FinalCap: 30,
		EmbedScale: float32(math.Sqrt(2304)), NormOffset: 1, Sandwich: true, Tied: true, Activation: program.ActGELUTanh,
		Global: rope(t, 1e4, nil), Local: rope(t, 1e4, nil), MaxPos: 8192}
	g3 := want{Layers: "sssssfsssssfsssssfsssssfss", Window: 512, AttnScale: 1.0 / 16,
		EmbedScale: float32(math.Sqrt(1152)), NormOffset: 1, QKNorm: true, Sandwich: true, Tied: true, Activation: program.ActGELUTanh,
		Global: rope(t, 1e6, nil), Local: rope(t, 1e4, nil), MaxPos: 32768}
	with := func(w want, f func(*want)) want { f(&w); return w }
	tests := []struct {
		name   string
		arch   string
		config json.RawMessage
		want   want
	}{
		{"gemma 2 as published", "Gemma2ForCausalLM", json.RawMessage(gemma2Config), g2},
		{"gemma 2 soft-caps default when absent", "Gemma2ForCausalLM",
			edit(t, gemma2Config, nil, "attn_logit_softcapping", "final_logit_softcapping"), g2},
		{"gemma 2 soft-caps off when null", "Gemma2ForCausalLM",
			edit(t, gemma2Config, map[string]any{"attn_logit_softcapping": nil, "final_logit_softcapping": nil}),
			with(g2, func(w *want) { w.AttnSoftCap, w.FinalCap = 0, 0 })},
		{"gemma 2 query_pre_attn_scalar 144 (27b)", "Gemma2ForCausalLM",
			edit(t, gemma2Config, map[string]any{"query_pre_attn_scalar": 144}),
			with(g2, func(w *want) { w.AttnScale = 1.0 / 12 })},
		{"gemma 3 as published", "Gemma3ForCausalLM", json.RawMessage(gemma3Config), g3},
		{"gemma 3 pattern defaults to 6", "Gemma3ForCausalLM", edit(t, gemma3Config, nil, "sliding_window_pattern"), g3},
		{"gemma 3 explicit layer_types", "Gemma3ForCausalLM",
			edit(t, gemma3Config, map[string]any{"num_hidden_layers": 3, "layer_types": []string{"full_attention", "sliding_attention", "full_attention"}}),
			with(g3, func(w *want) { w.Layers = "fsf" })},
		{"gemma 3 rope_scaling on global layers only", "Gemma3ForCausalLM",
			edit(t, gemma3Config, map[string]any{"rope_scaling": map[string]any{"rope_type": "linear", "factor": 8.0}}),
			with(g3, func(w *want) { w.Global = rope(t, 1e6, &decoder.RopeScaling{RopeType: "linear", Factor: 8}) })},
		{"gemma 3 v5 rope_parameters per layer type", "Gemma3ForCausalLM",
			edit(t, gemma3Config, map[string]any{"rope_parameters": map[string]any{
				"full_attention":    map[string]any{"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
				"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 1e4},
			}}, "rope_theta", "rope_local_base_freq", "rope_scaling"),
			with(g3, func(w *want) { w.Global = rope(t, 1e6, &decoder.RopeScaling{RopeType: "linear", Factor: 8}) })},
		{"gemma 3 v5 rope_parameters bases", "Gemma3ForCausalLM",
			edit(t, gemma3Config, map[string]any{"rope_parameters": map[string]any{
				"full_attention":    map[string]any{"rope_type": "default", "rope_theta": 5e5},
				"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 2e4},
			}}, "rope_theta", "rope_local_base_freq", "rope_scaling"),
			with(g3, func(w *want) { w.Global, w.Local = rope(t, 5e5, nil), rope(t, 2e4, nil) })},
		{"gemma 2 v5 flat rope_parameters", "Gemma2ForCausalLM",
			edit(t, gemma2Config, map[string]any{"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 5e4}}, "rope_theta"),
			with(g2, func(w *want) { w.Global, w.Local = rope(t, 5e4, nil), rope(t, 5e4, nil) })},
		{"gemma 3 untied", "Gemma3ForCausalLM", edit(t, gemma3Config, map[string]any{"tie_word_embeddings": false}),
			with(g3, func(w *want) { w.Tied = false })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, maxPos, err := variant(t, tt.arch).Spec(tt.config)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got(s, maxPos)); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGemmaWeightNames(t *testing.T) {
	s, _, err := variant(t, "Gemma3ForCausalLM").Spec(json.RawMessage(gemma3Config))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range s.LayerRoles() {
		names = append(names, s.Names.Layer(2, r))
	}
	want := []string{
		"model.layers.2.input_layernorm.weight",
		"model.layers.2.self_attn.q_proj.weight", "model.layers.2.self_attn.k_proj.weight",
		"model.layers.2.self_attn.v_proj.weight", "model.layers.2.self_attn.o_proj.weight",
		"model.layers.2.self_attn.q_norm.weight", "model.layers.2.self_attn.k_norm.weight",
		"model.layers.2.post_attention_layernorm.weight",
		"model.layers.2.pre_feedforward_layernorm.weight",
		"model.layers.2.mlp.gate_proj.weight", "model.layers.2.mlp.up_proj.weight", "model.layers.2.mlp.down_proj.weight",
		"model.layers.2.post_feedforward_layernorm.weight",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("layer 2 weight names (-want +got):\n%s", diff)
	}
	if s.OutputName() != "model.embed_tokens.weight" {
		t.Errorf("tied output reads %q", s.OutputName())
	}
}

func TestSpecRejectsBadConfigs(t *testing.T) {
	tests := []struct {
		name    string
		arch    string
		config  json.RawMessage
		wantErr string
	}{
		{"missing head_dim", "Gemma3ForCausalLM", edit(t, gemma3Config, nil, "head_dim"), "head_dim = 0, must be present"},
		{"heads not a multiple of kv heads", "Gemma2ForCausalLM", edit(t, gemma2Config, map[string]any{"num_key_value_heads": 3}), "num_key_value_heads = 3"},
		{"null sliding window", "Gemma3ForCausalLM", edit(t, gemma3Config, map[string]any{"sliding_window": nil}), "sliding_window > 0, got null"},
		{"wrong model_type", "Gemma3ForCausalLM", edit(t, gemma3Config, map[string]any{"model_type": "gemma3"}), `model_type = "gemma3"`},
		{"unsupported activation", "Gemma2ForCausalLM", edit(t, gemma2Config, map[string]any{"hidden_activation": "relu"}), "hidden_activation = relu"},
		{"negative soft-cap", "Gemma2ForCausalLM", edit(t, gemma2Config, map[string]any{"final_logit_softcapping": -1}), "must be > 0 or null"},
		{"zero query_pre_attn_scalar", "Gemma2ForCausalLM", edit(t, gemma2Config, map[string]any{"query_pre_attn_scalar": 0}), "query_pre_attn_scalar = 0"},
		{"unknown rope scaling", "Gemma3ForCausalLM", edit(t, gemma3Config, map[string]any{"rope_scaling": map[string]any{"rope_type": "dynamic", "factor": 2}}), `"dynamic" is not supported`},
		{"rope_parameters without rope_theta", "Gemma3ForCausalLM", edit(t, gemma3Config, map[string]any{"rope_parameters": map[string]any{
			"sliding_attention": map[string]any{"rope_type": "default"}}}), "rope_parameters.sliding_attention has no rope_theta"},
		{"not json", "Gemma2ForCausalLM", json.RawMessage(`{`), "Gemma2ForCausalLM config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := variant(t, tt.arch).Spec(tt.config)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// google/gemma-3-4b-it's config.json as published, vision_config abridged: text_config
// leaves the vocabulary, heads and head_dim to Gemma3TextConfig's defaults.
const gemma3MultimodalConfig = `{
  "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
  "boi_token_index": 255999, "eoi_token_index": 256000, "eos_token_id": [1, 106],
  "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
  "text_config": {
    "hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "sliding_window": 1024
  },
  "torch_dtype": "bfloat16",
  "vision_config": {"hidden_size": 1152, "image_size": 896, "model_type": "siglip_vision_model",
    "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false}}`

func TestMultimodalConfigReadsTextConfigWithDefaults(t *testing.T) {
	s, maxPos, err := variant(t, "Gemma3ForConditionalGeneration").Spec(json.RawMessage(gemma3MultimodalConfig))
	if err != nil {
		t.Fatal(err)
	}
	sizes := [...]int{s.Hidden, s.Layers, s.Heads, s.KVHeads, s.HeadDim, s.FFN, s.Vocab}
	if want := [...]int{2560, 34, 8, 4, 256, 10240, 262208}; sizes != want {
		t.Errorf("hidden, layers, heads, kv heads, head_dim, ffn, vocab = %v, want %v", sizes, want)
	}
	w := want{Layers: strings.Repeat("sssssf", 5) + "ssss", Window: 1024, AttnScale: 1.0 / 16,
		EmbedScale: float32(math.Sqrt(2560)), NormOffset: 1, QKNorm: true, Sandwich: true, Tied: true, Activation: program.ActGELUTanh,
		Global: rope(t, 1e6, &decoder.RopeScaling{RopeType: "linear", Factor: 8}), Local: rope(t, 1e4, nil), MaxPos: 131072}
	if diff := cmp.Diff(w, got(s, maxPos)); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	var places []string
	for _, l := range s.Layouts {
		places = append(places, l(s.Names.Embed), l(s.Names.Layer(3, decoder.Q)), l(s.Names.LMHead))
	}
	wantPlaces := []string{
		"language_model.model.embed_tokens.weight", "language_model.model.layers.3.self_attn.q_proj.weight", "language_model.lm_head.weight",
		"model.language_model.embed_tokens.weight", "model.language_model.layers.3.self_attn.q_proj.weight", "lm_head.weight",
	}
	if diff := cmp.Diff(wantPlaces, places); diff != "" {
		t.Errorf("names in the checkpoint (-want +got):\n%s", diff)
	}
	// Gemma3ForCausalLM reads its names as they are.
	plain, _, err := variant(t, "Gemma3ForCausalLM").Spec(json.RawMessage(gemma3Config))
	if err != nil || plain.Layouts != nil {
		t.Errorf("Gemma3ForCausalLM: layouts %v, err %v; want none", plain.Layouts, err)
	}
}

func TestMultimodalConfigRejections(t *testing.T) {
	v := variant(t, "Gemma3ForConditionalGeneration")
	for name, cfg := range map[string]json.RawMessage{
		"absent": edit(t, gemma3MultimodalConfig, nil, "text_config"),
		"null":   edit(t, gemma3MultimodalConfig, map[string]any{"text_config": nil}),
		"string": edit(t, gemma3MultimodalConfig, map[string]any{"text_config": "gemma"}),
	} {
		_, _, err := v.Spec(cfg)
		var fe *decoder.FieldError
		if !errors.As(err, &fe) || fe.Field != "text_config" || fe.Class != "Gemma3ForConditionalGeneration" {
			t.Errorf("text_config %s: %v, want a *decoder.FieldError naming text_config", name, err)
		}
	}
	for field, val := range map[string]any{"num_key_value_heads": 3, "rms_norm_eps": 0} {
		bad := edit(t, gemma3MultimodalConfig, map[string]any{"text_config": map[string]any{field: val}})
		if _, _, err := v.Spec(bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("text_config.%s = %v", field, val)) {
			t.Errorf("%s %v: %v, want an error naming text_config.%s", field, val, err, field)
		}
	}
}
