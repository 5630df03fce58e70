package tokenizer

import (
	"errors"
	"slices"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func addFixtureSeeds(f *testing.F) {
	for _, name := range fixtureNames {
		for _, v := range fixtureVectors(f, name) {
			f.Add(v.Text)
		}
	}
	for _, s := range []string{"\xff\xfe", "a\x80b", "<|im_start|><|im_end|>", "<bos><eos>", "\n\n\n\t\t", "▁▁x"} {
		f.Add(s)
	}
}

// FuzzEncode checks that Encode never fails or panics on any input, that
// Decode accepts what Encode produced, and that byte-level tokenizers round
// trip valid UTF-8 (after their normalizer).
func FuzzEncode(f *testing.F) {
	addFixtureSeeds(f)
	toks := make(map[string]*Tokenizer, len(fixtureNames))
	for _, name := range fixtureNames {
		toks[name] = fixtureTokenizer(f, name)
	}
	// want returns the text a lossless tokenizer must decode back to.
	lossless := map[string]func(string) string{
		"llama3": func(s string) string { return s },
		"qwen3":  norm.NFC.String,
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range fixtureNames {
			tok := toks[name]
			ids, err := tok.Encode(s, true)
			if err != nil {
				t.Fatalf("%s: Encode(%q): %v", name, s, err)
			}
			got, err := tok.Decode(ids, false)
			if err != nil {
				t.Fatalf("%s: Decode(Encode(%q)): %v", name, s, err)
			}
			if want, ok := lossless[name]; ok && utf8.ValidString(s) && got != want(s) {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", name, s, got)
			}
			// EncodeLimit agrees with Encode at exactly its length, and refuses one less.
			if again, err := tok.EncodeLimit(s, true, len(ids)); err != nil || !slices.Equal(again, ids) {
				t.Fatalf("%s: EncodeLimit(%q, %d) = %v, %v; Encode gave %v", name, s, len(ids), again, err, ids)
			}
			if len(ids) > 0 {
				if _, err := tok.EncodeLimit(s, true, len(ids)-1); !errors.Is(err, ErrTooLong) {
					t.Fatalf("%s: EncodeLimit(%q, %d) of a text of %d ids: %v", name, s, len(ids)-1, len(ids), err)
				}
			}
		}
	})
}

// FuzzStream feeds arbitrary id sequences (mostly byte tokens, which split
// characters) through a Stream and compares with Decode.
func FuzzStream(f *testing.F) {
	f.Add([]byte{0xE2, 0x82, 0xAC, 0x20, 0x41})
	f.Add([]byte{0xF0, 0x9F, 0xA4, 0x97, 1, 2, 3})
	f.Add([]byte{0x80, 0x80, 0xC3, 0xFF, 0x00})
	toks := make(map[string]*Tokenizer, len(fixtureNames))
	for _, name := range fixtureNames {
		toks[name] = fixtureTokenizer(f, name)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range fixtureNames {
			tok := toks[name]
			// Byte values select low ids (byte tokens in every vocabulary
			// here: GPT-2 bytes at 0..255, <0xNN> at 3..258); a 0xFF byte
			// makes the next one pick an id spread over the vocabulary.
			var ids []int
			for i := 0; i < len(data); i++ {
				id := int(data[i])
				if data[i] == 0xFF && i+1 < len(data) {
					i++
					id = int(data[i]) * (tok.VocabSize() / 256)
				}
				if _, ok := tok.Token(id % tok.VocabSize()); ok {
					ids = append(ids, id%tok.VocabSize())
				}
			}
			for _, skip := range []bool{false, true} {
				checkStream(t, tok, ids, skip, 0)
			}
		}
	})
}
