package smollm3

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/program"
)

// config is a small SmolLM3 config of 8 layers with extra members.
func config(extra ...string) json.RawMessage {
	base := `"hidden_size": 64, "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 1,
	"intermediate_size": 128, "vocab_size": 100, "rms_norm_eps": 1e-6, "max_position_embeddings": 64`
	return json.RawMessage("{" + strings.Join(append([]string{base}, extra...), ", ") + "}")
}

// spell writes per-layer flags compactly: 'n' a NoPE layer, 'r' one with RoPE; then the layer
// types: 's' sliding, 'f' full.
func spell(s *decoder.Spec) string {
	var b strings.Builder
	for _, nope := range s.NoPE {
		b.WriteByte("rn"[btoi(nope)])
	}
	b.WriteByte(' ')
	for _, t := range s.LayerTypes {
		b.WriteByte(string(t)[0])
	}
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestNoPELayersFollowTransformers(t *testing.T) {
	tests := []struct {
		name   string
		config json.RawMessage
		want   string
		window int
	}{
		{"absent list: every 4th layer", config(), "rrrnrrrn ffffffff", 0},
		{"interval 3", config(`"no_rope_layer_interval": 3`), "rrnrrnrr ffffffff", 0},
		{"explicit list wins", config(`"no_rope_layers": [0,1,1,1,1,1,1,1,1]`, `"no_rope_layer_interval": 3`), "nrrrrrrr ffffffff", 0},
		{"window unused without use_sliding_window", config(`"sliding_window": 8`), "rrrnrrrn ffffffff", 0},
		{"NoPE layers slide", config(`"use_sliding_window": true`, `"sliding_window": 8`), "rrrnrrrn fffsfffs", 8},
		{"explicit layer_types", config(`"use_sliding_window": true`, `"sliding_window": 8`,
			`"layer_types": ["sliding_attention","full_attention","full_attention","full_attention","full_attention","full_attention","full_attention","full_attention"]`),
			"rrrnrrrn sfffffff", 8},
		{"use_sliding_window without a window", config(`"use_sliding_window": true`, `"sliding_window": null`), "rrrnrrrn ffffffff", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := Variants[0].Spec(tt.config)
			if err != nil {
				t.Fatal(err)
			}
			if got := spell(s); got != tt.want || s.Window != tt.window {
				t.Errorf("got %q window %d, want %q window %d", got, s.Window, tt.want, tt.window)
			}
		})
	}
}

func TestAbsentRopeThetaIsSmolLM3Default(t *testing.T) {
	s, maxPos, err := Variants[0].Spec(config(`"tie_word_embeddings": true`))
	if err != nil {
		t.Fatal(err)
	}
	if maxPos != 64 || !s.Tied || s.RoPE[program.LayerFull].InvFreq[1] != float64(float32(1/math.Pow(2e6, 2.0/16))) {
		t.Errorf("context %d tied %v inv_freq[1] %g: want rope_theta's default 2e6", maxPos, s.Tied, s.RoPE[program.LayerFull].InvFreq[1])
	}
}

func TestBadNoPEConfigNamesTheField(t *testing.T) {
	tests := []struct {
		config json.RawMessage
		field  string
	}{
		{config(`"no_rope_layers": [1,1,1]`), "no_rope_layers"},
		{config(`"no_rope_layers": [1,2,1,1,1,1,1,1]`), "no_rope_layers[1]"},
		{config(`"no_rope_layer_interval": 0`), "no_rope_layer_interval"},
		{config(`"no_rope_layer_interval": null`), "no_rope_layer_interval"},
		{config(`"rms_norm_eps": 0`), "rms_norm_eps"},
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
