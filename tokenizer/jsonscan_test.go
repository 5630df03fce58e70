package tokenizer

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// TestParseVocabMatchesEncodingJSON compares the fast scanner with
// encoding/json on the small fixture vocabularies and on escape edge cases
// (the large ones are covered by the encode/decode vectors, and running
// encoding/json over them would dominate the test time).
func TestParseVocabMatchesEncodingJSON(t *testing.T) {
	inputs := []string{
		`{}`,
		` { "a" : 1 , "b":2 } `,
		`{"\u0041\n\t\"\\\/": 3, "\ud83e\udd17": 4, "\ud800x": 5, "é▁": -1}`,
		`{"\u0000\b\f\r": 6, "\ud800": 7, "\udc00\ud800": 8}`,
	}
	for _, name := range []string{"mistral", "stories260K"} {
		fields, err := objectFields(readTestdata(t, fixtureTokenizers[name].tokenizer))
		if err != nil {
			t.Fatal(err)
		}
		model, err := objectFields(fields["model"])
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, string(model["vocab"]))
	}
	for _, in := range inputs {
		var want map[string]int
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("test input is not JSON: %v", err)
		}
		got, err := parseVocab([]byte(in))
		if err != nil {
			t.Fatalf("parseVocab: %v", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("parseVocab (-encoding/json +scanner):\n%.2000s", diff)
		}
	}
}

func TestParseMergesFormats(t *testing.T) {
	want := [][2]string{{"a", "b"}, {"▁", "c d"}}
	got, err := parseMerges([]byte(`["a b", ["▁", "c d"]]`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseMerges (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`["a"]`, `["a b c"]`, `[["a"]]`, `[["a", "b", "c"]]`, `[1]`, `["a b"`} {
		if _, err := parseMerges([]byte(bad)); err == nil {
			t.Errorf("parseMerges(%s) accepted a malformed list", bad)
		}
	}
}

func FuzzParseVocab(f *testing.F) {
	f.Add(`{"a": 1, "\u00e9\"": 2}`)
	f.Add(`{"\ud83e\udd17": 0}`)
	f.Fuzz(func(t *testing.T, in string) {
		var want map[string]int
		if !utf8.ValidString(in) {
			return // encoding/json rewrites invalid UTF-8; tokenizer.json is valid UTF-8
		}
		if json.Unmarshal([]byte(in), &want) != nil {
			parseVocab([]byte(in)) // must not panic
			return
		}
		got, err := parseVocab([]byte(in))
		if err != nil {
			return // valid JSON of another shape (numbers like 1e3, nested values)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("parseVocab(%q) (-encoding/json +scanner):\n%s", in, diff)
		}
	})
}
