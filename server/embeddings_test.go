//go:build !fuzzonly

package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/openai/openai-go/v3"

	"github.com/hfstatic/hfstatic/encode"
	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
)

// encodeModels are the embedding and reranking test models (random Qwen3-Embedding and
// Qwen3-Reranker checkpoints with Qwen3's tokenizer), built once per test binary.
var encodeModels struct {
	sync.Mutex
	byName map[string]*encode.Model
}

func encodeModel(t testing.TB, fixture string) *encode.Model {
	t.Helper()
	encodeModels.Lock()
	defer encodeModels.Unlock()
	if m, ok := encodeModels.byName[fixture]; ok {
		return m
	}
	fsys, err := testckpt.Random(fixture)
	if err != nil {
		t.Fatal(err)
	}
	folder := fstest.MapFS{}
	for k, v := range fsys {
		folder[k] = v
	}
	tokName := "qwen3" // BERT and XLM-RoBERTa fixtures take tokenizer/testdata's encoder tokenizers
	if strings.HasPrefix(fixture, "bert") {
		tokName = "bert-uncased"
	} else if strings.HasPrefix(fixture, "xlmr") {
		tokName = "xlmr"
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		gz, err := os.ReadFile("../tokenizer/testdata/" + tokName + "." + f + ".gz")
		if errors.Is(err, os.ErrNotExist) && tokName != "qwen3" && f == "tokenizer_config.json" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		folder[f] = &fstest.MapFile{Data: b}
	}
	opts := export.Options{Context: 64, Batch: 4, Matryoshka: true}
	if fixture == "qwen3-rerank" {
		opts = export.Options{Context: 256, Batch: 4} // Qwen3-Reranker's prompt takes 70 tokens
	} else if strings.HasSuffix(fixture, "-rerank") {
		opts = export.Options{Context: 64, Batch: 4}
	}
	data := exporttest.Program(t, folder, opts)
	eng, err := engine.Load(data, engine.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := eng.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	m, err := encode.New(eng.Encoder, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	if encodeModels.byName == nil {
		encodeModels.byName = map[string]*encode.Model{}
	}
	encodeModels.byName[fixture] = m
	return m
}

// startEncodeServer serves an embedding or reranking fixture alone.
func startEncodeServer(t testing.TB, fixture string, edit func(*Options)) (*Server, string) {
	t.Helper()
	o := Options{Encoder: encodeModel(t, fixture), ModelID: fixture, MaxBodyBytes: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if edit != nil {
		edit(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close() })
	return s, hs.URL
}

func TestOpenAIClientEmbeddings(t *testing.T) {
	s, base := startEncodeServer(t, "qwen3-embed", nil)
	client := newClient(base)
	ctx := context.Background()
	texts := []string{"The cat sat on the mat.", "A dog.", "雨が降っている"}
	want, err := s.o.Encoder.Embed(ctx, texts, encode.EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{"", openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
		resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "qwen3-embed", EncodingFormat: format,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}})
		if err != nil {
			t.Fatalf("format %q: %v", format, err)
		}
		if len(resp.Data) != 3 || resp.Usage.PromptTokens != int64(want.Tokens) || resp.Usage.TotalTokens != int64(want.Tokens) {
			t.Fatalf("format %q: %d embeddings, usage %+v; want 3, %d tokens", format, len(resp.Data), resp.Usage, want.Tokens)
		}
		for i, d := range resp.Data {
			if d.Index != int64(i) || len(d.Embedding) != 64 {
				t.Fatalf("embedding %d: index %d, %d values", i, d.Index, len(d.Embedding))
			}
			for j, v := range d.Embedding {
				if float32(v) != want.Vectors[i][j] {
					t.Fatalf("format %q: embedding %d value %d = %v, the model's %v", format, i, j, v, want.Vectors[i][j])
				}
			}
		}
	}
	// Fewer dimensions, renormalized (the program is exported as a Matryoshka model).
	resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "qwen3-embed", Dimensions: openai.Int(16),
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(texts[0])}})
	if err != nil {
		t.Fatal(err)
	}
	var norm float64
	for _, v := range resp.Data[0].Embedding {
		norm += v * v
	}
	if len(resp.Data[0].Embedding) != 16 || math.Abs(norm-1) > 1e-5 {
		t.Errorf("16 dimensions: %d values, norm² %g", len(resp.Data[0].Embedding), norm)
	}
	// Token arrays.
	ids, _ := s.o.Encoder.EmbedTokens(ctx, [][]int{{1, 2, 3}}, encode.EmbedOptions{})
	resp, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "qwen3-embed",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{1, 2, 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	if float32(resp.Data[0].Embedding[5]) != ids.Vectors[0][5] || resp.Usage.PromptTokens != 3 {
		t.Errorf("token array: %v, usage %+v", resp.Data[0].Embedding[:6], resp.Usage)
	}
}

// The official client's embeddings.create and a rerank request with texts, on a BERT
// embedding model and a BERT cross-encoder: the vectors and scores of encode/testdata's
// float64 reference, computed on the ids Hugging Face's tokenizers gave the same texts.
func TestBERTTextsOverHTTPMatchTheReference(t *testing.T) {
	type reference struct {
		Inputs []struct {
			Text     string `json:"text"`
			B        string `json:"b"`
			Truncate bool   `json:"truncate"`
		} `json:"inputs"`
		Outputs [][]float64 `json:"outputs"`
	}
	read := func(name string) reference {
		var r reference
		raw, err := os.ReadFile("../encode/testdata/" + name + ".text64.json")
		if err == nil {
			err = json.Unmarshal(raw, &r)
		}
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ctx := context.Background()
	ref := read("bert")
	_, base := startEncodeServer(t, "bert", nil)
	var texts []string
	var want [][]float64
	for i, in := range ref.Inputs {
		if !in.Truncate {
			texts, want = append(texts, in.Text), append(want, ref.Outputs[i])
		}
	}
	client := newClient(base)
	resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "bert",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != len(texts) {
		t.Fatalf("%d embeddings for %d texts", len(resp.Data), len(texts))
	}
	for i, d := range resp.Data {
		for j, v := range d.Embedding {
			if math.Abs(v-want[i][j]) > 1e-4 {
				t.Fatalf("text %q value %d: %g, the reference %g", texts[i], j, v, want[i][j])
			}
		}
	}

	rref := read("bert-rerank")
	_, rbase := startEncodeServer(t, "bert-rerank", nil)
	for i, in := range rref.Inputs {
		if in.Truncate {
			continue
		}
		body, _ := json.Marshal(map[string]any{"query": in.Text, "documents": []string{in.B}})
		code, _, out := post(t, rbase+"/v1/rerank", string(body))
		var r struct {
			Results []struct {
				Relevance float64 `json:"relevance_score"`
			} `json:"results"`
		}
		if code != http.StatusOK || json.Unmarshal(out, &r) != nil || len(r.Results) != 1 {
			t.Fatalf("rerank %q: %d %s", in.Text, code, out)
		}
		if want := 1 / (1 + math.Exp(-rref.Outputs[i][0])); math.Abs(r.Results[0].Relevance-want) > 1e-4 {
			t.Errorf("rerank %q: relevance %g, the reference's %g", in.Text, r.Results[0].Relevance, want)
		}
	}
}

func TestEmbeddingsBase64IsLittleEndianFloat32(t *testing.T) {
	s, base := startEncodeServer(t, "qwen3-embed", nil)
	code, _, body := post(t, base+"/v1/embeddings", `{"input": [17, 42], "encoding_format": "base64"}`)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var resp struct {
		Object string `json:"object"`
		Model  string `json:"model"`
		Data   []struct {
			Object    string `json:"object"`
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(resp.Data[0].Embedding)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := s.o.Encoder.EmbedTokens(context.Background(), [][]int{{17, 42}}, encode.EmbedOptions{})
	got := make([]float32, len(raw)/4)
	for i := range got {
		got[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	if !slices.Equal(got, want.Vectors[0]) || resp.Object != "list" || resp.Data[0].Object != "embedding" || resp.Model != "qwen3-embed" {
		t.Errorf("base64 decodes to %v…, want %v…; object %q/%q, model %q", got[:3], want.Vectors[0][:3], resp.Object, resp.Data[0].Object, resp.Model)
	}
}

func TestEmbeddingsBadInputIsA400(t *testing.T) {
	_, base := startEncodeServer(t, "qwen3-embed", func(o *Options) { o.MaxEmbedInputs = 3 })
	long := strings.Repeat("word ", 80)
	for _, tc := range []struct {
		name, body, param, code string
	}{
		{"no input", `{"model": "qwen3-embed"}`, "input", "missing_required_parameter"},
		{"empty list", `{"input": []}`, "input", "empty_input"},
		{"empty string", `{"input": ["a", ""]}`, "input[1]", "empty_input"},
		{"too many inputs", `{"input": ["a", "b", "c", "d"]}`, "input", "too_many_inputs"},
		{"token id out of range", `{"input": [[1, 2], [151936]]}`, "input[1]", "invalid_token"},
		{"negative token id", `{"input": [-1]}`, "input[0]", "invalid_token"},
		{"too long", `{"input": "` + long + `"}`, "input[0]", "input_too_long"},
		{"mixed input", `{"input": ["a", [1]]}`, "input", "invalid_type"},
		{"object input", `{"input": {"text": "a"}}`, "input", "invalid_type"},
		{"bad encoding", `{"input": "a", "encoding_format": "int8"}`, "encoding_format", "invalid_value"},
		{"too many dimensions", `{"input": "a", "dimensions": 65}`, "dimensions", "unsupported_value"},
		{"zero dimensions", `{"input": "a", "dimensions": 0}`, "dimensions", "invalid_value"},
		{"unknown prompt", `{"input": "a", "prompt_name": "passage"}`, "prompt_name", "invalid_value"},
		{"unknown field", `{"input": "a", "temperature": 1}`, "temperature", "unknown_parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := post(t, base+"/v1/embeddings", tc.body)
			var e errorBody
			json.Unmarshal(body, &e)
			if code != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != tc.param || e.Error.Code == nil || *e.Error.Code != tc.code {
				t.Errorf("status %d, body %s; want 400 on %s with code %s", code, body, tc.param, tc.code)
			}
		})
	}
	// Truncation when asked.
	if code, _, body := post(t, base+"/v1/embeddings", `{"input": "`+long+`", "truncate": true}`); code != http.StatusOK || !bytes.Contains(body, []byte(`"prompt_tokens":64`)) {
		t.Errorf("truncate: status %d, %s", code, body)
	}
	// The server still answers.
	if code, _, body := post(t, base+"/v1/embeddings", `{"input": "still here"}`); code != http.StatusOK {
		t.Errorf("after the bad requests: status %d, %s", code, body)
	}
}

func TestRerank(t *testing.T) {
	s, base := startEncodeServer(t, "qwen3-rerank", nil)
	docs := []string{"Paris is the capital of France.", "Bananas are yellow.", "Berlin."}
	want, err := s.o.Encoder.Rerank(context.Background(), "capital of France?", docs, encode.RerankOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/rerank", "/rerank", "/v2/rerank"} {
		code, _, body := post(t, base+path, map[string]any{"model": "qwen3-rerank", "query": "capital of France?",
			"documents": []any{docs[0], map[string]string{"text": docs[1]}, docs[2]}, "top_n": 2})
		if code != http.StatusOK {
			t.Fatalf("%s: status %d: %s", path, code, body)
		}
		var resp rerankResponse
		if err := json.Unmarshal(body, &resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) != 2 || resp.Usage.TotalTokens != want.Tokens || !strings.HasPrefix(resp.ID, "rerank-") {
			t.Fatalf("%s: %+v", path, resp)
		}
		for i, r := range resp.Results {
			if r.Index != want.Results[i].Index || r.RelevanceScore != want.Results[i].Relevance || r.Document == nil || r.Document.Text != docs[r.Index] {
				t.Errorf("%s: result %d %+v, want %+v", path, i, r, want.Results[i])
			}
		}
	}
	code, _, body := post(t, base+"/v1/rerank", `{"query": "q", "documents": ["a", "b"], "return_documents": false}`)
	if code != http.StatusOK || bytes.Contains(body, []byte(`"document"`)) {
		t.Errorf("return_documents false: %d %s", code, body)
	}
	for _, tc := range []struct{ name, body, param, code string }{
		{"no documents", `{"query": "q", "documents": []}`, "documents", "empty_input"},
		{"empty document", `{"query": "q", "documents": ["a", ""]}`, "documents[1]", "empty_input"},
		{"empty query", `{"query": "", "documents": ["a"]}`, "query", "empty_input"},
		{"bad document", `{"query": "q", "documents": [3]}`, "documents[0]", "invalid_type"},
		{"bad top_n", `{"query": "q", "documents": ["a"], "top_n": 0}`, "top_n", "invalid_value"},
	} {
		code, _, body := post(t, base+"/v1/rerank", tc.body)
		var e errorBody
		json.Unmarshal(body, &e)
		if code != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != tc.param || *e.Error.Code != tc.code {
			t.Errorf("%s: status %d, body %s; want 400 on %s with code %s", tc.name, code, body, tc.param, tc.code)
		}
	}
}

// Each server answers the other kinds of request with a 400 saying what the model does.
func TestModelKindsRefuseTheOtherEndpoints(t *testing.T) {
	_, gen, _ := startServer(t, nil)
	_, emb := startEncodeServer(t, "qwen3-embed", nil)
	_, rr := startEncodeServer(t, "qwen3-rerank", nil)
	for _, tc := range []struct {
		base, path, body, code string
	}{
		{gen, "/v1/embeddings", `{"input": "a"}`, "model_not_embedding"},
		{gen, "/v1/rerank", `{"query": "q", "documents": ["a"]}`, "model_not_reranker"},
		{emb, "/v1/rerank", `{"query": "q", "documents": ["a"]}`, "model_not_reranker"},
		{emb, "/v1/completions", `{"prompt": "a"}`, "model_not_generative"},
		{emb, "/v1/chat/completions", `{"messages": [{"role": "user", "content": "a"}]}`, "model_not_generative"},
		{rr, "/v1/embeddings", `{"input": "a"}`, "model_not_embedding"},
	} {
		code, _, body := post(t, tc.base+tc.path, tc.body)
		if code != http.StatusBadRequest || !bytes.Contains(body, []byte(tc.code)) {
			t.Errorf("%s: status %d %s, want 400 %s", tc.path, code, body, tc.code)
		}
	}
	if code, body := get(t, emb+"/v1/models"); code != http.StatusOK || !bytes.Contains(body, []byte(`"qwen3-embed"`)) ||
		!bytes.Contains(body, []byte(`"max_model_len":`)) || bytes.Contains(body, []byte(`"max_model_len":0`)) {
		t.Errorf("/v1/models of an embedding server: %d %s", code, body)
	}
	if code, body := get(t, emb+"/metrics"); code != http.StatusOK || !bytes.Contains(body, []byte(`path="/v1/rerank"`)) {
		t.Errorf("/metrics of an embedding server: %d", code)
	}
}
