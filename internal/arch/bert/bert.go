// Package bert gives the meaning of BERT-family Hugging Face configs (BertModel,
// BertForSequenceClassification) and, through Config, of the RoBERTa family's
// (internal/arch/xlmroberta), as encoder specs. It knows config fields and weight names;
// it does not read files or run anything.
package bert

import (
	"encoding/json"
	"fmt"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/arch/encoder"
	"github.com/hfstatic/hfstatic/program"
)

// Config is config.json as transformers writes it for BertConfig and RobertaConfig (and
// XLMRobertaConfig), for the fields the encoder reads.
type Config struct {
	HiddenSize            int               `json:"hidden_size"`
	NumHiddenLayers       int               `json:"num_hidden_layers"`
	NumAttentionHeads     int               `json:"num_attention_heads"`
	IntermediateSize      int               `json:"intermediate_size"`
	VocabSize             int               `json:"vocab_size"`
	MaxPositionEmbeddings int               `json:"max_position_embeddings"`
	TypeVocabSize         *int              `json:"type_vocab_size"`
	LayerNormEps          *float64          `json:"layer_norm_eps"`
	HiddenAct             *string           `json:"hidden_act"`
	PadTokenID            *int              `json:"pad_token_id"`
	PositionEmbeddingType *string           `json:"position_embedding_type"`
	NumLabels             *int              `json:"num_labels"`
	ID2Label              map[string]string `json:"id2label"`
}

// Defaults are a config class's values for absent fields.
type Defaults struct {
	TypeVocab int
	NormEps   float64
	Pad       int
}

// BERTDefaults are BertConfig's.
var BERTDefaults = Defaults{TypeVocab: 2, NormEps: 1e-12, Pad: 0}

// Variant is one architecture of the family.
type Variant struct {
	Class string
	// Prefix is where the class keeps the base model's tensors ("bert."); the exporter also
	// tries them without it (a base model saved on its own).
	Prefix string
	// Classify: a sequence classification head (ForSequenceClassification).
	Classify bool
}

// Variants lists the supported architectures by Hugging Face class name.
var Variants = []Variant{
	{Class: "BertModel", Prefix: "bert."},
	{Class: "BertForSequenceClassification", Prefix: "bert.", Classify: true},
}

// Name is the class name the variant is registered under.
func (v Variant) Name() string { return v.Class }

// EncoderSpec parses a BERT config.json.
func (v Variant) EncoderSpec(raw json.RawMessage) (*encoder.Spec, error) {
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s config: %w", v.Class, err)
	}
	s, err := c.Spec(v.Class, BERTDefaults, 0)
	if err != nil {
		return nil, err
	}
	s.Layouts = []decoder.Layout{func(n string) string { return n }, encoder.BaseModel(v.Prefix)}
	if v.Classify {
		s.Classifier = &encoder.Classifier{Labels: c.Labels(), Dense: "bert.pooler.dense.weight", DenseBias: "bert.pooler.dense.bias",
			Out: "classifier.weight", OutBias: "classifier.bias"}
	}
	return s, s.Validate()
}

// Spec resolves the config into an encoder spec for class, with its defaults for absent
// fields and the position table's first row of position 0.
func (c *Config) Spec(class string, d Defaults, positionOffset int) (*encoder.Spec, error) {
	bad := func(field string, val any, want string) error {
		return &decoder.FieldError{Class: class, Field: field, Problem: fmt.Sprintf("= %v, %s", val, want)}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"intermediate_size", c.IntermediateSize}, {"vocab_size", c.VocabSize}, {"max_position_embeddings", c.MaxPositionEmbeddings}} {
		if f.v <= 0 {
			return nil, bad(f.name, f.v, "must be > 0")
		}
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 {
		return nil, bad("hidden_size", c.HiddenSize, fmt.Sprintf("must be a multiple of num_attention_heads %d", c.NumAttentionHeads))
	}
	if p := c.PositionEmbeddingType; p != nil && *p != "absolute" {
		return nil, bad("position_embedding_type", *p, `only "absolute" is supported`)
	}
	types := d.TypeVocab
	if c.TypeVocabSize != nil {
		types = *c.TypeVocabSize
	}
	if types <= 0 {
		return nil, bad("type_vocab_size", types, "must be > 0")
	}
	eps := d.NormEps
	if c.LayerNormEps != nil {
		eps = *c.LayerNormEps
	}
	if eps <= 0 {
		return nil, bad("layer_norm_eps", eps, "must be > 0")
	}
	act := "gelu"
	if c.HiddenAct != nil {
		act = *c.HiddenAct
	}
	activation, ok := activations[act]
	if !ok {
		return nil, bad("hidden_act", act, "must be gelu, gelu_new, gelu_pytorch_tanh, relu, silu or swish")
	}
	if positionOffset >= c.MaxPositionEmbeddings {
		return nil, bad("max_position_embeddings", c.MaxPositionEmbeddings, fmt.Sprintf("must exceed pad_token_id + 1 = %d (positions start there)", positionOffset))
	}
	s := &encoder.Spec{Hidden: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads, HeadDim: c.HiddenSize / c.NumAttentionHeads,
		FFN: c.IntermediateSize, Vocab: c.VocabSize, Positions: c.MaxPositionEmbeddings, PositionOffset: positionOffset,
		TokenTypes: types, NormEps: float32(eps), Activation: activation, Names: encoder.BERTNames}
	return s, nil
}

// Labels is the number of scores of a classification head: num_labels, else the size of
// id2label, else transformers' default of 2.
func (c *Config) Labels() int {
	switch {
	case c.NumLabels != nil:
		return *c.NumLabels
	case len(c.ID2Label) > 0:
		return len(c.ID2Label)
	}
	return 2
}

// Pad is pad_token_id, or the default.
func (c *Config) Pad(d Defaults) int {
	if c.PadTokenID != nil {
		return *c.PadTokenID
	}
	return d.Pad
}

// activations maps hidden_act to the op's activation (transformers' ACT2FN names).
var activations = map[string]string{
	"gelu":              program.ActGELU,
	"gelu_new":          program.ActGELUTanh,
	"gelu_pytorch_tanh": program.ActGELUTanh,
	"relu":              program.ActReLU,
	"silu":              program.ActSiLU,
	"swish":             program.ActSiLU,
}
