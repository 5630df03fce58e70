package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/hfstatic/hfstatic/encode"
	"github.com/hfstatic/hfstatic/runner"
)

// Embeddings and reranking: POST /v1/embeddings (OpenAI's shape) for a model that embeds,
// POST /v1/rerank (the Cohere and Jina shape vLLM and llama-server serve; also /rerank and
// /v2/rerank) for one that scores query and document pairs. Options.Encoder answers them.

// DefaultMaxEmbedInputs is Options.MaxEmbedInputs' default: OpenAI's limit of inputs per
// embeddings request.
const DefaultMaxEmbedInputs = 2048

// validateEncoderOnly checks the options of a server with an Encoder and no Runner.
func (o *Options) validateEncoderOnly() error {
	bad := badOption
	switch {
	case o.ModelID == "":
		return bad("ModelID", "is empty")
	case o.MaxBodyBytes <= 0:
		return bad("MaxBodyBytes", "= %d, must be > 0", o.MaxBodyBytes)
	case o.MaxEmbedInputs < 0:
		return bad("MaxEmbedInputs", "= %d, must be ≥ 0 (0: %d)", o.MaxEmbedInputs, DefaultMaxEmbedInputs)
	case o.Pool != nil || o.Tokenizer != nil || o.Template != nil:
		return bad("Pool", "Tokenizer and Template are for generation, which needs a Runner")
	}
	return nil
}

// routeEncoders registers the embeddings and rerank endpoints.
func (s *Server) routeEncoders() {
	s.route("/v1/embeddings", http.MethodPost, s.handleEmbeddings)
	for _, p := range []string{"/v1/rerank", "/rerank", "/v2/rerank"} {
		s.route(p, http.MethodPost, s.handleRerank)
	}
}

// generative wraps a generation handler: a server without a Runner answers 400.
func (s *Server) generative(h http.HandlerFunc) http.HandlerFunc {
	if s.o.Runner != nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		what := "embeds texts (POST /v1/embeddings)"
		if !s.o.Encoder.Embeds() {
			what = "scores documents against a query (POST /v1/rerank)"
		}
		writeError(w, badRequest("model", "model_not_generative", "the model %q %s; it does not generate text", s.o.ModelID, what))
	}
}

func (s *Server) maxEmbedInputs() int {
	if s.o.MaxEmbedInputs > 0 {
		return s.o.MaxEmbedInputs
	}
	return DefaultMaxEmbedInputs
}

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
	// hfstatic's: cut inputs longer than the model takes instead of refusing them; a text, or
	// the name of one of the model's prompts (Qwen3-Embedding's "query"), put before every
	// text input.
	Truncate   bool   `json:"truncate"`
	Prompt     string `json:"prompt"`
	PromptName string `json:"prompt_name"`
}

type embeddingObject struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string of little-endian float32
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type embeddingResponse struct {
	Object string            `json:"object"`
	Data   []embeddingObject `json:"data"`
	Model  string            `json:"model"`
	Usage  embeddingUsage    `json:"usage"`
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		writeError(w, err)
		return
	}
	if s.o.Encoder == nil || !s.o.Encoder.Embeds() {
		writeError(w, s.notEmbedding())
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		writeError(w, badRequest("encoding_format", "invalid_value", "encoding_format %q: want float or base64", req.EncodingFormat))
		return
	}
	texts, ids, err := parseEmbeddingInput(req.Input)
	if err != nil {
		writeError(w, err)
		return
	}
	if n := max(len(texts), len(ids)); n > s.maxEmbedInputs() {
		writeError(w, badRequest("input", "too_many_inputs", "%d inputs; this server takes at most %d per request", n, s.maxEmbedInputs()))
		return
	}
	opts := encode.EmbedOptions{Prompt: req.Prompt, PromptName: req.PromptName, Truncate: req.Truncate}
	if req.Dimensions != nil {
		if *req.Dimensions < 1 {
			writeError(w, badRequest("dimensions", "invalid_value", "dimensions %d must be ≥ 1", *req.Dimensions))
			return
		}
		opts.Dimensions = *req.Dimensions
	}
	var res *encode.Embeddings
	if texts != nil {
		res, err = s.o.Encoder.Embed(r.Context(), texts, opts)
	} else {
		res, err = s.o.Encoder.EmbedTokens(r.Context(), ids, opts)
	}
	if err != nil {
		s.encodeFail(w, r, err, "input")
		return
	}
	resp := embeddingResponse{Object: "list", Model: s.o.ModelID, Data: make([]embeddingObject, len(res.Vectors)),
		Usage: embeddingUsage{PromptTokens: res.Tokens, TotalTokens: res.Tokens}}
	for i, v := range res.Vectors {
		var e any = v
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			e = base64.StdEncoding.EncodeToString(b)
		}
		resp.Data[i] = embeddingObject{Object: "embedding", Index: i, Embedding: e}
	}
	writeJSON(w, http.StatusOK, resp)
}

// parseEmbeddingInput reads OpenAI's input: a string, an array of strings, an array of
// token ids or an array of such arrays.
func parseEmbeddingInput(raw json.RawMessage) (texts []string, ids [][]int, err error) {
	if isNull(raw) {
		return nil, nil, badRequest("input", "missing_required_parameter", "input is required: a string, an array of strings or of token id arrays")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, nil, badRequest("input", "invalid_type", "input must be a string or an array, got %s", jsonKind(raw))
	}
	if len(list) == 0 {
		return nil, nil, badRequest("input", "empty_input", "input is an empty array; send at least one text")
	}
	var flat []int
	if json.Unmarshal(raw, &flat) == nil {
		return nil, [][]int{flat}, nil
	}
	if json.Unmarshal(raw, &texts) == nil {
		return texts, nil, nil
	}
	if json.Unmarshal(raw, &ids) == nil {
		return nil, ids, nil
	}
	return nil, nil, badRequest("input", "invalid_type", "input must be an array of strings, of integers or of integer arrays (not mixed)")
}

// jsonKind names the JSON type of raw for a message.
func jsonKind(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "invalid JSON"
	}
	switch v.(type) {
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case map[string]any:
		return "an object"
	}
	return "another type"
}

type rerankRequest struct {
	Model           string            `json:"model"`
	Query           string            `json:"query"`
	Documents       []json.RawMessage `json:"documents"`
	TopN            *int              `json:"top_n"`
	ReturnDocuments *bool             `json:"return_documents"`
	// hfstatic's: cut pairs longer than the model takes; an instruction for rerankers that
	// take one (Qwen3-Reranker).
	Truncate    bool   `json:"truncate"`
	Instruction string `json:"instruction"`
}

type rerankDocument struct {
	Text string `json:"text"`
}

type rerankResult struct {
	Index          int             `json:"index"`
	Document       *rerankDocument `json:"document,omitempty"`
	RelevanceScore float64         `json:"relevance_score"`
}

type rerankResponse struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Usage   rerankUsage    `json:"usage"`
	Results []rerankResult `json:"results"`
}

type rerankUsage struct {
	TotalTokens int `json:"total_tokens"`
}

func (s *Server) handleRerank(w http.ResponseWriter, r *http.Request) {
	var req rerankRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		writeError(w, err)
		return
	}
	if s.o.Encoder == nil || s.o.Encoder.Embeds() {
		writeError(w, s.notReranker())
		return
	}
	if len(req.Documents) == 0 {
		writeError(w, badRequest("documents", "empty_input", "documents is missing or empty; send at least one"))
		return
	}
	if len(req.Documents) > s.maxEmbedInputs() {
		writeError(w, badRequest("documents", "too_many_inputs", "%d documents; this server takes at most %d per request", len(req.Documents), s.maxEmbedInputs()))
		return
	}
	docs := make([]string, len(req.Documents))
	for i, raw := range req.Documents {
		var d rerankDocument
		if json.Unmarshal(raw, &docs[i]) != nil {
			if err := json.Unmarshal(raw, &d); err != nil {
				writeError(w, badRequest(fmt.Sprintf("documents[%d]", i), "invalid_type", "a document is a string or an object with a \"text\" string"))
				return
			}
			docs[i] = d.Text
		}
	}
	opts := encode.RerankOptions{Truncate: req.Truncate, Instruction: req.Instruction}
	if req.TopN != nil {
		if *req.TopN < 1 {
			writeError(w, badRequest("top_n", "invalid_value", "top_n %d must be ≥ 1", *req.TopN))
			return
		}
		opts.TopN = *req.TopN
	}
	ranking, err := s.o.Encoder.Rerank(r.Context(), req.Query, docs, opts)
	if err != nil {
		s.encodeFail(w, r, err, "documents")
		return
	}
	resp := rerankResponse{ID: newID("rerank-"), Model: s.o.ModelID, Usage: rerankUsage{TotalTokens: ranking.Tokens},
		Results: make([]rerankResult, len(ranking.Results))}
	for i, res := range ranking.Results {
		resp.Results[i] = rerankResult{Index: res.Index, RelevanceScore: res.Relevance}
		if req.ReturnDocuments == nil || *req.ReturnDocuments {
			resp.Results[i].Document = &rerankDocument{Text: docs[res.Index]}
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) notEmbedding() *apiError {
	what := "generates text (POST /v1/completions, /v1/chat/completions)"
	if s.o.Encoder != nil {
		what = "scores documents against a query (POST /v1/rerank)"
	}
	return badRequest("model", "model_not_embedding", "the model %q %s; it has no embedding head: serve an embedding model", s.o.ModelID, what)
}

func (s *Server) notReranker() *apiError {
	what := "generates text (POST /v1/completions, /v1/chat/completions)"
	if s.o.Encoder != nil {
		what = "embeds texts (POST /v1/embeddings)"
	}
	return badRequest("model", "model_not_reranker", "the model %q %s; it does not score documents: serve a reranking model", s.o.ModelID, what)
}

// encodeFail answers an embedding or reranking error: bad input is a 400 naming the input
// (param is the request field of the inputs), a gone client or shutdown a 503.
func (s *Server) encodeFail(w http.ResponseWriter, r *http.Request, err error, param string) {
	var ie *encode.InputError
	if errors.As(err, &ie) {
		if ie.Index >= 0 {
			param = fmt.Sprintf("%s[%d]", param, ie.Index)
		} else {
			param = "query"
		}
	}
	code := ""
	switch {
	case errors.Is(err, encode.ErrTooLong):
		code = "input_too_long"
		err = fmt.Errorf("%w; send \"truncate\": true to cut it to its first %d tokens", err, s.o.Encoder.MaxTokens())
	case errors.Is(err, encode.ErrEmptyInput), errors.Is(err, encode.ErrNoInputs):
		code = "empty_input"
	case errors.Is(err, runner.ErrTokenOutOfRange), errors.Is(err, runner.ErrTokenType):
		code = "invalid_token"
	case errors.Is(err, encode.ErrDimensions):
		param, code = "dimensions", "unsupported_value"
	case errors.Is(err, encode.ErrPrompt):
		param, code = "prompt_name", "invalid_value"
	case errors.Is(err, encode.ErrTokenizer):
		code = "unsupported_value"
	case errors.Is(err, encode.ErrOption):
		param, code = "", "invalid_value"
	case errors.Is(err, encode.ErrNotEmbedding), errors.Is(err, encode.ErrNotReranker):
		param, code = "model", "unsupported_model"
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		writeError(w, s.generationError(r.Context(), err))
		return
	default:
		s.log.Warn("encode failed", "path", r.URL.Path, "err", err)
		writeError(w, &apiError{Status: http.StatusInternalServerError, Type: typeServer, Message: err.Error()})
		return
	}
	writeError(w, badRequest(param, code, "%v", err))
}
