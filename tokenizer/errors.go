package tokenizer

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error about a malformed tokenizer.json or
// tokenizer_config.json (bad JSON, missing fields, inconsistent ids).
var ErrInvalid = errors.New("tokenizer: invalid tokenizer file")

// UnsupportedError reports a component of tokenizer.json whose type this
// package does not implement. Component is one of "normalizer",
// "pre_tokenizer", "model", "post_processor", "decoder" or "pattern".
type UnsupportedError struct {
	Component string
	Type      string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("tokenizer: unsupported %s type %q: this package implements BPE, WordPiece and Unigram models with the "+
		"normalizers, pre-tokenizers, post-processors and decoders used by Llama, Qwen, Gemma, Mistral, BERT and XLM-RoBERTa; "+
		"convert the tokenizer or extend the package", e.Component, e.Type)
}

// UnknownIDError reports a token id outside the vocabulary given to Decode or
// a Stream.
type UnknownIDError struct {
	ID        int
	VocabSize int
}

func (e *UnknownIDError) Error() string {
	return fmt.Sprintf("tokenizer: token id %d is not in the vocabulary (valid ids are 0..%d)", e.ID, e.VocabSize-1)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
