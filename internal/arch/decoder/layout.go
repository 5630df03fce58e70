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
