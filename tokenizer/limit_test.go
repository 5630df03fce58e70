package tokenizer

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestLongWordsAreRefusedCheaply is the regression test for prompts made of one long word:
// 8 MiB of "a" took 37 s and 1 GB to encode with Qwen3's tokenizer (a word is merged as a
// whole), before the server could see that it does not fit a 4,096-token context, and the
// buffers of that word stayed held by the tokenizer afterwards. EncodeLimit refuses such a
// word (and a segment whose pre-tokenizer drops nothing) from its length, since no token
// stands for more than so many of its bytes; 8 MiB of short words ("a1 a1 …") allocated
// 540 MB of pieces before. Encode no longer keeps a long word's buffers.
func TestLongWordsAreRefusedCheaply(t *testing.T) {
	const size = 8 << 20
	for _, name := range fixtureNames {
		tok := fixtureTokenizer(t, name)
		for _, text := range []string{strings.Repeat("a", size), strings.Repeat(" ", size), strings.Repeat("\n", size), strings.Repeat("a1 ", size/3)} {
			var err error
			spent := allocatedBy(func() { _, err = tok.EncodeLimit(text, true, 4096) })
			if !errors.Is(err, ErrTooLong) {
				t.Errorf("%s: EncodeLimit of %d bytes of %q: %v; want ErrTooLong", name, len(text), text[:3], err)
			}
			// The normalizer sees the whole text (the Replace of SentencePiece-style
			// tokenizers writes ▁ for each space), the rest stops early.
			if max := uint64(8 * len(text)); spent > max {
				t.Errorf("%s: EncodeLimit of %d bytes of %q allocated %d MB, more than %d MB", name, len(text), text[:3], spent>>20, max>>20)
			}
			t.Logf("%s %q: %d MB", name, text[:3], spent>>20)
		}
	}
	// A long word encoded in full leaves no large buffers behind.
	tok := fixtureTokenizer(t, "qwen3")
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := tok.Encode(strings.Repeat("a", 1<<20), false); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 16<<20 {
		t.Errorf("after encoding a 1 MiB word the heap holds %d MB more", grew>>20)
	}
}

func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestEncodeLimitAgreesWithEncode: on the encoder tokenizers too (whose pre-tokenizers drop
// whitespace, so that only words bound the tokens), EncodeLimit gives Encode's ids when they
// fit and ErrTooLong when one fewer is allowed. FuzzEncode checks the same on the others.
func TestEncodeLimitAgreesWithEncode(t *testing.T) {
	for _, name := range encoderFixtures {
		tok, err := Load(readTestdata(t, name+".tokenizer.json.gz"), nil)
		if err != nil {
			t.Fatal(err)
		}
		texts := []string{"Hello, world!", "  spaced   out  ", strings.Repeat("long", 50), "日本語のテキスト", "a1 b2 c3",
			"\n", " \t\n a", "a\u0085b\vc\fd", "▁a ▁ b▁", "a\u00a0b\u3000c", "  ", "x" + strings.Repeat(" \n", 9) + "y"}
		for _, v := range encoderVectors(t, name) {
			texts = append(texts, v.Text)
		}
		for _, text := range texts {
			ids, err := tok.Encode(text, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) == 0 {
				continue
			}
			if got, err := tok.EncodeLimit(text, true, len(ids)); err != nil || !slices.Equal(got, ids) {
				t.Errorf("%s: EncodeLimit(%q, %d) = %v, %v; Encode gave %v", name, text, len(ids), got, err, ids)
			}
			if _, err := tok.EncodeLimit(text, true, len(ids)-1); !errors.Is(err, ErrTooLong) {
				t.Errorf("%s: EncodeLimit(%q, %d): %v; want ErrTooLong", name, text, len(ids)-1, err)
			}
		}
	}
}

// TestSparseIDsAreRefused is the regression test for a tokenizer.json of a few tokens with
// one id near maxTokenID: the id tables are as long as the largest id, so a 65-byte file
// made Load allocate 560 MB (and a server's grammar vocabulary as much again). Ids may now
// reach twice the tokens plus 65,536, and every real vocabulary loads.
func TestSparseIDsAreRefused(t *testing.T) {
	for _, src := range []string{
		`{"model":{"type":"BPE","vocab":{"a":0,"b":16777216},"merges":[]}}`,
		`{"model":{"type":"BPE","vocab":{"a":0,"b":16777215},"merges":[]}}`,
		`{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]},"added_tokens":[{"id":16777215,"content":"x","special":true}]}`,
		`{"model":{"type":"WordPiece","vocab":{"a":0,"b":9000000},"unk_token":"a"}}`,
	} {
		var err error
		spent := allocatedBy(func() { _, err = Load([]byte(src), nil) })
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Load(%s): %v; want ErrInvalid", src, err)
		}
		if spent > 16<<20 {
			t.Errorf("Load(%s) allocated %d MB", src, spent>>20)
		}
	}
	// Within the bound: a few tokens and ids up to 65,536.
	if _, err := Load([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]},"added_tokens":[{"id":65536,"content":"x","special":true}]}`), nil); err != nil {
		t.Errorf("ids within the bound: %v", err)
	}
}

// TestBacktrackingRegexesStop is the regression test for a tokenizer.json whose Split,
// Replace or decoder regex backtracks exponentially ((a|aa)+b: 12 s on 32 a's, hours on
// 40), which no caller could cancel: each match now stops after regexTimeout with an error
// wrapping ErrRegexTimeout, from Encode, Decode and Load alike.
func TestBacktrackingRegexesStop(t *testing.T) {
	const evil = `(a|aa)+b`
	a40 := strings.Repeat("a", 40)
	split, err := Load([]byte(`{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"`+evil+`"},"behavior":"Isolated","invert":false},
		"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := split.Encode(a40, false); !errors.Is(err, ErrRegexTimeout) {
		t.Errorf("Encode with a backtracking Split: %v", err)
	}
	if ids, err := split.Encode("aab", false); err != nil || len(ids) != 3 {
		t.Errorf("the same tokenizer on a short text: %v, %v", ids, err)
	}
	decoder, err := Load([]byte(`{"decoder":{"type":"Replace","pattern":{"Regex":"`+evil+`"},"content":"x"},
		"model":{"type":"BPE","vocab":{"a":0,"`+a40+`":1},"merges":[]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decoder.Decode([]int{1}, false); !errors.Is(err, ErrRegexTimeout) {
		t.Errorf("Decode with a backtracking Replace decoder: %v", err)
	}
	if _, err := decoder.NewStream(false).Add(1); !errors.Is(err, ErrRegexTimeout) {
		t.Errorf("Stream.Add with a backtracking Replace decoder: %v", err)
	}
	_, err = Load([]byte(`{"normalizer":{"type":"Replace","pattern":{"Regex":"`+evil+`"},"content":"x"},
		"added_tokens":[{"id":1,"content":"`+a40+`","normalized":true}],
		"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`), nil)
	if !errors.Is(err, ErrRegexTimeout) {
		t.Errorf("Load normalizing an added token with a backtracking Replace: %v", err)
	}
}

// TestManyWordsAreRefusedCheaply: the encoder tokenizers drop whitespace, so a text's length
// does not bound its tokens, but its words do. 5 MB of short words took BERT's tokenizer
// 4-7 s and 400 MB (XLM-R's 646, a Unigram one's 771) to refuse for a 512-token model, all
// of it in cutting the text into pieces; EncodeLimit now counts the words first.
func TestManyWordsAreRefusedCheaply(t *testing.T) {
	const size = 5 << 20
	for _, name := range encoderFixtures {
		tok, err := Load(readTestdata(t, name+".tokenizer.json.gz"), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, word := range []string{"a1 ", "Héllo, wörld! ", "\tx\n"} {
			text := strings.Repeat(word, size/len(word))
			spent := allocatedBy(func() { _, err = tok.EncodeLimit(text, true, 512) })
			if !errors.Is(err, ErrTooLong) {
				t.Errorf("%s: EncodeLimit of %d bytes of %q: %v; want ErrTooLong", name, len(text), word, err)
			}
			// The normalizers see the whole text (a copy or three), the rest stops early.
			if max := uint64(16 * len(text)); spent > max {
				t.Errorf("%s: EncodeLimit of %d bytes of %q allocated %d MB, more than %d MB", name, len(text), word, spent>>20, max>>20)
			}
		}
	}
}
