package encode

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/tokenizer"
)

func gunzip(t testing.TB, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// folder is fixture name with the given tokenizer files.
func folder(t testing.TB, name string, files map[string][]byte) fstest.MapFS {
	t.Helper()
	fsys, err := testckpt.Random(name)
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{}
	for k, v := range fsys {
		out[k] = v
	}
	for k, v := range files {
		out[k] = &fstest.MapFile{Data: v}
	}
	return out
}

func qwen3Tokenizer(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"tokenizer.json":        gunzip(t, "../tokenizer/testdata/qwen3.tokenizer.json.gz"),
		"tokenizer_config.json": gunzip(t, "../tokenizer/testdata/qwen3.tokenizer_config.json.gz"),
	}
}

// hfTokenizer is one of tokenizer/testdata's tokenizers (their vectors came from Hugging
// Face's tokenizers library).
func hfTokenizer(t testing.TB, name string) map[string][]byte {
	return map[string][]byte{"tokenizer.json": gunzip(t, "../tokenizer/testdata/"+name+".tokenizer.json.gz")}
}

// programs caches the exported test programs (a Qwen3 fixture takes seconds).
var programs = map[string][]byte{}

// open exports fixture name with opts and the tokenizer files and returns its Model.
func open(t testing.TB, name string, files map[string][]byte, opts export.Options) (*Model, *tokenizer.Tokenizer) {
	t.Helper()
	key := fmt.Sprintf("%s %+v", name, opts)
	data, ok := programs[key]
	if !ok {
		data = exporttest.Program(t, folder(t, name, files), opts)
		programs[key] = data
	}
	eng, err := engine.Load(data, engine.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	tok, err := eng.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(eng.Encoder, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, tok
}

func TestEmbedTextsAsTheirTokens(t *testing.T) {
	m, tok := open(t, "qwen3-embed", qwen3Tokenizer(t), export.Options{Context: 48})
	ctx := context.Background()
	texts := []string{"The cat sat on the mat.", "Ein Hund.", "雨"}
	got, err := m.Embed(ctx, texts, EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids [][]int
	tokens := 0
	for _, s := range texts {
		x, _ := tok.Encode(s, true)
		ids, tokens = append(ids, x), tokens+len(x)
	}
	want, err := m.EmbedTokens(ctx, ids, EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got.Vectors, want.Vectors, slices.Equal) || got.Tokens != tokens || want.Tokens != tokens {
		t.Errorf("Embed and EmbedTokens of the same tokens differ, or tokens %d/%d, want %d", got.Tokens, want.Tokens, tokens)
	}
	// The model's "query" prompt is put before the text.
	q, err := m.Embed(ctx, texts[:1], EmbedOptions{PromptName: "query"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Embed(ctx, []string{m.Metadata().Prompts["query"] + texts[0]}, EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q.Vectors[0], p.Vectors[0]) {
		t.Error("PromptName query differs from the prompt's text before the input")
	}
}

func TestEmbedTruncatesOnlyWhenAsked(t *testing.T) {
	m, tok := open(t, "qwen3-embed", qwen3Tokenizer(t), export.Options{Context: 16})
	ctx := context.Background()
	long := "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen"
	_, err := m.Embed(ctx, []string{"short", long}, EmbedOptions{})
	var ie *InputError
	if !errors.Is(err, ErrTooLong) || !errors.As(err, &ie) || ie.Index != 1 {
		t.Fatalf("error %v, want ErrTooLong for input 1", err)
	}
	got, err := m.Embed(ctx, []string{long}, EmbedOptions{Truncate: true})
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := tok.Encode(long, true)
	want, err := m.EmbedTokens(ctx, [][]int{ids[:16]}, EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Vectors[0], want.Vectors[0]) || got.Tokens != 16 {
		t.Errorf("truncated text differs from its first 16 tokens (%d tokens)", got.Tokens)
	}
}

func TestEmbedDimensionsOnlyForMatryoshkaModels(t *testing.T) {
	ctx := context.Background()
	plain, _ := open(t, "qwen3-embed", qwen3Tokenizer(t), export.Options{Context: 16})
	if _, err := plain.Embed(ctx, []string{"a"}, EmbedOptions{Dimensions: 16}); !errors.Is(err, ErrDimensions) {
		t.Errorf("dimensions of a model without Matryoshka: %v, want ErrDimensions", err)
	}
	m, _ := open(t, "qwen3-embed", qwen3Tokenizer(t), export.Options{Context: 16, Matryoshka: true})
	full, err := m.Embed(ctx, []string{"a cat"}, EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	short, err := m.Embed(ctx, []string{"a cat"}, EmbedOptions{Dimensions: 16})
	if err != nil {
		t.Fatal(err)
	}
	v, w := short.Vectors[0], full.Vectors[0][:16]
	var norm, wn float64
	for i := range v {
		norm += float64(v[i]) * float64(v[i])
		wn += float64(w[i]) * float64(w[i])
	}
	if len(v) != 16 || math.Abs(norm-1) > 1e-6 || math.Abs(float64(v[3])-float64(w[3])/math.Sqrt(wn)) > 1e-6 {
		t.Errorf("16 dimensions: %d values of norm %g, not the first 16 renormalized", len(v), norm)
	}
	for _, d := range []int{-1, 65} {
		if _, err := m.Embed(ctx, []string{"a"}, EmbedOptions{Dimensions: d}); !errors.Is(err, ErrDimensions) {
			t.Errorf("dimensions %d: %v", d, err)
		}
	}
}

func TestBadInputsAreTypedErrors(t *testing.T) {
	m, _ := open(t, "qwen3-embed", qwen3Tokenizer(t), export.Options{Context: 16})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		is   error
		idx  int
	}{
		{"no texts", func() error { _, err := m.Embed(ctx, nil, EmbedOptions{}); return err }, ErrNoInputs, -2},
		{"empty text", func() error { _, err := m.Embed(ctx, []string{"a", ""}, EmbedOptions{}); return err }, ErrEmptyInput, 1},
		{"unknown prompt", func() error { _, err := m.Embed(ctx, []string{"a"}, EmbedOptions{PromptName: "passage"}); return err }, ErrPrompt, -2},
		{"empty token list", func() error { _, err := m.EmbedTokens(ctx, [][]int{{1}, {}}, EmbedOptions{}); return err }, ErrEmptyInput, 1},
		{"token id out of range", func() error { _, err := m.EmbedTokens(ctx, [][]int{{1}, {151936}}, EmbedOptions{}); return err }, runner.ErrTokenOutOfRange, 1},
		{"too many tokens", func() error { _, err := m.EmbedTokens(ctx, [][]int{make([]int, 17)}, EmbedOptions{}); return err }, ErrTooLong, 0},
		{"rerank of an embedding model", func() error { _, err := m.Rerank(ctx, "q", []string{"d"}, RerankOptions{}); return err }, ErrNotReranker, -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v, want %v", err, tc.is)
			}
			var ie *InputError
			if tc.idx >= 0 && (!errors.As(err, &ie) || ie.Index != tc.idx) {
				t.Errorf("error %v does not name input %d", err, tc.idx)
			}
		})
	}
}

func TestRerankWithQwen3RerankersTemplate(t *testing.T) {
	m, tok := open(t, "qwen3-rerank", qwen3Tokenizer(t), export.Options{Context: 128})
	ctx := context.Background()
	docs := []string{"Paris is the capital of France.", "Bananas are yellow.", "The Eiffel tower is in Paris."}
	r, err := m.Rerank(ctx, "What is the capital of France?", docs, RerankOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 3 || r.Results[0].Relevance < r.Results[1].Relevance || r.Results[1].Relevance < r.Results[2].Relevance {
		t.Fatalf("results not sorted by relevance: %+v", r.Results)
	}
	p := m.Metadata().Pair
	for _, res := range r.Results {
		pre, _ := tok.Encode(p.Prefix, false)
		body, _ := tok.Encode("<Instruct>: "+p.Instruction+"\n<Query>: What is the capital of France?\n<Document>: "+docs[res.Index], true)
		suf, _ := tok.Encode(p.Suffix, false)
		rows, err := m.enc.Encode(ctx, []runner.Sequence{{IDs: append(append(pre, body...), suf...)}})
		if err != nil {
			t.Fatal(err)
		}
		if rows[0][0] != res.Score || math.Abs(res.Relevance-1/(1+math.Exp(-float64(res.Score)))) > 1e-12 {
			t.Errorf("document %d: score %g, relevance %g; the model card's prompt gives %g", res.Index, res.Score, res.Relevance, rows[0][0])
		}
	}
	top, err := m.Rerank(ctx, "What is the capital of France?", docs, RerankOptions{TopN: 1})
	if err != nil || len(top.Results) != 1 || top.Results[0] != r.Results[0] {
		t.Errorf("top_n 1: %+v, %v", top, err)
	}
	if _, err := m.Embed(ctx, []string{"x"}, EmbedOptions{}); !errors.Is(err, ErrNotEmbedding) {
		t.Errorf("Embed of a reranker: %v, want ErrNotEmbedding", err)
	}
	if _, err := m.Rerank(ctx, "", docs, RerankOptions{}); !errors.Is(err, ErrEmptyInput) {
		t.Errorf("empty query: %v", err)
	}
}

// A cross-encoder takes [CLS] query [SEP] document [SEP] with token types 0 then 1, cut
// longest_first when asked, exactly as the tokenizers library encodes the pair.
func TestRerankWithBertsPairTemplate(t *testing.T) {
	m, _ := open(t, "bert-rerank", hfTokenizer(t, "bert-uncased"), export.Options{Context: 16})
	ctx := context.Background()
	query, doc := "what is the capital of france", "Paris is the capital and most populous city of France."
	// tokenizer/testdata/bert-uncased.jsonl.gz: this pair truncated to 16 by the library.
	ids := []int{101, 2054, 2003, 1996, 3007, 1997, 2605, 102, 3000, 2003, 1996, 3007, 1998, 2087, 20151, 102}
	types := []int{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}
	r, err := m.Rerank(ctx, query, []string{doc, "Tom"}, RerankOptions{Truncate: true})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := m.enc.Encode(ctx, []runner.Sequence{{IDs: ids, Types: types}})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range r.Results {
		if res.Index == 0 && res.Score != rows[0][0] {
			t.Errorf("truncated pair scores %g, the library's [CLS] q [SEP] d [SEP] with types 0/1 scores %g", res.Score, rows[0][0])
		}
	}
	if r.Tokens != 16+10 {
		t.Errorf("%d tokens, want 16 + 10 ([CLS], the query's 6, [SEP] tom [SEP])", r.Tokens)
	}
	if _, err := m.Rerank(ctx, query, []string{doc}, RerankOptions{}); !errors.Is(err, ErrTooLong) {
		t.Errorf("a long pair without truncation: %v, want ErrTooLong", err)
	}
}

// A text or pair far longer than the program takes is refused, unless truncation is
// asked, without being encoded whole where the tokenizer can stop early (BPE: Qwen3's
// 5 MB of words refused in milliseconds where encoding them takes a few hundred; WordPiece
// and Unigram still normalize and split the whole text first, docs/limits.md).
func TestLongInputsAreRefusedEarly(t *testing.T) {
	ctx := context.Background()
	huge := strings.Repeat("word ", 1<<20) // a million tokens
	var ie *InputError
	m, _ := open(t, "bert", hfTokenizer(t, "bert-uncased"), export.Options{Context: 48})
	if _, err := m.Embed(ctx, []string{"a", huge}, EmbedOptions{}); !errors.Is(err, ErrTooLong) || !errors.As(err, &ie) || ie.Index != 1 {
		t.Errorf("a text of a million tokens: %v, want ErrTooLong for input 1", err)
	}
	r, _ := open(t, "bert-rerank", hfTokenizer(t, "bert-uncased"), export.Options{Context: 33})
	if _, err := r.Rerank(ctx, "query", []string{"doc", huge}, RerankOptions{}); !errors.Is(err, ErrTooLong) || !errors.As(err, &ie) || ie.Index != 1 {
		t.Errorf("a document of a million tokens: %v, want ErrTooLong for document 1", err)
	}
	q, _ := open(t, "qwen3-embed", qwen3Tokenizer(t), export.Options{Context: 16})
	start := time.Now()
	if _, err := q.Embed(ctx, []string{huge}, EmbedOptions{}); !errors.Is(err, ErrTooLong) {
		t.Errorf("Qwen3: a text of a million tokens: %v, want ErrTooLong", err)
	}
	refused := time.Since(start)
	start = time.Now()
	if _, err := q.Embed(ctx, []string{huge}, EmbedOptions{Truncate: true}); err != nil {
		t.Fatal(err)
	}
	whole := time.Since(start)
	t.Logf("Qwen3: refused in %v; truncating (which encodes it whole, as the tokenizers library does) took %v", refused, whole)
	if refused > whole/5 {
		t.Errorf("refusing took %v, more than a fifth of encoding the whole text (%v)", refused, whole)
	}
}
