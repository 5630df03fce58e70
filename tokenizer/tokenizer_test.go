package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// tinyJSON builds a small tokenizer.json: one-character tokens a, b, space,
// <, x, > (ids 0..5), the merge "a b" → "ab" (id 7), an added token "<x>"
// (id 6) with the given flags, and the given components (raw JSON or "null").
func tinyJSON(addedFlags, normalizer, preTokenizer, decoder string) []byte {
	return []byte(fmt.Sprintf(`{
  "added_tokens": [{"id": 6, "content": "<x>", "special": true, %s}],
  "normalizer": %s, "pre_tokenizer": %s, "post_processor": null, "decoder": %s,
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, " ": 2, "<": 3, "x": 4, ">": 5, "ab": 7, "▁": 8, "▁a": 9},
            "merges": ["a b", ["▁", "a"]]}
}`, addedFlags, normalizer, preTokenizer, decoder))
}

func mustLoad(t *testing.T, data []byte) *Tokenizer {
	t.Helper()
	tok, err := Load(data, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return tok
}

func TestAddedTokenFlags(t *testing.T) {
	tests := []struct {
		name, flags, normalizer, text string
		want                          []int
	}{
		{"plain match", `"lstrip": false`, "null", "a<x>b", []int{0, 6, 1}},
		{"leftmost longest beats merges", `"lstrip": false`, "null", "ab<x>ab", []int{7, 6, 7}},
		{"without lstrip the space stays", `"lstrip": false`, "null", "a <x>", []int{0, 2, 6}},
		{"lstrip eats spaces before", `"lstrip": true`, "null", "a  <x>", []int{0, 6}},
		{"without rstrip the space stays", `"rstrip": false`, "null", "<x> a", []int{6, 2, 0}},
		{"rstrip eats spaces after", `"rstrip": true`, "null", "<x>  a", []int{6, 0}},
		{"single_word rejects inside a word", `"single_word": true`, "null", "a<x>", []int{0, 3, 4, 5}},
		{"single_word accepts between spaces", `"single_word": true`, "null", "a <x> b", []int{0, 2, 6, 2, 1}},
		{"normalized token matches normalized text", `"normalized": true`, `{"type": "Lowercase"}`, "A<X>", []int{0, 6}},
		{"non-normalized token needs raw text", `"normalized": false`, `{"type": "Lowercase"}`, "<X>", []int{3, 4, 5}},
		{"non-special token is normalized by default", `"special": false`, `{"type": "Lowercase"}`, "A<X>", []int{0, 6}},
		{"special token is not normalized by default", `"lstrip": false`, `{"type": "Lowercase"}`, "<X>", []int{3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := mustLoad(t, tinyJSON(tt.flags, tt.normalizer, "null", "null"))
			got, err := tok.Encode(tt.text, false)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Encode(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestMetaspace(t *testing.T) {
	tests := []struct {
		name, scheme, text string
		want               []int
	}{
		{"always prepends to every segment", "always", "a<x>a", []int{9, 6, 9}},
		{"first prepends only at the start", "first", "a<x>a", []int{9, 6, 0}},
		{"never prepends", "never", "a a", []int{0, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pre := fmt.Sprintf(`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": %q, "split": true}`, tt.scheme)
			dec := fmt.Sprintf(`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": %q, "split": true}`, tt.scheme)
			tok := mustLoad(t, tinyJSON(`"lstrip": false`, "null", pre, dec))
			got, err := tok.Encode(tt.text, false)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Encode(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
	// The decoder drops every ▁ of the first token and turns the others
	// into spaces (Hugging Face's Metaspace decoder).
	tok := mustLoad(t, tinyJSON(`"lstrip": false`, "null", "null", `{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}`))
	if got, err := tok.Decode([]int{9, 8, 9}, false); err != nil || got != "a  a" {
		t.Errorf("Decode(▁a ▁ ▁a) = %q, %v; want %q", got, err, "a  a")
	}
}

// TestSplitBehaviors uses the example of Hugging Face's
// SplitDelimiterBehavior documentation.
func TestSplitBehaviors(t *testing.T) {
	tests := []struct {
		behavior splitBehavior
		want     []string
	}{
		{behaviorRemoved, []string{"the", "final", "countdown"}},
		{behaviorIsolated, []string{"the", "-", "final", "-", "-", "countdown"}},
		{behaviorMergedWithPrevious, []string{"the-", "final-", "-", "countdown"}},
		{behaviorMergedWithNext, []string{"the", "-final", "-", "-countdown"}},
		{behaviorContiguous, []string{"the", "-", "final", "--", "countdown"}},
	}
	for _, tt := range tests {
		sp := splitPreTokenizer{pattern: literalPattern("-"), behavior: tt.behavior}
		var got []string
		for _, p := range sp.split([]piece{{text: "the-final--countdown"}}) {
			got = append(got, p.text)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("behavior %d (-want +got):\n%s", tt.behavior, diff)
		}
	}
}

// TestLossyUTF8MatchesRust pins String::from_utf8_lossy: one U+FFFD per
// maximal invalid subpart (unlike Go's per-byte replacement).
func TestLossyUTF8MatchesRust(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"\xE2\x82A", "\uFFFDA"},               // truncated 3-byte sequence: one replacement
		{"\xF0\x9F\x98", "\uFFFD"},             // truncated 4-byte sequence at the end
		{"\x80\x80", "\uFFFD\uFFFD"},           // lone continuation bytes: one each
		{"\xED\xA0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogate: ED then two stray bytes
		{"\xC0\xAF", "\uFFFD\uFFFD"},           // overlong lead byte is invalid alone
		{"\xE2\x82\xAC\xFF", "€\uFFFD"},
	}
	for _, tt := range tests {
		if got := lossyUTF8([]byte(tt.in)); got != tt.want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLoadRejectsUnsupportedComponents(t *testing.T) {
	base := `{"added_tokens": [], "normalizer": %s, "pre_tokenizer": %s, "post_processor": %s, "decoder": %s,
	          "model": %s}`
	model := `{"type": "BPE", "vocab": {"a": 0}, "merges": []}`
	tests := []struct {
		component, json string
		args            [5]string
	}{
		{"normalizer", "", [5]string{`{"type": "NmtNormalizer"}`, "null", "null", "null", model}},
		{"pre_tokenizer", "", [5]string{"null", `{"type": "UnicodeScripts"}`, "null", "null", model}},
		{"post_processor", "", [5]string{"null", "null", `{"type": "Fancy"}`, "null", model}},
		{"decoder", "", [5]string{"null", "null", "null", `{"type": "CTC"}`, model}},
		{"model", "", [5]string{"null", "null", "null", "null", `{"type": "WordLevel", "vocab": {}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.component, func(t *testing.T) {
			data := fmt.Sprintf(base, tt.args[0], tt.args[1], tt.args[2], tt.args[3], tt.args[4])
			_, err := Load([]byte(data), nil)
			var ue *UnsupportedError
			if !errors.As(err, &ue) || ue.Component != tt.component {
				t.Fatalf("Load error = %v, want *UnsupportedError for %s", err, tt.component)
			}
			if !strings.Contains(err.Error(), ue.Type) {
				t.Errorf("message %q does not name the type %q", err, ue.Type)
			}
		})
	}
}

func TestLoadRejectsMalformedFiles(t *testing.T) {
	tests := map[string]string{
		"not JSON":              `{"model": `,
		"no model":              `{"added_tokens": []}`,
		"merge of unknown":      `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}`,
		"merge result unknown":  `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}}`,
		"merge not a pair":      `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a"]]}}`,
		"duplicate ids":         `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}}`,
		"unk not in vocab":      `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"}}`,
		"template without A":    `{"post_processor": {"type": "TemplateProcessing", "single": []}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`,
		"dropout is not stable": `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1}}`,
		"huge vocab id":         `{"model": {"type": "BPE", "vocab": {"a": 1099511627776}, "merges": []}}`,
		"huge added id":         `{"added_tokens": [{"id": 1099511627776, "content": "x"}], "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`,
		"template adds unknown id": `{"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}],
		                          "special_tokens": {"<s>": {"ids": [7]}}}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`,
		"trailing garbage": `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}} x`,
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := Load([]byte(data), nil); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Load error = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestUnknownIDIsAnError(t *testing.T) {
	tok := fixtureTokenizer(t, "stories260K")
	for _, id := range []int{-1, 512, math.MaxInt} {
		var ue *UnknownIDError
		if _, err := tok.Decode([]int{1, id}, false); !errors.As(err, &ue) || ue.ID != id {
			t.Errorf("Decode(%d) error = %v, want *UnknownIDError", id, err)
		}
		if _, err := tok.NewStream(false).Add(id); !errors.As(err, &ue) {
			t.Errorf("Stream.Add(%d) error = %v, want *UnknownIDError", id, err)
		}
	}
}

func TestSpecialTokenAccessors(t *testing.T) {
	tests := []struct {
		name      string
		bos       int
		hasBOS    bool
		eos       []int
		vocabSize int
		special   int
	}{
		{"qwen3", 0, false, []int{151645}, 151669, 151643},
		{"llama3", 128000, true, []int{128001}, 128256, 128009},
		{"gemma3", 2, true, []int{106}, 262145, 1},
		{"mistral", 1, true, []int{2}, 32000, 0},
		{"stories260K", 1, true, []int{2}, 512, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := fixtureTokenizer(t, tt.name)
			if bos, ok := tok.BOS(); ok != tt.hasBOS || (ok && bos != tt.bos) {
				t.Errorf("BOS() = %d, %v; want %d, %v", bos, ok, tt.bos, tt.hasBOS)
			}
			if diff := cmp.Diff(tt.eos, tok.EOS()); diff != "" {
				t.Errorf("EOS() (-want +got):\n%s", diff)
			}
			if got := tok.VocabSize(); got != tt.vocabSize {
				t.Errorf("VocabSize() = %d, want %d", got, tt.vocabSize)
			}
			if !tok.IsSpecial(tt.special) || tok.IsSpecial(tt.vocabSize+1) || tok.IsSpecial(-1) {
				t.Errorf("IsSpecial(%d) = false or out-of-range ids special", tt.special)
			}
			tokStr, ok := tok.Token(tt.special)
			if id, found := tok.TokenID(tokStr); !ok || !found || id != tt.special {
				t.Errorf("Token/TokenID round trip of %d: %q %v → %d %v", tt.special, tokStr, ok, id, found)
			}
		})
	}
}

// TestStreamHoldsPartialCharacters checks that a character split over
// several tokens comes out whole, in one piece, with no partial output.
func TestStreamHoldsPartialCharacters(t *testing.T) {
	for _, name := range []string{"llama3", "mistral"} {
		tok := fixtureTokenizer(t, name)
		ids, err := tok.Encode("x🤗y", false)
		if err != nil {
			t.Fatal(err)
		}
		st := tok.NewStream(false)
		var pieces []string
		for _, id := range ids {
			p, err := st.Add(id)
			if err != nil {
				t.Fatal(err)
			}
			if p != "" {
				pieces = append(pieces, p)
			}
		}
		if p := st.Flush(); p != "" {
			pieces = append(pieces, p)
		}
		if strings.Join(pieces, "") != "x🤗y" {
			t.Errorf("%s: pieces %q do not join to %q", name, pieces, "x🤗y")
		}
		for _, p := range pieces {
			if strings.Contains(p, "\uFFFD") {
				t.Errorf("%s: piece %q has a replacement character", name, p)
			}
		}
	}
}

// TestEncodeConcurrent checks that a Tokenizer shared by goroutines gives
// the same ids as serial use (run with -race).
func TestEncodeConcurrent(t *testing.T) {
	tok := fixtureTokenizer(t, "qwen3")
	vectors := fixtureVectors(t, "qwen3")
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(vectors))
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, v := range vectors {
				ids, err := tok.Encode(v.Text, false)
				if err != nil || !cmp.Equal(nonNil(ids), nonNil(v.IDs)) {
					errs <- fmt.Errorf("%q: got %v, %v; want %v", v.Text, ids, err, v.IDs)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestConfigAddsEOS checks that tokenizer_config.json's add_bos_token and
// add_eos_token rebuild the template of Llama-class tokenizers, as
// transformers does.
func TestConfigAddsEOS(t *testing.T) {
	data := readTestdata(t, fixtureTokenizers["mistral"].tokenizer)
	tests := []struct {
		config string
		want   []int
	}{
		{`{"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "add_eos_token": true}`, []int{1, 22557, 2}},
		{`{"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "add_bos_token": false}`, []int{22557}},
		{`{"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "add_bos_token": false}`, []int{1, 22557}},
		{`{"bos_token": {"content": "<s>", "special": true}}`, []int{1, 22557}},
	}
	for _, tt := range tests {
		tok, err := Load(data, []byte(tt.config))
		if err != nil {
			t.Fatalf("Load with %s: %v", tt.config, err)
		}
		got, err := tok.Encode("Hello", true)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("config %s: Encode(Hello, true) (-want +got):\n%s", tt.config, diff)
		}
	}
	if _, err := Load(data, []byte(`{"bos_token": "<nope>"}`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown bos_token: error = %v, want ErrInvalid", err)
	}
}

func TestLoadFS(t *testing.T) {
	data := readTestdata(t, fixtureTokenizers["stories260K"].tokenizer)
	config := readTestdata(t, fixtureTokenizers["stories260K"].config)
	withConfig, err := LoadFS(fstest.MapFS{"tokenizer.json": {Data: data}, "tokenizer_config.json": {Data: config}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{2}, withConfig.EOS()); diff != "" {
		t.Errorf("EOS with config (-want +got):\n%s", diff)
	}
	withoutConfig, err := LoadFS(fstest.MapFS{"tokenizer.json": {Data: data}})
	if err != nil {
		t.Fatal(err)
	}
	if bos, ok := withoutConfig.BOS(); !ok || bos != 1 {
		t.Errorf("BOS without config = %d, %v; want 1 from the post-processor", bos, ok)
	}
	if _, err := LoadFS(fstest.MapFS{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty FS: error = %v, want fs.ErrNotExist", err)
	}
}

// withComponents returns a fixture tokenizer.json with some top-level
// components replaced by raw JSON.
func withComponents(t *testing.T, name string, replace map[string]string) []byte {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(readTestdata(t, fixtureTokenizers[name].tokenizer), &doc); err != nil {
		t.Fatal(err)
	}
	for k, v := range replace {
		doc[k] = json.RawMessage(v)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestByteLevelBeforeAnotherPreTokenizer runs Llama 3 with a Split on tab
// after ByteLevel: bytes are mapped to characters before it (a tab becomes
// "ĉ" and no longer splits) and the model works on characters, so the ids
// must not change.
func TestByteLevelBeforeAnotherPreTokenizer(t *testing.T) {
	pre := `{"type": "Sequence", "pretokenizers": [
	  {"type": "Split", "pattern": {"Regex": ` + strconv.Quote(llama3Regex) + `}, "behavior": "Isolated", "invert": false},
	  {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
	  {"type": "Split", "pattern": {"String": "\t"}, "behavior": "Removed", "invert": false}]}`
	tok := mustLoad(t, withComponents(t, "llama3", map[string]string{"pre_tokenizer": pre}))
	if tok.byteLevel {
		t.Fatal("model works on raw bytes although ByteLevel is not the last pre-tokenizer")
	}
	for _, v := range fixtureVectors(t, "llama3") {
		got, err := tok.Encode(v.Text, false)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(nonNil(v.IDs), nonNil(got)); diff != "" {
			t.Errorf("Encode(%q) (-want +got):\n%s", v.Text, diff)
		}
	}
}

// TestByteLevelNormalizerRoundTrips uses the ByteLevel normalizer instead
// of the pre-tokenizer: the whole text is one word of GPT-2 characters and
// must decode back to itself.
func TestByteLevelNormalizerRoundTrips(t *testing.T) {
	tok := mustLoad(t, withComponents(t, "llama3", map[string]string{
		"normalizer": `{"type": "ByteLevel"}`, "pre_tokenizer": "null"}))
	for _, v := range fixtureVectors(t, "llama3") {
		ids, err := tok.Encode(v.Text, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tok.Decode(ids, false); err != nil || got != v.Text {
			t.Errorf("Decode(Encode(%q)) = %q, %v", v.Text, got, err)
		}
	}
}

// TestPreTokenizers uses the examples of Hugging Face's pre-tokenizer
// documentation.
func TestPreTokenizers(t *testing.T) {
	tests := []struct {
		json, text string
		want       []string
	}{
		{`{"type": "Whitespace"}`, "Hello there!", []string{"Hello", "there", "!"}},
		{`{"type": "WhitespaceSplit"}`, "Hello there!", []string{"Hello", "there!"}},
		{`{"type": "Digits", "individual_digits": true}`, "Call 123 please", []string{"Call ", "1", "2", "3", " please"}},
		{`{"type": "Digits", "individual_digits": false}`, "Call 123 please", []string{"Call ", "123", " please"}},
		{`{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}`, "Hello my friend", []string{" Hello", " my", " friend"}},
		{`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}`, "Hey friend!", []string{"▁Hey", "▁friend!"}},
		{`{"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Digits", "individual_digits": true}]}`, "a12 b", []string{"a", "1", "2", "b"}},
	}
	for _, tt := range tests {
		pt, _, err := parsePreTokenizerChain([]byte(tt.json))
		if err != nil {
			t.Fatalf("%s: %v", tt.json, err)
		}
		var got []string
		for _, p := range pt.split([]piece{{text: tt.text, first: true}}) {
			got = append(got, p.text)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s on %q (-want +got):\n%s", tt.json, tt.text, diff)
		}
	}
}
