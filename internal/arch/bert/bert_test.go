package bert

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/arch/encoder"
	"github.com/hfstatic/hfstatic/program"
)

// The config.json of sentence-transformers/all-MiniLM-L6-v2 and of
// cross-encoder/ms-marco-MiniLM-L-6-v2 (their fields as released).
const (
	miniLM = `{"_name_or_path": "nreimers/MiniLM-L6-H384-uncased", "architectures": ["BertModel"],
		"attention_probs_dropout_prob": 0.1, "gradient_checkpointing": false, "hidden_act": "gelu",
		"hidden_dropout_prob": 0.1, "hidden_size": 384, "initializer_range": 0.02, "intermediate_size": 1536,
		"layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12,
		"num_hidden_layers": 6, "pad_token_id": 0, "position_embedding_type": "absolute",
		"transformers_version": "4.8.2", "type_vocab_size": 2, "use_cache": true, "vocab_size": 30522}`
	msMarco = `{"architectures": ["BertForSequenceClassification"], "attention_probs_dropout_prob": 0.1,
		"hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 384, "id2label": {"0": "LABEL_0"},
		"initializer_range": 0.02, "intermediate_size": 1536, "label2id": {"LABEL_0": 0}, "layer_norm_eps": 1e-12,
		"max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12, "num_hidden_layers": 6,
		"pad_token_id": 0, "position_embedding_type": "absolute", "type_vocab_size": 2, "vocab_size": 30522}`
)

func TestRealConfigsGiveTheirSpecs(t *testing.T) {
	s, err := Variants[0].EncoderSpec([]byte(miniLM))
	if err != nil {
		t.Fatal(err)
	}
	want := encoder.Spec{Hidden: 384, Layers: 6, Heads: 12, HeadDim: 32, FFN: 1536, Vocab: 30522, Positions: 512,
		TokenTypes: 2, NormEps: 1e-12, Activation: program.ActGELU}
	got := *s
	got.Names, got.Layouts, got.Classifier = encoder.Names{}, nil, nil
	if !cmp.Equal(got, want, cmpopts.IgnoreFields(encoder.Spec{}, "Names")) {
		t.Errorf("all-MiniLM-L6-v2 spec\n got %+v\nwant %+v", got, want)
	}
	if s.Classifier != nil || s.MaxTokens() != 512 {
		t.Errorf("classifier %+v, max tokens %d", s.Classifier, s.MaxTokens())
	}
	s, err = Variants[1].EncoderSpec([]byte(msMarco))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Classifier; c == nil || c.Labels != 1 || c.Dense != "bert.pooler.dense.weight" || c.Out != "classifier.weight" {
		t.Errorf("ms-marco classifier %+v", c)
	}
	if got := s.Layouts[1](s.Names.Layer(3, encoder.Up)); got != "bert.encoder.layer.3.intermediate.dense.weight" {
		t.Errorf("prefixed layer name %q", got)
	}
	if got := s.Layouts[1]("classifier.weight"); got != "classifier.weight" {
		t.Errorf("the prefix layout renamed the classifier: %q", got)
	}
}

func TestAbsentFieldsTakeBertConfigDefaults(t *testing.T) {
	s, err := Variants[0].EncoderSpec([]byte(`{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
		"intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 4}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.TokenTypes != 2 || s.NormEps != 1e-12 || s.Activation != program.ActGELU || s.PositionOffset != 0 {
		t.Errorf("defaults: %+v", s)
	}
	s, _ = Variants[1].EncoderSpec([]byte(`{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
		"intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 4}`))
	if s.Classifier.Labels != 2 {
		t.Errorf("labels without id2label: %d, want transformers' default 2", s.Classifier.Labels)
	}
}

func TestBadConfigsNameTheirField(t *testing.T) {
	for field, cfg := range map[string]string{
		"hidden_size":             `{"hidden_size": 10, "num_hidden_layers": 1, "num_attention_heads": 4, "intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 4}`,
		"num_hidden_layers":       `{"hidden_size": 8, "num_hidden_layers": 0, "num_attention_heads": 2, "intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 4}`,
		"hidden_act":              `{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 4, "hidden_act": "mish"}`,
		"position_embedding_type": `{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 4, "position_embedding_type": "relative_key"}`,
		"type_vocab_size":         `{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 4, "type_vocab_size": 0}`,
		"layer_norm_eps":          `{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 4, "layer_norm_eps": 0}`,
	} {
		_, err := Variants[0].EncoderSpec([]byte(cfg))
		var fe *decoder.FieldError
		if !errors.As(err, &fe) || fe.Field != field || fe.Class != "BertModel" {
			t.Errorf("%s: error %v, want a FieldError naming it", field, err)
		}
	}
}
