// Package smollm3 gives the meaning of SmolLM3 Hugging Face configs (SmolLM3ForCausalLM) as
// decoder specs. It knows config fields and weight names; it does not read files or run
// anything.
//
// SmolLM3 is Llama with layers that use no rotary embedding ("NoPE" layers), after
// transformers' configuration_smollm3.py and modeling_smollm3.py: no_rope_layers[i] is 1
// where layer i rotates q and k and 0 where it does not; when the list is absent, every
// no_rope_layer_interval-th layer (default 4: layers 3, 7, …) is a NoPE layer. Sliding
// attention is off unless use_sliding_window is true; then, when layer_types is absent, the
// NoPE layers slide (window sliding_window) and the others attend to everything.
package smollm3

import (
	"encoding/json"
	"fmt"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/arch/llama"
	"github.com/hfstatic/hfstatic/program"
)

// rawConfig holds SmolLM3Config's fields beyond Llama's.
type rawConfig struct {
	NumHiddenLayers     int              `json:"num_hidden_layers"`
	NoRopeLayers        []int            `json:"no_rope_layers"`
	NoRopeLayerInterval decoder.Opt[int] `json:"no_rope_layer_interval"`
	UseSlidingWindow    bool             `json:"use_sliding_window"`
	SlidingWindow       *int             `json:"sliding_window"`
	LayerTypes          []string         `json:"layer_types"`
}

// Variant is one architecture of the family.
type Variant struct {
	Class string // the Hugging Face class name (config.json architectures[0])
	// defaultTheta and defaultInterval are SmolLM3Config's rope_theta and
	// no_rope_layer_interval defaults.
	defaultTheta    float64
	defaultInterval int
}

// Variants lists the supported architectures by Hugging Face class name.
var Variants = []Variant{
	{Class: "SmolLM3ForCausalLM", defaultTheta: 2e6, defaultInterval: 4},
}

// Name is the class name the variant is registered under.
func (v Variant) Name() string { return v.Class }

// Spec validates a raw config and returns the model's decoder spec and its trained context.
// The sizes, RoPE and biases are read as for Llama (errors name the field).
func (v Variant) Spec(raw json.RawMessage) (*decoder.Spec, int, error) {
	s, maxPos, err := llama.Plain(v.Class, v.defaultTheta).Spec(raw)
	if err != nil {
		return nil, 0, err
	}
	var c rawConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, 0, fmt.Errorf("%s config: %w", v.Class, err)
	}
	rotates, err := v.ropeLayers(&c)
	if err != nil {
		return nil, 0, err
	}
	s.NoPE = make([]bool, c.NumHiddenLayers)
	for i, r := range rotates {
		s.NoPE[i] = !r
	}
	if s.LayerTypes, s.Window, err = v.layerTypes(&c, rotates); err != nil {
		return nil, 0, err
	}
	s.Names = Names
	return s, maxPos, s.Validate()
}

// ropeLayers returns, per layer, whether it applies RoPE: no_rope_layers when present (at
// least one entry per layer, each 0 or 1), else the no_rope_layer_interval rule.
func (v Variant) ropeLayers(c *rawConfig) ([]bool, error) {
	rotates := make([]bool, c.NumHiddenLayers)
	if c.NoRopeLayers != nil {
		if len(c.NoRopeLayers) < c.NumHiddenLayers {
			return nil, &decoder.FieldError{Class: v.Class, Field: "no_rope_layers",
				Problem: fmt.Sprintf("has %d entries for %d layers; it needs one per layer (1: RoPE, 0: none)", len(c.NoRopeLayers), c.NumHiddenLayers)}
		}
		for i := range rotates {
			switch c.NoRopeLayers[i] {
			case 0, 1:
				rotates[i] = c.NoRopeLayers[i] == 1
			default:
				return nil, &decoder.FieldError{Class: v.Class, Field: fmt.Sprintf("no_rope_layers[%d]", i),
					Problem: fmt.Sprintf("= %d, must be 1 (RoPE) or 0 (none)", c.NoRopeLayers[i])}
			}
		}
		return rotates, nil
	}
	interval := c.NoRopeLayerInterval.Or(v.defaultInterval)
	if interval == nil || *interval <= 0 {
		got := "null"
		if interval != nil {
			got = fmt.Sprint(*interval)
		}
		return nil, &decoder.FieldError{Class: v.Class, Field: "no_rope_layer_interval",
			Problem: fmt.Sprintf("= %s, must be > 0 when no_rope_layers is absent", got)}
	}
	for i := range rotates {
		rotates[i] = (i+1)%*interval != 0
	}
	return rotates, nil
}

// layerTypes follows SmolLM3Config: a layer slides only when use_sliding_window is true,
// sliding_window is set and the layer's type is sliding_attention (from layer_types, or,
// when that is absent, the NoPE layers).
func (v Variant) layerTypes(c *rawConfig, rotates []bool) ([]program.LayerType, int, error) {
	if !c.UseSlidingWindow || c.SlidingWindow == nil {
		return decoder.LayerTypes(v.Class, decoder.NoSliding, decoder.SlidingConfig{Layers: c.NumHiddenLayers})
	}
	types := c.LayerTypes
	if types == nil {
		types = make([]string, c.NumHiddenLayers)
		for i, r := range rotates {
			types[i] = "full_attention"
			if !r {
				types[i] = "sliding_attention"
			}
		}
	}
	return decoder.LayerTypes(v.Class, decoder.AllSliding, decoder.SlidingConfig{
		Layers: c.NumHiddenLayers, LayerTypes: types, Window: c.SlidingWindow,
	})
}

// Names are SmolLM3's weight names: transformers' usual (Llama's) ones.
var Names = decoder.TransformersNames(nil)
