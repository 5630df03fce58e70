package program

import "fmt"

// The hf_encode contract, version 1 (docs/contract.md, "The hf_encode v1 contract"): a
// program that maps a batch of padded sequences to one row per sequence, an embedding or a
// score, with no state between calls. Its one method, encode, runs B sequences of at most
// S tokens each; only their real tokens are computed. As for hf_static, this file is the one
// definition of the contract's names, shared by the graph builders, the exporter and the
// runner's registry.
const (
	EncodeContractName    = "hf_encode"
	EncodeContractVersion = 1
)

// MethodEncode is the hf_encode contract's one method.
const MethodEncode = "encode"

// I/O names of the hf_encode contract (input_ids and attention_mask are shared with
// hf_static: InputIDs, AttentionMask).
const (
	TokenTypeIDs = "token_type_ids"
	Embeddings   = "embeddings"
	Scores       = "scores"
)

// EncodeOutput says what an hf_encode program returns per sequence.
type EncodeOutput string

// Encode outputs.
const (
	// OutputEmbedding: the embeddings output, [B, dim] vectors (a bi-encoder: BERT,
	// XLM-RoBERTa, Qwen3-Embedding).
	OutputEmbedding EncodeOutput = "embedding"
	// OutputScore: the scores output, [B, dim] logits of a classifier read on the whole
	// sequence (a cross-encoder: a query and a document in one sequence; dim 1 for
	// rerankers).
	OutputScore EncodeOutput = "score"
)

// Encoder is the metadata of an hf_encode program: the shape of its encode method and what
// front ends need to turn text into its inputs and its outputs into answers.
type Encoder struct {
	// Batch is B, the sequences one call takes (≥ 1). Every sequence holds at most
	// Metadata.MaxContext tokens.
	Batch int `json:"batch"`
	// Output says which output the method has and what its rows mean.
	Output EncodeOutput `json:"output"`
	// Dim is the width of an output row: the embedding size, or the number of scores.
	Dim int `json:"dim"`
	// TokenTypes is how many token types the model embeds (BERT's type_vocab_size): the
	// method then takes token_type_ids with values in [0, TokenTypes). 0: no such input.
	TokenTypes int `json:"token_types,omitempty"`
	// Pooling names how a sequence's rows become one (cls, mean, max, last), for `inspect`:
	// the ops do it.
	Pooling string `json:"pooling,omitempty"`
	// Normalized: every embedding has Euclidean norm 1 (cosine similarity is a dot product).
	Normalized bool `json:"normalized,omitempty"`
	// Matryoshka: the model was trained so that the first d values of an embedding, renormalized,
	// are an embedding too (Matryoshka representation learning); callers may ask for fewer
	// dimensions. MatryoshkaDimensions, if set, lists the only sizes allowed.
	Matryoshka           bool  `json:"matryoshka,omitempty"`
	MatryoshkaDimensions []int `json:"matryoshka_dimensions,omitempty"`
	// Prompts are texts put before an input, by name (sentence-transformers'
	// config_sentence_transformers.json: Qwen3-Embedding's "query" instruction);
	// DefaultPrompt names the one used when a caller names none ("" for none).
	Prompts       map[string]string `json:"prompts,omitempty"`
	DefaultPrompt string            `json:"default_prompt,omitempty"`
	// Pair says how a score program reads a query and a document; nil for embeddings.
	Pair *PairFormat `json:"pair,omitempty"`
	// Relevance says how a score becomes a relevance in [0, 1]: RelevanceSigmoid, or "" when
	// the score is used as it is.
	Relevance string `json:"relevance,omitempty"`
}

// RelevanceSigmoid: relevance = 1 / (1 + e^-score). For a single-logit cross-encoder it is
// the probability sentence-transformers and vLLM report; for Qwen3-Reranker, whose score
// is logit(yes) - logit(no), it is softmax([no, yes])[yes], as its model card computes it.
const RelevanceSigmoid = "sigmoid"

// PairFormat says how a (query, document) pair becomes one sequence.
type PairFormat struct {
	// Kind is PairTokenizer or PairTemplate.
	Kind string `json:"kind"`
	// Prefix, Body and Suffix (PairTemplate) are tokenized separately, without special
	// tokens added, and concatenated; Body holds {instruction}, {query} and {document}, and
	// only its tokens are truncated. Instruction is the default instruction.
	Prefix      string `json:"prefix,omitempty"`
	Body        string `json:"body,omitempty"`
	Suffix      string `json:"suffix,omitempty"`
	Instruction string `json:"instruction,omitempty"`
}

// Pair formats.
const (
	// PairTokenizer: the tokenizer's pair template (tokenizer.json's post_processor:
	// [CLS] query [SEP] document [SEP] for BERT, with token type 1 on the document's part;
	// <s> query </s></s> document </s> for XLM-RoBERTa).
	PairTokenizer = "tokenizer"
	// PairTemplate: a text template around the pair (Qwen3-Reranker's chat prompt).
	PairTemplate = "template"
)

// EncodeIO returns the inputs and outputs the hf_encode contract requires of the encode
// method of a program with metadata md (MaxContext S, Encoder B, Dim, TokenTypes):
//
//	inputs:  input_ids i64 [B, S], attention_mask bool [B, S],
//	         token_type_ids i64 [B, S] (only when TokenTypes > 0)
//	outputs: embeddings f32 [B, dim] (output embedding) or scores f32 [B, dim] (output score)
func EncodeIO(md *Metadata) (inputs, outputs []IO, err error) {
	e := md.Encoder
	if e == nil {
		return nil, nil, fmt.Errorf("no encoder metadata")
	}
	B, S := e.Batch, md.MaxContext
	inputs = []IO{
		{Name: InputIDs, DType: I64, Shape: Shape{B, S}},
		{Name: AttentionMask, DType: Bool, Shape: Shape{B, S}},
	}
	if e.TokenTypes > 0 {
		inputs = append(inputs, IO{Name: TokenTypeIDs, DType: I64, Shape: Shape{B, S}})
	}
	name, err := e.OutputName()
	if err != nil {
		return nil, nil, err
	}
	return inputs, []IO{{Name: name, DType: F32, Shape: Shape{B, e.Dim}}}, nil
}

// OutputName is the name of the encode method's output: Embeddings or Scores.
func (e *Encoder) OutputName() (string, error) {
	switch e.Output {
	case OutputEmbedding:
		return Embeddings, nil
	case OutputScore:
		return Scores, nil
	}
	return "", fmt.Errorf("encoder output %q is not %q or %q", e.Output, OutputEmbedding, OutputScore)
}
