package decoder

import (
	"fmt"
	"strings"
)

// Layout maps a tensor name of Names to the name a checkpoint stores it under. Multimodal
// folders keep the text model under a prefix (Gemma 3's language_model.model.* or
// model.language_model.*); the program keeps the names of Names.
type Layout func(name string) string

// Prefixed is the layout that replaces the leading "model." of Names with model and the
// leading "lm_head." with head (either unchanged when empty).
func Prefixed(model, head string) Layout {
	return func(name string) string {
		if rest, ok := strings.CutPrefix(name, "model."); ok && model != "" {
			return model + rest
		}
		if rest, ok := strings.CutPrefix(name, "lm_head."); ok && head != "" {
			return head + rest
		}
		return name
	}
}

// FieldError reports a config field that is missing or wrong; Field is its JSON path
// (e.g. "text_config", "rope_scaling.long_factor").
type FieldError struct {
	Class   string // the Hugging Face class name; "" when the reporter does not know it
	Field   string
	Problem string
}

func (e *FieldError) Error() string {
	if e.Class == "" {
		return fmt.Sprintf("%s %s", e.Field, e.Problem)
	}
	return fmt.Sprintf("%s config: %s %s", e.Class, e.Field, e.Problem)
}

// Heads resolves a config's key/value head count and head dimension as transformers does:
// kvHeads absent means one per attention head, headDim absent means hidden / heads. It
// returns a *FieldError (of class) naming the field that is wrong.
func Heads(class string, hidden, heads int, kvHeads, headDim *int) (kv, dim int, err error) {
	bad := func(field string, val int, want string) error {
		return &FieldError{Class: class, Field: field, Problem: fmt.Sprintf("= %d, %s", val, want)}
	}
	kv = heads
	if kvHeads != nil {
		kv = *kvHeads
	}
	if kv <= 0 || heads%kv != 0 {
		return 0, 0, bad("num_key_value_heads", kv, fmt.Sprintf("must divide num_attention_heads %d", heads))
	}
	if headDim != nil {
		dim = *headDim
	} else if hidden%heads != 0 {
		return 0, 0, bad("hidden_size", hidden, "must be a multiple of num_attention_heads when head_dim is absent")
	} else {
		dim = hidden / heads
	}
	if dim <= 0 || dim%2 != 0 {
		return 0, 0, bad("head_dim", dim, "must be even and > 0")
	}
	return kv, dim, nil
}
