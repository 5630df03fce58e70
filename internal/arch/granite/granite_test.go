package granite

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
)

// granite31_2B is modelled on ibm-granite/granite-3.1-2b-instruct's config.json (its fields and
// values, written here after the published file).
const granite31_2B = `{"architectures": ["GraniteForCausalLM"], "attention_bias": false, "attention_dropout": 0.1,
	"attention_multiplier": 0.015625, "bos_token_id": 0, "embedding_multiplier": 12.0, "eos_token_id": 0,
	"hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
	"logits_scaling": 8.0, "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "granite",
	"num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8, "pad_token_id": 0,
	"residual_multiplier": 0.22, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 5000000.0,
	"tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 49155}`

// config is a small Granite config with extra members.
func config(extra ...string) json.RawMessage {
	base := `"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1,
	"intermediate_size": 128, "vocab_size": 100, "rms_norm_eps": 1e-5, "max_position_embeddings": 64`
	return json.RawMessage("{" + strings.Join(append([]string{base}, extra...), ", ") + "}")
}

func TestMultipliersBecomeScales(t *testing.T) {
	tests := []struct {
		name                             string
		config                           json.RawMessage
		embed, attn, residual, logitMult float32
	}{
		{"granite-3.1-2b", json.RawMessage(granite31_2B), 12, 0.015625, 0.22, 0.125},
		{"absent multipliers are 1", config(), 1, 1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := Variants[0].Spec(tt.config)
			if err != nil {
				t.Fatal(err)
			}
			if s.EmbedScale != tt.embed || s.AttnScale != tt.attn || s.ResidualScale != tt.residual || s.LogitScale != tt.logitMult {
				t.Errorf("embed %g attention %g residual %g logits %g, want %g %g %g %g",
					s.EmbedScale, s.AttnScale, s.ResidualScale, s.LogitScale, tt.embed, tt.attn, tt.residual, tt.logitMult)
			}
		})
	}
}

func TestBadMultiplierNamesTheField(t *testing.T) {
	tests := []struct {
		config json.RawMessage
		field  string
	}{
		{config(`"logits_scaling": 0`), "logits_scaling"},
		{config(`"residual_multiplier": -0.5`), "residual_multiplier"},
		{config(`"embedding_multiplier": 1e300`), "embedding_multiplier"},
		{config(`"attention_multiplier": 0`), "attention_multiplier"},
		{config(`"head_dim": 32`), "head_dim"},
		{config(`"num_key_value_heads": 3`), "num_key_value_heads"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			_, _, err := Variants[0].Spec(tt.config)
			var fe *decoder.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("err = %v, want a *decoder.FieldError naming %s", err, tt.field)
			}
		})
	}
}
