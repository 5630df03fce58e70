package tokenizer

import (
	"strings"
	"testing"
)

// TestTokenBytesConcatenate checks that the bytes of a text's tokens, joined, are the text the
// tokenizer decodes (less a leading space that a first-token decoder strips), on every
// fixture string of every tokenizer.
func TestTokenBytesConcatenate(t *testing.T) {
	for _, name := range fixtureNames {
		tok := fixtureTokenizer(t, name)
		for _, c := range fixtureVectors(t, name) {
			decoded, err := tok.Decode(c.IDs, false)
			if err != nil {
				t.Fatal(err)
			}
			if strings.ContainsRune(decoded, '\uFFFD') {
				continue // invalid UTF-8 pieces decode lossily; the bytes are exact
			}
			var b []byte
			special := false
			for _, id := range c.IDs {
				p, ok := tok.TokenBytes(id)
				if !ok && !tok.IsSpecial(id) {
					t.Fatalf("%s: token %d has no bytes", name, id)
				}
				special = special || !ok
				b = append(b, p...)
			}
			if special {
				continue // special tokens stand for no text
			}
			got, want := string(b), decoded
			if got != want && strings.TrimPrefix(got, " ") != want {
				t.Errorf("%s %q: token bytes %q, decoded %q", name, c.Text, got, want)
			}
		}
		for id := 0; id < tok.VocabSize(); id++ {
			if _, ok := tok.TokenBytes(id); ok == tok.IsSpecial(id) && ok {
				t.Fatalf("%s: special token %d has bytes", name, id)
			}
		}
	}
}
