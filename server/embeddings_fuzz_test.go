package server

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"testing"
)

// FuzzEmbeddingRequests feeds arbitrary bodies to the embeddings and rerank decoders and the
// input parser: nothing panics, and every refusal is a 4xx *apiError with a message.
func FuzzEmbeddingRequests(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hello","encoding_format":"base64","dimensions":8}`,
		`{"input":["a","b"],"truncate":true,"prompt_name":"query"}`,
		`{"input":[1,2,3]}`, `{"input":[[1,2],[3]]}`, `{"input":[]}`, `{"input":["a",[1]]}`, `{"input":null}`,
		`{"query":"q","documents":["a",{"text":"b"}],"top_n":1,"return_documents":false}`,
		`{"query":"q","documents":[3]}`,
	} {
		f.Add([]byte(s))
	}
	check := func(t *testing.T, what string, err error) {
		var ae *apiError
		if err != nil && (!errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 || ae.Message == "") {
			t.Fatalf("%s: %v, want a 4xx *apiError with a message", what, err)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var e embeddingRequest
		err := decodeBody(httptest.NewRequest("POST", "/v1/embeddings", bytes.NewReader(body)), &e)
		check(t, "decode embeddings", err)
		if err == nil {
			texts, ids, err := parseEmbeddingInput(e.Input)
			check(t, "input", err)
			if err == nil && len(texts) == 0 && len(ids) == 0 {
				t.Fatalf("input %s parsed to no inputs without an error", e.Input)
			}
		}
		var r rerankRequest
		check(t, "decode rerank", decodeBody(httptest.NewRequest("POST", "/v1/rerank", bytes.NewReader(body)), &r))
	})
}
