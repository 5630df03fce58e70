package olmo2

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/program"
)

// olmo2_1B is modelled on allenai/OLMo-2-0425-1B's config.json (its fields and values,
// written here after the published file).
const olmo2_1B = `{"architectures": ["Olmo2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
	"bos_token_id": null, "eos_token_id": 100257, "hidden_act": "silu", "hidden_size": 2048,
	"initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 4096,
	"model_type": "olmo2", "num_attention_heads": 16, "num_hidden_layers": 16, "num_key_value_heads": 16,
	"pad_token_id": 100277, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 500000,
	"tie_word_embeddings": false, "torch_dtype": "float32", "use_cache": true, "vocab_size": 100352}`

func TestRealConfigNormalizesAfterEachSublayer(t *testing.T) {
	s, maxPos, err := Variants[0].Spec(json.RawMessage(olmo2_1B))
	if err != nil {
		t.Fatal(err)
	}
	if maxPos != 4096 || s.Hidden != 2048 || s.Layers != 16 || s.HeadDim != 128 || s.Tied || s.Window != 0 {
		t.Errorf("spec %s, context %d, tied %v, window %d", s.Describe(), maxPos, s.Tied, s.Window)
	}
	if !s.NoPreNorms || !s.SandwichNorms || !s.QKNorm || !s.QKNormWhole {
		t.Errorf("norm switches: pre-norms dropped %v, post-norms %v, q/k norm %v whole width %v", s.NoPreNorms, s.SandwichNorms, s.QKNorm, s.QKNormWhole)
	}
	var layer0 []string
	shapes := map[string]program.Shape{}
	for _, w := range s.Weights() {
		if w.Layer == 0 {
			layer0 = append(layer0, w.Name)
			shapes[w.Name] = w.Shape
		}
	}
	want := []string{
		"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
		"model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
		"model.layers.0.self_attn.q_norm.weight", "model.layers.0.self_attn.k_norm.weight",
		"model.layers.0.post_attention_layernorm.weight",
		"model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight",
		"model.layers.0.post_feedforward_layernorm.weight",
	}
	if diff := cmp.Diff(want, layer0); diff != "" {
		t.Errorf("layer 0 weights (-want +got):\n%s", diff)
	}
	if got := shapes["model.layers.0.self_attn.k_norm.weight"]; !cmp.Equal(got, program.Shape{2048}) {
		t.Errorf("k_norm shape %v, want [2048] (kv_heads*head_dim)", got)
	}
}

func TestBadConfigNamesTheField(t *testing.T) {
	_, _, err := Variants[0].Spec(json.RawMessage(`{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
		"intermediate_size": 0, "vocab_size": 100, "rms_norm_eps": 1e-6, "max_position_embeddings": 64}`))
	var fe *decoder.FieldError
	if !errors.As(err, &fe) || fe.Field != "intermediate_size" || fe.Class != "Olmo2ForCausalLM" {
		t.Errorf("err = %v, want a *decoder.FieldError naming Olmo2ForCausalLM's intermediate_size", err)
	}
}
