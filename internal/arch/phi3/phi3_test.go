package phi3

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/program"
)

var phi3 = Variants[0]

// edit returns the config with fields set (nil deletes one).
func edit(t *testing.T, config []byte, fields map[string]any) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(config, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func phi4Mini(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/phi-4-mini-instruct.config.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The published Phi-4-mini config: 96 of 128 dims rotate, longrope's 48 factors, the
// attention factor sqrt(1 + ln 32 / ln 4096), sliding window 262144 on every layer.
func TestPhi4MiniConfigResolves(t *testing.T) {
	s, trained, err := phi3.Spec(phi4Mini(t))
	if err != nil {
		t.Fatal(err)
	}
	type sizes struct {
		Hidden, Layers, Heads, KVHeads, HeadDim, RotaryDim, FFN, Vocab, Window, Trained int
		Tied, FusedQKV, FusedGateUp                                                     bool
	}
	got := sizes{s.Hidden, s.Layers, s.Heads, s.KVHeads, s.HeadDim, s.RotaryDim, s.FFN, s.Vocab, s.Window, trained, s.Tied, s.FusedQKV, s.FusedGateUp}
	want := sizes{3072, 32, 24, 8, 128, 96, 8192, 200064, 262144, 131072, true, true, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	for l, lt := range s.LayerTypes {
		if lt != program.LayerSliding {
			t.Errorf("layer %d is %s, want sliding (sliding_window is set)", l, lt)
		}
	}
	r := s.RoPE[program.LayerSliding]
	if want := math.Sqrt(1 + math.Log(32)/math.Log(4096)); math.Abs(r.AttentionFactor-want) > 1e-12 {
		t.Errorf("attention factor %v, want %v", r.AttentionFactor, want)
	}
	// Frequency j of a program: 1 / (factor_j * 10000^(2j/96)); long factors beyond 4096.
	for _, tc := range []struct {
		context int
		factor  float64 // of the last frequency
	}{{4096, 1.0}, {4097, 47.77}} {
		inv := r.Freqs(tc.context)
		want := 1 / (tc.factor * math.Pow(10000, 94.0/96))
		if len(inv) != 48 || math.Abs(inv[47]-want) > 1e-6*want {
			t.Errorf("context %d: %d frequencies, last %g, want %g", tc.context, len(inv), inv[47], want)
		}
	}
}

// Phi-3-mini-4k: no rope_scaling, a sliding window of 2047, untied; absent fields take
// Phi3Config's defaults.
func TestPhi3MiniConfigDefaults(t *testing.T) {
	cfg := edit(t, phi4Mini(t), map[string]any{
		"rope_scaling": nil, "partial_rotary_factor": nil, "rms_norm_eps": nil, "rope_theta": nil,
		"max_position_embeddings": nil, "original_max_position_embeddings": nil,
		"num_key_value_heads": nil, "tie_word_embeddings": nil, "sliding_window": 2047,
		"num_attention_heads": 32, "vocab_size": 32064,
	})
	s, trained, err := phi3.Spec(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.HeadDim != 96 || s.Rotary() != 96 || s.KVHeads != 32 || s.Tied || s.Window != 2047 || trained != 4096 || s.NormEps != 1e-5 {
		t.Errorf("head_dim %d rotary %d kv %d tied %v window %d trained %d eps %g", s.HeadDim, s.Rotary(), s.KVHeads, s.Tied, s.Window, trained, s.NormEps)
	}
	if r := s.RoPE[program.LayerSliding]; r.AttentionFactor != 1 || r.LongInvFreq != nil {
		t.Errorf("no rope_scaling gave attention factor %v and long frequencies %v", r.AttentionFactor, r.LongInvFreq)
	}
	// sliding_window absent or null: every layer is full.
	for _, w := range []any{nil, json.RawMessage("null")} {
		s, _, err := phi3.Spec(edit(t, cfg, map[string]any{"sliding_window": w}))
		if err != nil {
			t.Fatal(err)
		}
		if s.Window != 0 || s.LayerTypes[0] != program.LayerFull {
			t.Errorf("sliding_window %s: window %d, layer 0 %s", w, s.Window, s.LayerTypes[0])
		}
	}
}

// The checkpoint's fused matrices, cut into the graph's roles under the usual names.
func TestWeightNames(t *testing.T) {
	s, _, err := phi3.Spec(phi4Mini(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range s.Weights() {
		if w.Layer != 3 {
			continue
		}
		got = append(got, w.Name)
		for _, p := range w.Parts {
			got = append(got, "  "+p.Name)
		}
	}
	want := []string{
		"model.layers.3.input_layernorm.weight",
		"model.layers.3.self_attn.qkv_proj.weight",
		"  model.layers.3.self_attn.q_proj.weight",
		"  model.layers.3.self_attn.k_proj.weight",
		"  model.layers.3.self_attn.v_proj.weight",
		"model.layers.3.self_attn.o_proj.weight",
		"model.layers.3.post_attention_layernorm.weight",
		"model.layers.3.mlp.gate_up_proj.weight",
		"  model.layers.3.mlp.gate_proj.weight",
		"  model.layers.3.mlp.up_proj.weight",
		"model.layers.3.mlp.down_proj.weight",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer 3 weights (-want +got):\n%s", diff)
	}
}

// Bad configs are *decoder.FieldError values naming the field.
func TestBadConfigsNameTheField(t *testing.T) {
	base := phi4Mini(t)
	scaling := func(fields map[string]any) map[string]any {
		s := map[string]any{"type": "longrope", "short_factor": make([]float64, 48), "long_factor": make([]float64, 48)}
		for i := range 48 {
			s["short_factor"].([]float64)[i], s["long_factor"].([]float64)[i] = 1, 2
		}
		for k, v := range fields {
			s[k] = v
		}
		return s
	}
	tests := []struct {
		name   string
		config json.RawMessage
		field  string
		want   string
	}{
		{"long_factor of the wrong length", edit(t, base, map[string]any{"rope_scaling": scaling(map[string]any{"long_factor": []float64{1, 2, 3}})}),
			"rope_scaling.long_factor", "has 3 entries, want 48"},
		{"short_factor missing", edit(t, base, map[string]any{"rope_scaling": scaling(map[string]any{"short_factor": nil})}),
			"rope_scaling.short_factor", "has 0 entries, want 48"},
		{"factor not positive", edit(t, base, map[string]any{"rope_scaling": scaling(map[string]any{"long_factor": append(make([]float64, 47), 1)})}),
			"rope_scaling.long_factor[0]", "must be > 0"},
		{"unknown type", edit(t, base, map[string]any{"rope_scaling": scaling(map[string]any{"type": "dynamic"})}),
			"rope_scaling.type", `"dynamic" is not supported`},
		{"unknown rope_type", edit(t, base, map[string]any{"rope_scaling": scaling(map[string]any{"type": nil, "rope_type": "yarn"})}),
			"rope_scaling.rope_type", `"yarn" is not supported`},
		{"v5 rope_parameters of the wrong length", edit(t, base, map[string]any{"rope_scaling": nil,
			"rope_parameters": map[string]any{"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": []float64{1}, "long_factor": []float64{1}}}),
			"rope_parameters.short_factor", "has 1 entries, want 48"},
		{"partial rotary beyond 1", edit(t, base, map[string]any{"partial_rotary_factor": 1.5}), "partial_rotary_factor", "must be in (0, 1]"},
		{"odd rotary dims", edit(t, base, map[string]any{"partial_rotary_factor": 0.31}), "partial_rotary_factor", "39 rotary dims"},
		{"kv heads", edit(t, base, map[string]any{"num_key_value_heads": 5}), "num_key_value_heads", "must divide"},
		{"no hidden size", edit(t, base, map[string]any{"hidden_size": nil}), "hidden_size", "must be present"},
		{"activation", edit(t, base, map[string]any{"hidden_act": "gelu"}), "hidden_act", "unsupported"},
		{"original context", edit(t, base, map[string]any{"original_max_position_embeddings": -1}), "original_max_position_embeddings", "must be > 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := phi3.Spec(tt.config)
			var fe *decoder.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *decoder.FieldError", err)
			}
			if fe.Class != "Phi3ForCausalLM" || fe.Field != tt.field || !strings.Contains(fe.Problem, tt.want) {
				t.Errorf("err = %q (class %q, field %q), want field %q and a problem mentioning %q", err, fe.Class, fe.Field, tt.field, tt.want)
			}
		})
	}
}
