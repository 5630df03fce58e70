package xlmroberta

import (
	"errors"
	"testing"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/program"
)

// The config.json of BAAI/bge-reranker-v2-m3 (bge-m3's, with a classifier), as released.
const bgeRerankerV2M3 = `{"_name_or_path": "BAAI/bge-m3", "architectures": ["XLMRobertaForSequenceClassification"],
	"attention_probs_dropout_prob": 0.1, "bos_token_id": 0, "classifier_dropout": null, "eos_token_id": 2,
	"hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 1024, "id2label": {"0": "LABEL_0"},
	"initializer_range": 0.02, "intermediate_size": 4096, "label2id": {"LABEL_0": 0}, "layer_norm_eps": 1e-05,
	"max_position_embeddings": 8194, "model_type": "xlm-roberta", "num_attention_heads": 16, "num_hidden_layers": 24,
	"output_past": true, "pad_token_id": 1, "position_embedding_type": "absolute", "torch_dtype": "float32",
	"type_vocab_size": 1, "use_cache": true, "vocab_size": 250002}`

func TestPositionsStartAfterThePadID(t *testing.T) {
	s, err := Variants[1].EncoderSpec([]byte(bgeRerankerV2M3))
	if err != nil {
		t.Fatal(err)
	}
	if s.PositionOffset != 2 || s.MaxTokens() != 8192 || s.TokenTypes != 1 || s.NormEps != 1e-5 || s.Activation != program.ActGELU {
		t.Errorf("spec %+v", s)
	}
	if c := s.Classifier; c == nil || c.Labels != 1 || c.Dense != "classifier.dense.weight" || c.Out != "classifier.out_proj.weight" {
		t.Errorf("classifier %+v", c)
	}
	if got := s.Layouts[1](s.Names.Embed); got != "roberta.embeddings.word_embeddings.weight" {
		t.Errorf("prefixed embedding %q", got)
	}
	w := s.Weights()
	if w[1].SkipRows != 2 || w[1].Shape[0] != 8192 {
		t.Errorf("position weight %+v: want the table from row 2, 8192 rows", w[1])
	}
}

func TestPadIDAtTheEndOfThePositionsIsAnError(t *testing.T) {
	_, err := Variants[0].EncoderSpec([]byte(`{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
		"intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 2, "pad_token_id": 1}`))
	var fe *decoder.FieldError
	if !errors.As(err, &fe) || fe.Field != "max_position_embeddings" {
		t.Errorf("error %v, want a FieldError on max_position_embeddings", err)
	}
}
