package tokenizer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mergeIDs runs one of the two merge algorithms on a word.
func mergeIDs(t *testing.T, m *bpe, w string, scan bool) []int32 {
	t.Helper()
	sc := &mergeScratch{merges: m.merges}
	var syms []symbol
	var err error
	if m.byteLevel {
		syms, err = m.byteSymbols(w, nil)
	} else {
		syms, err = m.charSymbols(w, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	if scan {
		m.mergeScan(w, syms, nil, sc)
	} else {
		m.mergeAll(w, syms, nil, sc)
	}
	var ids []int32
	for i := 0; i >= 0; i = int(syms[i].next) {
		ids = append(ids, syms[i].id)
	}
	return ids
}

// TestMergeScanEqualsHeap checks that the linear-scan merge used for short
// words and the heap merge used for long ones give the same tokens, on
// words of every length from the fixtures and benchmark texts.
func TestMergeScanEqualsHeap(t *testing.T) {
	var words []string
	for _, file := range []string{"bench-english.txt.gz", "bench-code.go.txt.gz", "bench-cjk.txt.gz"} {
		lines := strings.Split(string(readTestdata(t, file)), "\n")
		for i, l := range lines {
			if i%7 == 0 && l != "" { // a sample keeps the test fast
				words = append(words, l, strings.ReplaceAll(l, " ", "▁"))
			}
		}
	}
	for _, v := range fixtureVectors(t, "qwen3") {
		if v.Text != "" {
			words = append(words, v.Text)
		}
	}
	for _, name := range []string{"llama3", "gemma3", "mistral"} {
		m := fixtureTokenizer(t, name).model.(*bpe)
		for _, w := range words {
			if diff := cmp.Diff(mergeIDs(t, m, w, false), mergeIDs(t, m, w, true)); diff != "" {
				t.Fatalf("%s %q: (-heap +scan):\n%s", name, w, diff)
			}
		}
	}
}
