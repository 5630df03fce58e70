package hfstatic

import (
	"context"
	"errors"
	"fmt"

	"github.com/hfstatic/hfstatic/encode"
)

// Errors for a model asked for what it does not do; match them with errors.Is.
var (
	// ErrNotGenerative: Generate or NewChat on an embedding or reranking model.
	ErrNotGenerative = errors.New("the model embeds or scores text; it does not generate (use Embed or Rerank)")
	// ErrNotEncoder: Embed or Rerank on a generative model.
	ErrNotEncoder = errors.New("the model generates text; it has no embedding or reranking head (export an embedding or reranking model)")
)

func (m *Model) notGenerative() error { return fmt.Errorf("%s: %w", m.name, ErrNotGenerative) }

// Encoder returns the embedding or reranking side of the model, for what Embed and Rerank
// do not cover (prompts, truncation, dimensions, token ids, top-n), or ErrNotEncoder.
func (m *Model) Encoder() (*encode.Model, error) {
	if m.enc == nil {
		return nil, fmt.Errorf("%s: %w", m.name, ErrNotEncoder)
	}
	return m.enc, nil
}

// Embed returns one embedding per text, in order, from an embedding model (sentence-
// transformers' BERT and XLM-RoBERTa models, Qwen3-Embedding), with the model's default
// prompt. Texts longer than the model takes are an error (encode.ErrTooLong); Encoder gives
// the options (a prompt such as Qwen3-Embedding's "query", truncation, fewer dimensions).
//
//	m, err := hfstatic.OpenFolder(ctx, "all-MiniLM-L6-v2", hfstatic.Options{})
//	vecs, err := m.Embed(ctx, "A man is eating food.", "A man is riding a horse.")
func (m *Model) Embed(ctx context.Context, texts ...string) ([][]float32, error) {
	enc, err := m.Encoder()
	if err != nil {
		return nil, err
	}
	res, err := enc.Embed(ctx, texts, encode.EmbedOptions{})
	if err != nil {
		return nil, err
	}
	return res.Vectors, nil
}

// Rerank scores every document against the query with a reranking model (a cross-encoder
// such as ms-marco-MiniLM or bge-reranker-v2-m3, or Qwen3-Reranker) and returns them most
// relevant first; Encoder gives the options (truncation, an instruction, top-n).
func (m *Model) Rerank(ctx context.Context, query string, docs ...string) ([]encode.Ranked, error) {
	enc, err := m.Encoder()
	if err != nil {
		return nil, err
	}
	r, err := enc.Rerank(ctx, query, docs, encode.RerankOptions{})
	if err != nil {
		return nil, err
	}
	return r.Results, nil
}
