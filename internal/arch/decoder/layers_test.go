package decoder

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/program"
)

// types spells layer types compactly: 's' sliding, 'f' full.
func types(s string) []program.LayerType {
	out := make([]program.LayerType, len(s))
	for i, c := range s {
		out[i] = program.LayerFull
		if c == 's' {
			out[i] = program.LayerSliding
		}
	}
	return out
}

func ptr(v int) *int { return &v }

func TestLayerTypesFollowEachConfigStyle(t *testing.T) {
	tests := []struct {
		name       string
		rule       SlidingRule
		cfg        SlidingConfig
		want       string
		wantWindow int
	}{
		{"llama ignores sliding_window", NoSliding, SlidingConfig{Layers: 3, Window: ptr(8)}, "fff", 0},
		{"llama ignores layer_types", NoSliding, SlidingConfig{Layers: 2, Window: ptr(8), LayerTypes: []string{"sliding_attention", "full_attention"}}, "ff", 0},
		{"mistral with a window slides everywhere", AllSliding, SlidingConfig{Layers: 3, Window: ptr(4096)}, "sss", 4096},
		{"mistral with null window is full", AllSliding, SlidingConfig{Layers: 3}, "fff", 0},
		{"qwen slides from max_window_layers on", WindowLayersSliding, SlidingConfig{Layers: 4, Window: ptr(32), UseSlidingWindow: true, MaxWindowLayers: 2}, "ffss", 32},
		{"qwen max_window_layers 0 slides everywhere", WindowLayersSliding, SlidingConfig{Layers: 2, Window: ptr(32), UseSlidingWindow: true}, "ss", 32},
		{"qwen without use_sliding_window is full", WindowLayersSliding, SlidingConfig{Layers: 4, Window: ptr(32), MaxWindowLayers: 2}, "ffff", 0},
		{"qwen with max_window_layers ≥ layers is full", WindowLayersSliding, SlidingConfig{Layers: 4, Window: ptr(32), UseSlidingWindow: true, MaxWindowLayers: 28}, "ffff", 0},
		{"gemma 3 pattern 6: five sliding then one full", PatternSliding, SlidingConfig{Layers: 8, Window: ptr(4), Pattern: 6}, "sssssfss", 4},
		{"gemma 3 pattern 2", PatternSliding, SlidingConfig{Layers: 4, Window: ptr(512), Pattern: 2}, "sfsf", 512},
		{"gemma 2 alternates, layer 0 slides", AlternateSliding, SlidingConfig{Layers: 5, Window: ptr(4096)}, "sfsfs", 4096},
		{"explicit layer_types win over the pattern", PatternSliding, SlidingConfig{Layers: 3, Window: ptr(4), Pattern: 6,
			LayerTypes: []string{"full_attention", "sliding_attention", "full_attention"}}, "fsf", 4},
		{"explicit all-full layer_types need no window", WindowLayersSliding, SlidingConfig{Layers: 2, Window: ptr(131072),
			LayerTypes: []string{"full_attention", "full_attention"}}, "ff", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, w, err := LayerTypes("Test", tt.rule, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(types(tt.want), got); diff != "" {
				t.Errorf("layer types (-want +got):\n%s", diff)
			}
			if w != tt.wantWindow {
				t.Errorf("window %d, want %d", w, tt.wantWindow)
			}
		})
	}
}

func TestLayerTypesRejectInconsistentConfigs(t *testing.T) {
	tests := []struct {
		name    string
		rule    SlidingRule
		cfg     SlidingConfig
		wantErr string
	}{
		{"no layers", AllSliding, SlidingConfig{}, "num_hidden_layers = 0"},
		{"layer_types length", PatternSliding, SlidingConfig{Layers: 2, Window: ptr(4), Pattern: 6, LayerTypes: []string{"full_attention"}}, "1 entries for 2 layers"},
		{"unknown layer type", AllSliding, SlidingConfig{Layers: 1, Window: ptr(4), LayerTypes: []string{"chunked_attention"}}, `layer_types[0] = "chunked_attention"`},
		{"sliding layer without window", AlternateSliding, SlidingConfig{Layers: 2}, "sliding_window > 0, got null"},
		{"sliding layer with zero window", AllSliding, SlidingConfig{Layers: 2, Window: ptr(0)}, "sliding_window > 0, got 0"},
		{"explicit sliding without window", WindowLayersSliding, SlidingConfig{Layers: 1, LayerTypes: []string{"sliding_attention"}}, "sliding_window > 0"},
		{"pattern 0", PatternSliding, SlidingConfig{Layers: 2, Window: ptr(4)}, "sliding_window_pattern = 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := LayerTypes("Test", tt.rule, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "Test config: ") {
				t.Errorf("error %q does not name the architecture", err)
			}
		})
	}
}

func TestOptTellsAbsentFromNull(t *testing.T) {
	var c struct {
		A Opt[int] `json:"a"`
		B Opt[int] `json:"b"`
		C Opt[int] `json:"c"`
	}
	if err := json.Unmarshal([]byte(`{"a": 3, "b": null}`), &c); err != nil {
		t.Fatal(err)
	}
	if p := c.A.Or(9); p == nil || *p != 3 {
		t.Errorf("present 3: Or(9) = %v, want 3", p)
	}
	if p := c.B.Or(9); p != nil {
		t.Errorf("explicit null: Or(9) = %d, want nil", *p)
	}
	if p := c.C.Or(9); p == nil || *p != 9 {
		t.Errorf("absent: Or(9) = %v, want the default 9", p)
	}
	if err := json.Unmarshal([]byte(`{"a": "x"}`), &c); err == nil {
		t.Error("a string for an int field was accepted")
	}
}

func TestLayerTypesErrorsNameTheField(t *testing.T) {
	tests := []struct {
		cfg   SlidingConfig
		rule  SlidingRule
		field string
	}{
		{SlidingConfig{Layers: 0}, AllSliding, "num_hidden_layers"},
		{SlidingConfig{Layers: 2, LayerTypes: []string{"full_attention"}}, AllSliding, "layer_types"},
		{SlidingConfig{Layers: 2, LayerTypes: []string{"full_attention", "local"}}, AllSliding, "layer_types[1]"},
		{SlidingConfig{Layers: 2, Pattern: 0}, PatternSliding, "sliding_window_pattern"},
		{SlidingConfig{Layers: 2, Pattern: 2}, PatternSliding, "sliding_window"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			_, _, err := LayerTypes("Test", tt.rule, tt.cfg)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || fe.Class != "Test" {
				t.Errorf("err = %v, want a *FieldError naming Test's %s", err, tt.field)
			}
		})
	}
}
