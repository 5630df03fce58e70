// Package tokenizer implements Hugging Face tokenizer.json tokenizers with
// the same ids and text as the Hugging Face tokenizers library: BPE
// (byte-level as in Llama 3, Qwen and SmolLM, and SentencePiece-style with
// byte fallback as in Llama 2, Mistral and Gemma 3), WordPiece (BERT and the
// sentence-transformers models built on it) and Unigram (XLM-RoBERTa, bge-m3,
// multilingual-e5), plus a streaming detokenizer for generation and the
// pair encoding with token type ids and truncation that encoder models take
// (EncodeSequence, EncodePair).
//
// It owns: parsing tokenizer.json and the special-token part of
// tokenizer_config.json, added/special token matching, normalizers,
// pre-tokenizers, the models, post-processors (BOS/EOS, pair templates and
// type ids) and decoders. It does not own chat templates (internal/chat),
// padding, offsets, or the WordLevel model (rejected with an
// *UnsupportedError).
//
// Supported components: normalizers NFC, NFD, NFKC, NFKD, Lowercase,
// Replace, Prepend, Strip, ByteLevel, BertNormalizer, Precompiled
// (SentencePiece's compiled rules), Sequence; pre-tokenizers ByteLevel,
// Split, Metaspace, Digits, Whitespace, WhitespaceSplit, BertPreTokenizer,
// Sequence; post-processors TemplateProcessing, ByteLevel,
// RobertaProcessing, BertProcessing, Sequence; decoders ByteLevel, Replace,
// ByteFallback, Fuse, Strip, Metaspace, WordPiece, Sequence. The split
// regexes of GPT-2, Llama 3 and Qwen 2/3 run on hand-written scanners; other
// regexes run on regexp2.
//
// Typical use:
//
//	tok, err := tokenizer.LoadFS(os.DirFS(modelDir))
//	ids, err := tok.Encode(prompt, true) // with BOS where the model wants it
//	st := tok.NewStream(true)
//	for each generated id { piece, err := st.Add(id); print(piece) }
//	print(st.Flush())
//
// A Tokenizer is immutable after Load and safe for concurrent use; a
// Stream belongs to one generation.
package tokenizer

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Tokenizer encodes text into token ids and decodes ids back into text.
type Tokenizer struct {
	normalizer   normalizer   // nil: identity
	preTokenizer preTokenizer // nil: the whole segment is one word
	byteLevel    bool         // a ByteLevel pre-tokenizer ends the chain: words reach the model as raw bytes
	keepsBytes   bool         // the pre-tokenizer drops no text: its words hold every character of their segment
	model        wordModel
	post         postProcessor
	decoder      decoder // nil: tokens joined with spaces
	// byteFallbackDecoder: the decoder joins runs of <0xNN> tokens (streams
	// must wait for a run to end).
	byteFallbackDecoder bool
	added               *addedVocab

	tokens  []string       // [id] token text (model vocab, overridden by added tokens)
	known   []bool         // [id] whether the id names a token at all
	special []bool         // [id] added token marked special
	ids     map[string]int // added token content → id

	bos    int
	hasBOS bool
	eos    []int
}

// wordModel turns one pre-tokenized word into ids: BPE, WordPiece or Unigram.
type wordModel interface {
	// encodeWord appends the ids of w to dst; sc is scratch from getScratch.
	encodeWord(w string, dst []int, sc *mergeScratch) ([]int, error)
	// minTokens is a lower bound on the ids encodeWord gives for w, found
	// without encoding it.
	minTokens(w string) int
	getScratch() *mergeScratch
	putScratch(*mergeScratch)
	// tokens is the vocabulary: [id] token text, and whether the id is used.
	tokens() (idToToken []string, hasID []bool)
	// id finds a token of the vocabulary.
	id(tok string) (int, bool)
}

// piece is one span of text on its way to the model. first reports that it
// starts at offset 0 of the input (Metaspace's prepend_scheme "first").
type piece struct {
	text  string
	first bool
}

// Encode turns text into token ids. With addSpecial the post-processor adds
// its tokens (for example BOS), like Hugging Face's
// encode(text, add_special_tokens=True). Invalid UTF-8 in text is replaced
// by U+FFFD first, as Hugging Face only accepts valid strings.
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	return t.encode(text, addSpecial, -1)
}

// ErrTooLong is wrapped by the error of EncodeLimit for a text that needs
// more ids than its limit.
var ErrTooLong = errors.New("tokenizer: the text needs more tokens than the limit")

// EncodeLimit is Encode for a caller that can take at most max ids (a
// model's context): it stops as soon as the text is known to need more,
// with an error wrapping ErrTooLong, without encoding the rest. A word is
// refused before it is merged when its length alone shows that it needs
// more tokens than are left (no token of the vocabulary stands for more
// than so many bytes of it), so that a long run of one character costs
// little: encoding 8 MiB of "a" took 37 s and 1 GB.
func (t *Tokenizer) EncodeLimit(text string, addSpecial bool, max int) ([]int, error) {
	return t.encode(text, addSpecial, max)
}

// encode is Encode with at most max ids (max < 0: no limit).
func (t *Tokenizer) encode(text string, addSpecial bool, max int) (_ []int, err error) {
	defer catchRegex(&err)
	if !utf8.ValidString(text) {
		text = lossyUTF8([]byte(text))
	}
	capacity := len(text)/3 + 2
	if max >= 0 {
		// The ids the special tokens add are part of the limit.
		if addSpecial {
			max -= t.post.count(false)
		}
		if max < 0 {
			return nil, fmt.Errorf("%w: the special tokens alone are more than %d", ErrTooLong, max+t.post.count(false))
		}
		capacity = min(capacity, max+1)
	}
	ids := make([]int, 0, capacity)
	sc := t.model.getScratch()
	defer t.model.putScratch(sc)
	for _, seg := range t.added.split(text, nil) {
		if seg.id >= 0 {
			ids = append(ids, seg.id)
		} else if ids, err = t.encodeSegment(seg.text, seg.start == 0, ids, sc, max); err != nil {
			return nil, err
		}
		if max >= 0 && len(ids) > max {
			return nil, tooLong(max)
		}
	}
	if addSpecial {
		ids = t.post.apply(ids)
	}
	return ids, nil
}

func tooLong(max int) error { return fmt.Errorf("%w: more than %d tokens", ErrTooLong, max) }

// encodeSegment encodes text between non-normalized added tokens:
// normalize, match normalized added tokens, pre-tokenize, run the model;
// past max ids (max ≥ 0) it stops with an ErrTooLong error.
func (t *Tokenizer) encodeSegment(text string, first bool, ids []int, sc *mergeScratch, max int) ([]int, error) {
	if t.normalizer != nil {
		text = t.normalizer.normalize(text)
	}
	if text == "" {
		return ids, nil
	}
	segs := []addedSegment{{text: text, id: -1}}
	if t.added.normalized != nil {
		segs = t.added.splitWith(t.added.normalized, text, segs[:0])
	}
	var words []piece
	for _, seg := range segs {
		if seg.id >= 0 {
			if ids = append(ids, seg.id); max >= 0 && len(ids) > max {
				return nil, tooLong(max)
			}
			continue
		}
		// Where every character reaches the model, the segment's length bounds its
		// tokens before it is cut into words (pieces of a megabyte of short words
		// take tens of bytes per byte).
		if max >= 0 && t.keepsBytes && len(ids)+t.model.minTokens(seg.text) > max {
			return nil, tooLong(max)
		}
		// Each word the pre-tokenizer keeps apart is at least one token.
		if max >= 0 && len(ids)+minWords(t.preTokenizer, seg.text) > max {
			return nil, tooLong(max)
		}
		words = append(words[:0], piece{text: seg.text, first: first && seg.start == 0})
		if t.preTokenizer != nil {
			words = t.preTokenizer.split(words)
		}
		for _, w := range words {
			if max >= 0 && len(ids)+t.model.minTokens(w.text) > max {
				return nil, tooLong(max)
			}
			var err error
			if ids, err = t.model.encodeWord(w.text, ids, sc); err != nil {
				return nil, err
			}
		}
	}
	return ids, nil
}

// BOS returns the beginning-of-sequence token id, from tokenizer_config.json
// or else the first special token the post-processor adds.
func (t *Tokenizer) BOS() (id int, ok bool) { return t.bos, t.hasBOS }

// EOS returns the end-of-sequence ids named by tokenizer_config.json (nil if
// none). generation_config.json may list more; that is the caller's concern.
func (t *Tokenizer) EOS() []int { return append([]int(nil), t.eos...) }

// VocabSize returns one more than the largest token id.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Token returns the text of a token as stored in tokenizer.json (byte-level
// tokens in their GPT-2 character form).
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= len(t.tokens) || !t.known[id] {
		return "", false
	}
	return t.tokens[id], true
}

// TokenID returns the id of a token string (added tokens first).
func (t *Tokenizer) TokenID(token string) (int, bool) { return t.tokenID(token) }

// IsSpecial reports whether id is an added token marked special (skipped by
// Decode with skipSpecial).
func (t *Tokenizer) IsSpecial(id int) bool {
	return id >= 0 && id < len(t.special) && t.special[id]
}
