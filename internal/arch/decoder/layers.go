package decoder

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hfstatic/hfstatic/program"
)

// Opt is a config.json field that remembers whether it was present and whether it was
// null, so a family can apply transformers' default only when the field is absent
// (MistralConfig's sliding_window defaults to 4096, but an explicit null disables it).
type Opt[T any] struct {
	Present bool
	Value   *T // nil when absent or null
}

// UnmarshalJSON records presence; encoding/json calls it for an explicit null too.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	o.Present = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}

// Or returns the value; def when the field is absent; nil when it is an explicit null.
func (o Opt[T]) Or(def T) *T {
	if !o.Present {
		return &def
	}
	return o.Value
}

// SlidingRule is how a family decides which layers use sliding-window attention when
// config.json has no layer_types list.
type SlidingRule int

const (
	// NoSliding: the family has no sliding attention; sliding_window and layer_types are
	// ignored, as transformers ignores them for Llama.
	NoSliding SlidingRule = iota
	// AllSliding: every layer slides when sliding_window is set (Mistral).
	AllSliding
	// WindowLayersSliding: layers i ≥ max_window_layers slide when use_sliding_window is
	// true and sliding_window is set (Qwen2, Qwen3).
	WindowLayersSliding
	// PatternSliding: layer i is full iff (i+1) % sliding_window_pattern == 0, sliding
	// otherwise (Gemma 3: five sliding layers, then one full).
	PatternSliding
	// AlternateSliding: even layers slide, odd layers are full (Gemma 2: layer i slides
	// iff (i+1) % 2 != 0).
	AlternateSliding
)

func (r SlidingRule) String() string {
	switch r {
	case NoSliding:
		return "none"
	case AllSliding:
		return "all layers"
	case WindowLayersSliding:
		return "use_sliding_window/max_window_layers"
	case PatternSliding:
		return "sliding_window_pattern"
	case AlternateSliding:
		return "alternating"
	}
	return fmt.Sprintf("SlidingRule(%d)", int(r))
}

// SlidingConfig holds the config.json fields that decide each layer's attention type, with
// the family's defaults for absent fields already applied by the caller.
type SlidingConfig struct {
	// Layers is num_hidden_layers.
	Layers int
	// LayerTypes is the explicit layer_types list ("full_attention" / "sliding_attention");
	// when present it wins over every rule but NoSliding.
	LayerTypes []string
	// Window is sliding_window (nil: none).
	Window *int
	// Pattern is sliding_window_pattern (PatternSliding only).
	Pattern int
	// UseSlidingWindow and MaxWindowLayers are Qwen's switches (WindowLayersSliding only).
	UseSlidingWindow bool
	MaxWindowLayers  int
}

// LayerTypes derives every layer's attention type and the sliding window W from a
// family's rule, in the way transformers does. W is 0 iff no layer slides. A layer that
// slides needs sliding_window > 0. Errors are *FieldError naming the field.
func LayerTypes(family string, rule SlidingRule, c SlidingConfig) ([]program.LayerType, int, error) {
	if c.Layers <= 0 {
		return nil, 0, &FieldError{Class: family, Field: "num_hidden_layers", Problem: fmt.Sprintf("= %d, must be > 0", c.Layers)}
	}
	types := make([]program.LayerType, c.Layers)
	slides := func(i int) bool { return false }
	switch {
	case rule == NoSliding:
	case len(c.LayerTypes) > 0:
		if len(c.LayerTypes) != c.Layers {
			return nil, 0, &FieldError{Class: family, Field: "layer_types", Problem: fmt.Sprintf("has %d entries for %d layers", len(c.LayerTypes), c.Layers)}
		}
		for i, t := range c.LayerTypes {
			if t != "full_attention" && t != "sliding_attention" {
				return nil, 0, &FieldError{Class: family, Field: fmt.Sprintf("layer_types[%d]", i), Problem: fmt.Sprintf("= %q is not full_attention or sliding_attention", t)}
			}
		}
		slides = func(i int) bool { return c.LayerTypes[i] == "sliding_attention" }
	case rule == AllSliding:
		slides = func(int) bool { return c.Window != nil }
	case rule == WindowLayersSliding:
		slides = func(i int) bool { return c.Window != nil && c.UseSlidingWindow && i >= c.MaxWindowLayers }
	case rule == PatternSliding:
		if c.Pattern <= 0 {
			return nil, 0, &FieldError{Class: family, Field: "sliding_window_pattern", Problem: fmt.Sprintf("= %d, must be > 0", c.Pattern)}
		}
		slides = func(i int) bool { return (i+1)%c.Pattern != 0 }
	case rule == AlternateSliding:
		slides = func(i int) bool { return i%2 == 0 }
	default:
		return nil, 0, fmt.Errorf("%s config: unknown sliding rule %v", family, rule)
	}
	sliding := false
	for i := range types {
		types[i] = program.LayerFull
		if slides(i) {
			types[i] = program.LayerSliding
			sliding = true
		}
	}
	if !sliding {
		return types, 0, nil
	}
	if c.Window == nil || *c.Window <= 0 {
		got := "null"
		if c.Window != nil {
			got = fmt.Sprint(*c.Window)
		}
		return nil, 0, &FieldError{Class: family, Field: "sliding_window", Problem: fmt.Sprintf("> 0, got %s (sliding layers need a window)", got)}
	}
	return types, *c.Window, nil
}
