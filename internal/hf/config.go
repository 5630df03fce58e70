package hf

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ConfigFile is what hf reads from config.json. Architecture packages
// unmarshal Raw into their own raw config struct and validate it; hf does not
// interpret architecture fields.
type ConfigFile struct {
	Architectures []string // e.g. ["LlamaForCausalLM"]; the registry key is Architectures[0]
	ModelType     string   // e.g. "llama", "gemma3_text"
	TorchDType    string   // "torch_dtype" (or the newer "dtype"), e.g. "bfloat16"; empty if absent
	Raw           json.RawMessage
}

// Generation holds token ids and sampling defaults from generation_config.json,
// falling back to config.json for the token ids. Absent values are nil.
type Generation struct {
	BOSID  *int
	EOSIDs []int // empty when neither file names one; generation_config.json's list wins
	PadID  *int

	DoSample          *bool
	Temperature       *float64
	TopK              *int
	TopP              *float64
	MinP              *float64
	RepetitionPenalty *float64
	MaxNewTokens      *int
}

// tokenIDs is a token id field that may be null, an int or a list of ints.
type tokenIDs struct {
	set bool // the key was present and not null
	ids []int
}

func (t *tokenIDs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*t = tokenIDs{}
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var ids []int
		if err := json.Unmarshal(b, &ids); err != nil {
			return fmt.Errorf("want an integer or a list of integers: %w", err)
		}
		*t = tokenIDs{set: true, ids: ids}
		return nil
	}
	var id int
	if err := json.Unmarshal(b, &id); err != nil {
		return fmt.Errorf("want an integer or a list of integers, got %s", b)
	}
	*t = tokenIDs{set: true, ids: []int{id}}
	return nil
}

// rawTokenFields are the token id fields of both config files.
type rawTokenFields struct {
	BOS tokenIDs `json:"bos_token_id"`
	EOS tokenIDs `json:"eos_token_id"`
	Pad tokenIDs `json:"pad_token_id"`
}

type rawConfig struct {
	rawTokenFields
	Architectures []string `json:"architectures"`
	ModelType     string   `json:"model_type"`
	TorchDType    string   `json:"torch_dtype"`
	DType         string   `json:"dtype"`
}

type rawGeneration struct {
	rawTokenFields
	DoSample          *bool    `json:"do_sample"`
	Temperature       *float64 `json:"temperature"`
	TopK              *int     `json:"top_k"`
	TopP              *float64 `json:"top_p"`
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	MaxNewTokens      *int     `json:"max_new_tokens"`
}

func parseConfig(data []byte) (ConfigFile, rawTokenFields, error) {
	var rc rawConfig
	if err := json.Unmarshal(data, &rc); err != nil {
		return ConfigFile{}, rawTokenFields{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if len(rc.Architectures) == 0 || rc.Architectures[0] == "" {
		return ConfigFile{}, rawTokenFields{}, fmt.Errorf(`"architectures" is missing or empty; it must name the model class, e.g. ["LlamaForCausalLM"]`)
	}
	dt := rc.TorchDType
	if dt == "" {
		dt = rc.DType
	}
	cfg := ConfigFile{
		Architectures: rc.Architectures,
		ModelType:     rc.ModelType,
		TorchDType:    dt,
		Raw:           json.RawMessage(bytes.Clone(data)),
	}
	return cfg, rc.rawTokenFields, nil
}

// parseGeneration merges generation_config.json (may be nil) over config.json's token ids.
func parseGeneration(data []byte, fromConfig rawTokenFields) (Generation, error) {
	var rg rawGeneration
	if data != nil {
		if err := json.Unmarshal(data, &rg); err != nil {
			return Generation{}, fmt.Errorf("invalid JSON: %w", err)
		}
	}
	pick := func(gen, cfg tokenIDs) tokenIDs {
		if gen.set {
			return gen
		}
		return cfg
	}
	g := Generation{
		DoSample:          rg.DoSample,
		Temperature:       rg.Temperature,
		TopK:              rg.TopK,
		TopP:              rg.TopP,
		MinP:              rg.MinP,
		RepetitionPenalty: rg.RepetitionPenalty,
		MaxNewTokens:      rg.MaxNewTokens,
	}
	var err error
	if g.BOSID, err = single("bos_token_id", pick(rg.BOS, fromConfig.BOS)); err != nil {
		return Generation{}, err
	}
	if g.PadID, err = single("pad_token_id", pick(rg.Pad, fromConfig.Pad)); err != nil {
		return Generation{}, err
	}
	for _, id := range pick(rg.EOS, fromConfig.EOS).ids {
		if id < 0 {
			return Generation{}, fmt.Errorf("eos_token_id %d is negative", id)
		}
		g.EOSIDs = append(g.EOSIDs, id)
	}
	return g, nil
}

func single(field string, t tokenIDs) (*int, error) {
	switch {
	case !t.set || len(t.ids) == 0:
		return nil, nil
	case len(t.ids) > 1:
		return nil, fmt.Errorf("%s lists %d ids %v; only one is supported", field, len(t.ids), t.ids)
	case t.ids[0] < 0:
		return nil, fmt.Errorf("%s %d is negative", field, t.ids[0])
	}
	id := t.ids[0]
	return &id, nil
}
