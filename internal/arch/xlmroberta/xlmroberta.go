// Package xlmroberta gives the meaning of XLM-RoBERTa and RoBERTa Hugging Face configs
// (XLMRobertaModel, XLMRobertaForSequenceClassification, RobertaModel,
// RobertaForSequenceClassification) as encoder specs: BERT's graph (internal/arch/bert's
// config rules) with positions counted from pad_token_id + 1, one token type and a
// classification head of its own. It knows config fields and weight names; it does not
// read files or run anything.
package xlmroberta

import (
	"encoding/json"
	"fmt"

	"github.com/hfstatic/hfstatic/internal/arch/bert"
	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/arch/encoder"
)

// robertaDefaults are RobertaConfig's and XLMRobertaConfig's values for absent fields.
var robertaDefaults = bert.Defaults{TypeVocab: 2, NormEps: 1e-12, Pad: 1}

// Variant is one architecture of the family.
type Variant struct {
	Class    string
	Prefix   string // where the class keeps the base model ("roberta.")
	Classify bool
}

// Variants lists the supported architectures by Hugging Face class name.
var Variants = []Variant{
	{Class: "XLMRobertaModel", Prefix: "roberta."},
	{Class: "XLMRobertaForSequenceClassification", Prefix: "roberta.", Classify: true},
	{Class: "RobertaModel", Prefix: "roberta."},
	{Class: "RobertaForSequenceClassification", Prefix: "roberta.", Classify: true},
}

// Name is the class name the variant is registered under.
func (v Variant) Name() string { return v.Class }

// EncoderSpec parses an (XLM-)RoBERTa config.json. Position ids start at pad_token_id + 1
// (transformers' create_position_ids_from_input_ids on right-padded real tokens), so the
// program's table starts at that row and holds max_position_embeddings - pad_token_id - 1
// positions (512 of XLM-RoBERTa's 514). transformers skips the pad id itself when it occurs
// inside a text (the literal "<pad>"): such a token and the ones after it get positions one
// lower there than here.
func (v Variant) EncoderSpec(raw json.RawMessage) (*encoder.Spec, error) {
	var c bert.Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s config: %w", v.Class, err)
	}
	pad := c.Pad(robertaDefaults)
	if pad < 0 {
		return nil, &decoder.FieldError{Class: v.Class, Field: "pad_token_id", Problem: fmt.Sprintf("= %d, must be ≥ 0 (positions start after it)", pad)}
	}
	s, err := c.Spec(v.Class, robertaDefaults, pad+1)
	if err != nil {
		return nil, err
	}
	s.Layouts = []decoder.Layout{func(n string) string { return n }, encoder.BaseModel(v.Prefix)}
	if v.Classify {
		s.Classifier = &encoder.Classifier{Labels: c.Labels(), Dense: "classifier.dense.weight", DenseBias: "classifier.dense.bias",
			Out: "classifier.out_proj.weight", OutBias: "classifier.out_proj.bias"}
	}
	return s, s.Validate()
}
