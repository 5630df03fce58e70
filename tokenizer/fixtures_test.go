package tokenizer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// fixtureTokenizers maps a test name to the files in testdata (see
// testdata/README.md for where they came from).
var fixtureTokenizers = map[string]struct{ tokenizer, config, vectors string }{
	"qwen3":       {"qwen3.tokenizer.json.gz", "qwen3.tokenizer_config.json.gz", "qwen3.jsonl.gz"},
	"llama3":      {"llama3.tokenizer.json.gz", "llama3.tokenizer_config.json.gz", "llama3.jsonl.gz"},
	"gemma3":      {"gemma3.tokenizer.json.gz", "gemma3.tokenizer_config.json.gz", "gemma3.jsonl.gz"},
	"mistral":     {"mistral.tokenizer.json.gz", "mistral.tokenizer_config.json.gz", "lenml-llama2-actually-mistral-v0.1.jsonl.gz"},
	"stories260K": {"stories260K.tokenizer.json.gz", "stories260K.tokenizer_config.json.gz", "stories260K-tok512.jsonl.gz"},
}

var fixtureNames = []string{"qwen3", "llama3", "gemma3", "mistral", "stories260K"}

// readTestdata returns a testdata file, gunzipped if its name ends in .gz.
// A missing file fails the test.
func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatalf("fixture missing: %v", err)
	}
	if filepath.Ext(name) != ".gz" {
		return data
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return out
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// fixtureTokenizer loads (once per test binary) a tokenizer from testdata.
func fixtureTokenizer(tb testing.TB, name string) *Tokenizer {
	tb.Helper()
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if tok, ok := loaded[name]; ok {
		return tok
	}
	f, ok := fixtureTokenizers[name]
	if !ok {
		tb.Fatalf("no fixture tokenizer %q", name)
	}
	tok, err := Load(readTestdata(tb, f.tokenizer), readTestdata(tb, f.config))
	if err != nil {
		tb.Fatalf("Load(%s): %v", name, err)
	}
	loaded[name] = tok
	return tok
}

// vector is one line of the Hugging Face tokenizers (Rust) fixture files.
type vector struct {
	Text           string `json:"text"`
	IDs            []int  `json:"ids"`
	IDsWithSpecial []int  `json:"ids_with_special"`
	Decoded        string `json:"decoded"`
}

func fixtureVectors(tb testing.TB, name string) []vector {
	tb.Helper()
	var out []vector
	sc := bufio.NewScanner(bytes.NewReader(readTestdata(tb, fixtureTokenizers[name].vectors)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatalf("%s line %d: %v", name, len(out)+1, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		tb.Fatalf("%s: no vectors", name)
	}
	return out
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

// TestEncodeDecodeMatchesHuggingFace checks every vector written by the Hugging
// Face tokenizers library: ids without and with special tokens, and the
// decoded text (skip_special_tokens=False).
func TestEncodeDecodeMatchesHuggingFace(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			tok := fixtureTokenizer(t, name)
			vectors := fixtureVectors(t, name)
			matched := 0
			for i, v := range vectors {
				ok := true
				ids, err := tok.Encode(v.Text, false)
				if err != nil {
					t.Errorf("vector %d %q: Encode: %v", i, v.Text, err)
					continue
				}
				if diff := cmp.Diff(nonNil(v.IDs), nonNil(ids)); diff != "" {
					t.Errorf("vector %d %q: Encode(addSpecial=false) (-want +got):\n%s", i, v.Text, diff)
					ok = false
				}
				withSpecial, err := tok.Encode(v.Text, true)
				if err != nil {
					t.Errorf("vector %d %q: Encode: %v", i, v.Text, err)
					continue
				}
				if diff := cmp.Diff(nonNil(v.IDsWithSpecial), nonNil(withSpecial)); diff != "" {
					t.Errorf("vector %d %q: Encode(addSpecial=true) (-want +got):\n%s", i, v.Text, diff)
					ok = false
				}
				decoded, err := tok.Decode(v.IDs, false)
				if err != nil || decoded != v.Decoded {
					t.Errorf("vector %d: Decode = %q, %v; want %q", i, decoded, err, v.Decoded)
					ok = false
				}
				if ok {
					matched++
				}
			}
			t.Logf("SUMMARY %s: %d/%d vectors match Hugging Face (ids, ids_with_special, decoded)", name, matched, len(vectors))
		})
	}
}

// oracle is oracle-js-18x4.json: Hugging Face's JavaScript tokenizers
// (transformers.js) on the 18 strings of oracle-js-cases.json: ids without
// and with special tokens, and Decode of the former.
type oracle struct {
	EncodeNoSpecial [][]int  `json:"encode_nospecial"`
	EncodeSpecial   [][]int  `json:"encode_special"`
	Decode          []string `json:"decode"`
}

func TestEncodeMatchesJavaScriptOracle(t *testing.T) {
	var cases []string
	if err := json.Unmarshal(readTestdata(t, "oracle-js-cases.json"), &cases); err != nil {
		t.Fatal(err)
	}
	var oracles map[string]oracle
	if err := json.Unmarshal(readTestdata(t, "oracle-js-18x4.json.gz"), &oracles); err != nil {
		t.Fatal(err)
	}
	// The oracle's "llama2" is the Mistral SentencePiece vocabulary.
	for oracleName, name := range map[string]string{"llama2": "mistral", "llama3": "llama3", "qwen3": "qwen3", "gemma3": "gemma3"} {
		t.Run(oracleName, func(t *testing.T) {
			tok := fixtureTokenizer(t, name)
			o, ok := oracles[oracleName]
			if !ok || len(o.EncodeNoSpecial) != len(cases) || len(o.EncodeSpecial) != len(cases) || len(o.Decode) != len(cases) {
				t.Fatalf("oracle %q missing or not %d cases", oracleName, len(cases))
			}
			matched := 0
			for i, text := range cases {
				ids, err := tok.Encode(text, false)
				if err != nil {
					t.Fatalf("case %d: %v", i, err)
				}
				good := true
				if diff := cmp.Diff(nonNil(o.EncodeNoSpecial[i]), nonNil(ids)); diff != "" {
					t.Errorf("case %d %q: Encode(addSpecial=false) (-want +got):\n%s", i, text, diff)
					good = false
				}
				withSpecial, err := tok.Encode(text, true)
				if err != nil {
					t.Fatalf("case %d: %v", i, err)
				}
				if diff := cmp.Diff(nonNil(o.EncodeSpecial[i]), nonNil(withSpecial)); diff != "" {
					t.Errorf("case %d %q: Encode(addSpecial=true) (-want +got):\n%s", i, text, diff)
					good = false
				}
				decoded, err := tok.Decode(o.EncodeNoSpecial[i], false)
				if err != nil || decoded != o.Decode[i] {
					t.Errorf("case %d: Decode = %q, %v; want %q", i, decoded, err, o.Decode[i])
					good = false
				}
				if good {
					matched++
				}
			}
			t.Logf("SUMMARY oracle-js %s (%s): %d/%d cases match", oracleName, name, matched, len(cases))
		})
	}
}

// TestStreamEqualsDecode feeds every fixture id sequence through a Stream
// one id at a time: each piece must be valid UTF-8 and the pieces must add
// up to Decode.
func TestStreamEqualsDecode(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			tok := fixtureTokenizer(t, name)
			for i, v := range fixtureVectors(t, name) {
				for _, skip := range []bool{false, true} {
					checkStream(t, tok, v.IDsWithSpecial, skip, i)
				}
			}
		})
	}
}

func checkStream(t *testing.T, tok *Tokenizer, ids []int, skip bool, label int) {
	t.Helper()
	want, err := tok.Decode(ids, skip)
	if err != nil {
		t.Fatalf("vector %d: Decode: %v", label, err)
	}
	st := tok.NewStream(skip)
	var got []byte
	for _, id := range ids {
		piece, err := st.Add(id)
		if err != nil {
			t.Fatalf("vector %d: Add(%d): %v", label, id, err)
		}
		if !utf8.ValidString(piece) {
			t.Errorf("vector %d: Add(%d) returned invalid UTF-8 %q", label, id, piece)
		}
		got = append(got, piece...)
	}
	got = append(got, st.Flush()...)
	if string(got) != want {
		t.Errorf("vector %d skipSpecial=%v: stream = %q, Decode = %q", label, skip, got, want)
	}
}
