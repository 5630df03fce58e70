// Package encode turns texts into the inputs of an embedding or reranking program (the
// hf_encode contract, docs/contract.md section 10) and its rows into answers: embeddings,
// truncated to fewer dimensions where the model allows it, and documents ranked by
// relevance to a query. It owns prompts (sentence-transformers' instructions), pair formats
// (a cross-encoder's [CLS] query [SEP] document [SEP], Qwen3-Reranker's chat template),
// truncation, and the typed errors of bad input.
//
// It does not run programs (runner.Encoder does) or read files: a Model is built from a
// loaded program's Encoder and tokenizer.
package encode

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// Errors of bad input, wrapped in an *InputError where one input is at fault; nothing runs
// when one is returned. runner's ErrTokenOutOfRange and ErrTokenType can come wrapped too
// (token ids given by the caller).
var (
	// ErrNoInputs: no texts, or no documents.
	ErrNoInputs = errors.New("no inputs")
	// ErrEmptyInput: an empty text (or token list).
	ErrEmptyInput = errors.New("empty input")
	// ErrTooLong: an input has more tokens than the program takes, and truncation was not asked.
	ErrTooLong = errors.New("input longer than the model's maximum")
	// ErrNotEmbedding: embeddings asked of a program that scores pairs, and ErrNotReranker
	// the reverse.
	ErrNotEmbedding = errors.New("the model scores query and document pairs; it does not embed texts")
	ErrNotReranker  = errors.New("the model embeds texts; it does not score query and document pairs")
	// ErrDimensions: Dimensions the model cannot give.
	ErrDimensions = errors.New("dimensions not supported")
	// ErrPrompt: a PromptName the model does not have.
	ErrPrompt = errors.New("unknown prompt")
	// ErrTokenizer: text input to a program whose tokenizer hfstatic cannot read (send token ids).
	ErrTokenizer = errors.New("no tokenizer for text inputs")
	// ErrOption: another option out of range (a negative TopN).
	ErrOption = errors.New("invalid option")
)

// InputError reports the input Index (of the texts, token lists or documents; -1 for a
// reranking query) that was refused; Err is one of the errors above.
type InputError struct {
	Index   int
	Err     error
	Problem string
}

func (e *InputError) Error() string {
	if e.Index < 0 {
		return "query: " + e.Problem
	}
	return fmt.Sprintf("input %d: %s", e.Index, e.Problem)
}

func (e *InputError) Unwrap() error { return e.Err }

// Model answers embedding and reranking requests with an hf_encode program. It is safe for
// concurrent use (the Encoder runs one call at a time).
type Model struct {
	enc    *runner.Encoder
	md     program.Metadata
	e      *program.Encoder
	tok    *tokenizer.Tokenizer
	tokErr error // why tok is nil
}

// New returns a Model for an Encoder and the program's tokenizer tok, or tokErr, why there
// is none (the Model then takes token ids only). Texts go through tok as Hugging Face's
// tokenizers library encodes them for these models: EncodeSequence (the post-processor's
// special tokens, truncation from the end) and, for a cross-encoder, EncodePair (its pair
// template with token types, longest_first truncation).
func New(enc *runner.Encoder, tok *tokenizer.Tokenizer, tokErr error) (*Model, error) {
	if enc == nil {
		return nil, errors.New("encode: nil Encoder")
	}
	md := enc.Metadata()
	m := &Model{enc: enc, md: md, e: md.Encoder, tok: tok, tokErr: tokErr}
	if tok == nil && tokErr == nil {
		m.tokErr = errors.New("the program carries no tokenizer")
	}
	return m, nil
}

// Metadata is the program's encoder metadata.
func (m *Model) Metadata() program.Encoder { return *m.e }

// MaxTokens is the most tokens one input may have.
func (m *Model) MaxTokens() int { return m.md.MaxContext }

// Embeds reports whether the program returns embeddings (else relevance scores).
func (m *Model) Embeds() bool { return m.e.Output == program.OutputEmbedding }

// EmbedOptions configure Embed and EmbedTokens.
type EmbedOptions struct {
	// Prompt is put before every text (Embed only); PromptName names one of the model's
	// prompts instead (Metadata().Prompts: Qwen3-Embedding's "query"). Neither: the model's
	// default prompt, if it has one.
	Prompt, PromptName string
	// Truncate cuts a text longer than the model takes to its first tokens (special tokens
	// kept) instead of refusing it with ErrTooLong.
	Truncate bool
	// Dimensions, if > 0, keeps the first Dimensions values of each embedding (renormalized
	// when the model's are): only for Matryoshka models.
	Dimensions int
}

// Embeddings is the answer of Embed: one vector per input, and the tokens they took.
type Embeddings struct {
	Vectors [][]float32
	Tokens  int
}

// Embed returns the embeddings of texts.
func (m *Model) Embed(ctx context.Context, texts []string, opts EmbedOptions) (*Embeddings, error) {
	if err := m.checkEmbed(len(texts), opts); err != nil {
		return nil, err
	}
	prompt, err := m.prompt(opts)
	if err != nil {
		return nil, err
	}
	seqs := make([]runner.Sequence, len(texts))
	for i, text := range texts {
		if text == "" {
			return nil, &InputError{Index: i, Err: ErrEmptyInput, Problem: "empty text"}
		}
		s, err := m.single(i, prompt+text, opts.Truncate)
		if err != nil {
			return nil, err
		}
		seqs[i] = s
	}
	return m.embed(ctx, seqs, opts)
}

// EmbedTokens returns the embeddings of token id lists, taken as they are (no prompt, no
// special tokens added).
func (m *Model) EmbedTokens(ctx context.Context, inputs [][]int, opts EmbedOptions) (*Embeddings, error) {
	if err := m.checkEmbed(len(inputs), opts); err != nil {
		return nil, err
	}
	if opts.Prompt != "" || opts.PromptName != "" {
		return nil, fmt.Errorf("%w: prompts apply to texts, not token ids", ErrPrompt)
	}
	seqs := make([]runner.Sequence, len(inputs))
	for i, ids := range inputs {
		if len(ids) == 0 {
			return nil, &InputError{Index: i, Err: ErrEmptyInput, Problem: "no tokens"}
		}
		if len(ids) > m.md.MaxContext {
			if !opts.Truncate {
				return nil, m.tooLong(i, len(ids))
			}
			ids = ids[:m.md.MaxContext]
		}
		seqs[i] = runner.Sequence{IDs: ids}
	}
	return m.embed(ctx, seqs, opts)
}

func (m *Model) checkEmbed(n int, opts EmbedOptions) error {
	switch {
	case !m.Embeds():
		return ErrNotEmbedding
	case n == 0:
		return ErrNoInputs
	case opts.Dimensions < 0 || opts.Dimensions > m.e.Dim:
		return fmt.Errorf("%w: dimensions %d: the model's embeddings have %d", ErrDimensions, opts.Dimensions, m.e.Dim)
	case opts.Dimensions > 0 && opts.Dimensions < m.e.Dim && !m.e.Matryoshka:
		return fmt.Errorf("%w: dimensions %d: the model was not trained to give shorter embeddings than %d (Matryoshka); ask for all of them", ErrDimensions, opts.Dimensions, m.e.Dim)
	case opts.Dimensions > 0 && len(m.e.MatryoshkaDimensions) > 0 && !slices.Contains(m.e.MatryoshkaDimensions, opts.Dimensions) && opts.Dimensions != m.e.Dim:
		return fmt.Errorf("%w: dimensions %d: the model gives %v", ErrDimensions, opts.Dimensions, m.e.MatryoshkaDimensions)
	}
	return nil
}

func (m *Model) prompt(opts EmbedOptions) (string, error) {
	switch {
	case opts.Prompt != "" && opts.PromptName != "":
		return "", fmt.Errorf("%w: give a prompt or a prompt name, not both", ErrPrompt)
	case opts.Prompt != "":
		return opts.Prompt, nil
	case opts.PromptName != "":
		p, ok := m.e.Prompts[opts.PromptName]
		if !ok {
			names := make([]string, 0, len(m.e.Prompts))
			for n := range m.e.Prompts {
				names = append(names, n)
			}
			slices.Sort(names)
			return "", fmt.Errorf("%w %q: the model's prompts are %v", ErrPrompt, opts.PromptName, names)
		}
		return p, nil
	}
	return m.e.Prompts[m.e.DefaultPrompt], nil
}

func (m *Model) embed(ctx context.Context, seqs []runner.Sequence, opts EmbedOptions) (*Embeddings, error) {
	rows, err := m.enc.Encode(ctx, seqs)
	if err != nil {
		return nil, m.inputError(err)
	}
	res := &Embeddings{Vectors: rows}
	for _, s := range seqs {
		res.Tokens += len(s.IDs)
	}
	if d := opts.Dimensions; d > 0 && d < m.e.Dim {
		for i, v := range rows {
			v = v[:d:d]
			if m.e.Normalized {
				var sq float64
				for _, x := range v {
					sq += float64(x) * float64(x)
				}
				n := float32(max(math.Sqrt(sq), 1e-12))
				for j := range v {
					v[j] /= n
				}
			}
			rows[i] = v
		}
	}
	return res, nil
}

// inputError turns the runner's refusal of a sequence into an *InputError of the same
// index.
func (m *Model) inputError(err error) error {
	var se *runner.SequenceError
	if errors.As(err, &se) {
		return &InputError{Index: se.Index, Err: se.Err, Problem: se.Problem}
	}
	if errors.Is(err, runner.ErrNoSequences) {
		return ErrNoInputs
	}
	return err
}

func (m *Model) tooLong(i, n int) error {
	return &InputError{Index: i, Err: ErrTooLong, Problem: fmt.Sprintf("%d tokens, the model takes at most %d (truncate to cut longer inputs)", n, m.md.MaxContext)}
}

func (m *Model) tokenizer() (*tokenizer.Tokenizer, error) {
	if m.tok == nil {
		return nil, fmt.Errorf("%w: %v; send token ids instead of text", ErrTokenizer, m.tokErr)
	}
	return m.tok, nil
}

// single tokenizes one text with its special tokens and token types. Longer than the
// program takes, it is refused, or with truncate cut to its first tokens, the special tokens
// kept (the tokenizers library's truncation, as sentence-transformers asks for it).
func (m *Model) single(i int, text string, truncate bool) (runner.Sequence, error) {
	tok, err := m.tokenizer()
	if err != nil {
		return runner.Sequence{}, err
	}
	S := m.md.MaxContext
	encode := tok.EncodeSequence
	if !truncate {
		encode = tok.EncodeSequenceLimit // a long text is refused before all of it is encoded
	}
	enc, err := encode(text, S)
	if err != nil {
		return runner.Sequence{}, m.encodeError(i, err, S)
	}
	return m.sequence(enc), nil
}

// sequence is an encoding as the program takes it: token types only where the program
// has them.
func (m *Model) sequence(enc tokenizer.Encoding) runner.Sequence {
	s := runner.Sequence{IDs: enc.IDs}
	if m.e.TokenTypes > 0 {
		s.Types = enc.TypeIDs
	}
	return s
}

// encodeError is the tokenizer's refusal of input i as an *InputError.
func (m *Model) encodeError(i int, err error, S int) error {
	if errors.Is(err, tokenizer.ErrTooLong) {
		return &InputError{Index: i, Err: ErrTooLong, Problem: fmt.Sprintf("more than %d tokens, the most the model takes (truncate to cut longer inputs)", S)}
	}
	if errors.Is(err, tokenizer.ErrTooShort) {
		return &InputError{Index: i, Err: ErrTooLong, Problem: fmt.Sprintf("the model's special tokens leave no room in %d tokens", S)}
	}
	return &InputError{Index: i, Err: ErrTokenizer, Problem: err.Error()}
}

// RerankOptions configure Rerank.
type RerankOptions struct {
	// Instruction replaces a template reranker's default instruction (Qwen3-Reranker's
	// "Given a web search query, retrieve relevant passages that answer the query").
	Instruction string
	// Truncate cuts a pair longer than the model takes (the longer of query and document
	// first, as the tokenizers library's longest_first; a template's body from its end)
	// instead of refusing it with ErrTooLong.
	Truncate bool
	// TopN, if > 0, keeps the TopN most relevant documents.
	TopN int
}

// Ranked is one document's place in a ranking.
type Ranked struct {
	Index int // of the document in the request
	// Relevance is the model's relevance of the document to the query: a probability for
	// rerankers whose score is a logit (Metadata().Relevance "sigmoid"), else the score.
	Relevance float64
	// Score is the program's raw score (the classifier's logit).
	Score float32
}

// Ranking is the answer of Rerank: documents most relevant first, and the tokens they took.
type Ranking struct {
	Results []Ranked
	Tokens  int
}

// Rerank scores every document against the query and returns them most relevant first
// (ties in document order).
func (m *Model) Rerank(ctx context.Context, query string, docs []string, opts RerankOptions) (*Ranking, error) {
	switch {
	case m.Embeds():
		return nil, ErrNotReranker
	case m.e.Dim != 1:
		return nil, fmt.Errorf("%w: the model returns %d scores per pair (a classifier), not one relevance", ErrNotReranker, m.e.Dim)
	case query == "":
		return nil, &InputError{Index: -1, Err: ErrEmptyInput, Problem: "empty query"}
	case len(docs) == 0:
		return nil, ErrNoInputs
	case opts.TopN < 0:
		return nil, fmt.Errorf("%w: top_n %d must be ≥ 0", ErrOption, opts.TopN)
	}
	seqs := make([]runner.Sequence, len(docs))
	for i, d := range docs {
		if d == "" {
			return nil, &InputError{Index: i, Err: ErrEmptyInput, Problem: "empty document"}
		}
		s, err := m.pairSequence(i, query, d, opts)
		if err != nil {
			return nil, err
		}
		seqs[i] = s
	}
	rows, err := m.enc.Encode(ctx, seqs)
	if err != nil {
		return nil, m.inputError(err)
	}
	r := &Ranking{Results: make([]Ranked, len(rows))}
	for i, row := range rows {
		rel := float64(row[0])
		if m.e.Relevance == program.RelevanceSigmoid {
			rel = 1 / (1 + math.Exp(-rel))
		}
		r.Results[i] = Ranked{Index: i, Relevance: rel, Score: row[0]}
		r.Tokens += len(seqs[i].IDs)
	}
	slices.SortStableFunc(r.Results, func(a, b Ranked) int {
		switch {
		case a.Relevance > b.Relevance:
			return -1
		case a.Relevance < b.Relevance:
			return 1
		}
		return 0
	})
	if opts.TopN > 0 && opts.TopN < len(r.Results) {
		r.Results = r.Results[:opts.TopN]
	}
	return r, nil
}

// pairSequence makes the sequence of document i with the query.
func (m *Model) pairSequence(i int, query, doc string, opts RerankOptions) (runner.Sequence, error) {
	tok, err := m.tokenizer()
	if err != nil {
		return runner.Sequence{}, err
	}
	S := m.md.MaxContext
	p := m.e.Pair
	if p == nil {
		return runner.Sequence{}, fmt.Errorf("%w: the program does not say how it reads a query and a document", ErrNotReranker)
	}
	encode := func(text string, special bool) ([]int, error) {
		ids, err := tok.Encode(text, special)
		if err != nil {
			return nil, &InputError{Index: i, Err: ErrTokenizer, Problem: err.Error()}
		}
		return ids, nil
	}
	if p.Kind == program.PairTemplate {
		instr := opts.Instruction
		if instr == "" {
			instr = p.Instruction
		}
		body := strings.NewReplacer("{instruction}", instr, "{query}", query, "{document}", doc).Replace(p.Body)
		pre, err := encode(p.Prefix, false)
		if err != nil {
			return runner.Sequence{}, err
		}
		suf, err := encode(p.Suffix, false)
		if err != nil {
			return runner.Sequence{}, err
		}
		var ids []int
		if opts.Truncate {
			ids, err = encode(body, true)
		} else if ids, err = tok.EncodeLimit(body, true, max(S-len(pre)-len(suf), 0)); err != nil {
			// A long pair is refused before all of it is encoded.
			return runner.Sequence{}, m.encodeError(i, err, S)
		}
		if err != nil {
			return runner.Sequence{}, err
		}
		if n := len(pre) + len(ids) + len(suf); n > S {
			keep := S - len(pre) - len(suf)
			if !opts.Truncate || keep < 1 {
				return runner.Sequence{}, m.tooLong(i, n)
			}
			ids = ids[:keep]
		}
		return runner.Sequence{IDs: append(append(pre, ids...), suf...)}, nil
	}
	encodePair := tok.EncodePair
	if !opts.Truncate {
		encodePair = tok.EncodePairLimit // a long pair is refused before all of it is encoded
	}
	enc, err := encodePair(query, doc, S)
	if err != nil {
		return runner.Sequence{}, m.encodeError(i, err, S)
	}
	return m.sequence(enc), nil
}
