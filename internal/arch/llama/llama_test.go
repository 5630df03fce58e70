package llama

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/program"
)

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

// config is a small valid config of 4 layers with extra fields (raw JSON members).
func config(extra ...string) json.RawMessage {
	base := `"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
	"intermediate_size": 128, "vocab_size": 100, "rms_norm_eps": 1e-5, "max_position_embeddings": 8192`
	return json.RawMessage("{" + strings.Join(append([]string{base}, extra...), ", ") + "}")
}

func TestSlidingLayersFollowTransformers(t *testing.T) {
	tests := []struct {
		name   string
		arch   string
		config json.RawMessage
		want   string // 's' sliding, 'f' full
		window int
	}{
		{"llama ignores sliding_window", "LlamaForCausalLM", config(`"sliding_window": 16`), "ffff", 0},
		{"mistral null window", "MistralForCausalLM", config(`"sliding_window": null`), "ffff", 0},
		{"mistral window slides every layer", "MistralForCausalLM", config(`"sliding_window": 16`), "ssss", 16},
		{"mistral absent window is 4096", "MistralForCausalLM", config(), "ssss", 4096},
		{"qwen2 without use_sliding_window", "Qwen2ForCausalLM", config(`"sliding_window": 16`, `"max_window_layers": 1`), "ffff", 0},
		{"qwen2 max_window_layers 1", "Qwen2ForCausalLM", config(`"sliding_window": 16`, `"use_sliding_window": true`, `"max_window_layers": 1`), "fsss", 16},
		{"qwen3 absent max_window_layers is 28", "Qwen3ForCausalLM", config(`"sliding_window": 16`, `"use_sliding_window": true`), "ffff", 0},
		{"qwen3 absent window is 4096", "Qwen3ForCausalLM", config(`"use_sliding_window": true`, `"max_window_layers": 2`), "ffss", 4096},
		{"explicit layer_types", "Qwen3ForCausalLM", config(`"sliding_window": 8`,
			`"layer_types": ["sliding_attention", "full_attention", "full_attention", "sliding_attention"]`), "sffs", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := variant(t, tt.arch).Spec(tt.config)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			for _, lt := range s.LayerTypes {
				got.WriteByte(string(lt)[0])
			}
			if got.String() != tt.want || s.Window != tt.window {
				t.Errorf("layers %s window %d, want %s window %d", got.String(), s.Window, tt.want, tt.window)
			}
			if s.RoPE[program.LayerSliding].InvFreq == nil {
				t.Error("no RoPE for sliding layers")
			}
		})
	}
}

// transformers v5 writes rope_theta and rope_scaling as one rope_parameters object.
func TestRopeParametersEqualRopeThetaAndScaling(t *testing.T) {
	v := variant(t, "LlamaForCausalLM")
	old, _, err := v.Spec(config(`"rope_theta": 500000.0`, `"rope_scaling": {"rope_type": "llama3", "factor": 32.0,
		"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}`))
	if err != nil {
		t.Fatal(err)
	}
	v5, _, err := v.Spec(config(`"rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
		"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(old.RoPE[program.LayerFull].InvFreq, v5.RoPE[program.LayerFull].InvFreq) {
		t.Errorf("rope_parameters gives inverse frequencies %v, rope_theta + rope_scaling %v",
			v5.RoPE[program.LayerFull].InvFreq, old.RoPE[program.LayerFull].InvFreq)
	}
	plain, _, err := v.Spec(config(`"rope_theta": 500000.0`))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(plain.RoPE[program.LayerFull].InvFreq, v5.RoPE[program.LayerFull].InvFreq) {
		t.Error("llama3 scaling in rope_parameters had no effect")
	}
}
