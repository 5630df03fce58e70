package hf

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Sanity bounds on the sizes a config.json may claim. Checkpoints come from
// strangers, and architecture code allocates in proportion to these fields
// (one entry per layer, tables per position), so Open refuses a config that
// claims more than any real causal LM before anything is allocated. The
// largest published models stay well below every bound (126 layers, 128
// heads, a 262,208-token vocabulary, hidden size 16,384, 10M positions).
const (
	MaxLayers    = 1024    // num_hidden_layers
	MaxHeads     = 1024    // num_attention_heads, num_key_value_heads
	MaxHeadDim   = 4096    // head_dim
	MaxHidden    = 1 << 16 // hidden_size
	MaxFFN       = 1 << 20 // intermediate_size
	MaxVocab     = 1 << 22 // vocab_size
	MaxPositions = 1 << 27 // max_position_embeddings, sliding_window
)

// ErrConfigLimit means config.json claims a size beyond one of the bounds
// above; the error names the field, its value and the bound.
var ErrConfigLimit = errors.New("config.json claims a size beyond hfstatic's sanity bound")

// configBounds lists each bounded field with its limit and the limit's name.
var configBounds = []struct {
	field, limit string
	max          int64
}{
	{"num_hidden_layers", "MaxLayers", MaxLayers},
	{"num_attention_heads", "MaxHeads", MaxHeads},
	{"num_key_value_heads", "MaxHeads", MaxHeads},
	{"head_dim", "MaxHeadDim", MaxHeadDim},
	{"hidden_size", "MaxHidden", MaxHidden},
	{"intermediate_size", "MaxFFN", MaxFFN},
	{"vocab_size", "MaxVocab", MaxVocab},
	{"max_position_embeddings", "MaxPositions", MaxPositions},
	{"sliding_window", "MaxPositions", MaxPositions},
}

// checkBounds checks the bounded fields of a config, at the top level and in
// a nested "text_config" (multimodal configs keep the language model there).
// A field that is absent, null or not a number is left to the architecture.
func checkBounds(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if err := checkFields(top, ""); err != nil {
		return err
	}
	if raw, ok := top["text_config"]; ok {
		var nested map[string]json.RawMessage
		if json.Unmarshal(raw, &nested) == nil {
			return checkFields(nested, "text_config.")
		}
	}
	return nil
}

func checkFields(m map[string]json.RawMessage, prefix string) error {
	for _, b := range configBounds {
		raw, ok := m[b.field]
		if !ok {
			continue
		}
		var v float64
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		if v > float64(b.max) || v < -float64(b.max) {
			return fmt.Errorf("%w: %s%s = %s, the bound is %d (hf.%s); this is not a real model's size",
				ErrConfigLimit, prefix, b.field, raw, b.max, b.limit)
		}
	}
	return nil
}
