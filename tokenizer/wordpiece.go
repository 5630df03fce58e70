package tokenizer

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// wordPiece is BERT's WordPiece model, as Hugging Face implements it: a word
// is cut greedily into the longest vocabulary tokens from the left, every
// token after the first carrying the continuing-subword prefix ("##"); a word
// with a part that matches nothing, or longer than maxChars characters,
// becomes the unknown token as a whole.
type wordPiece struct {
	vocab     map[string]int
	idToToken []string
	hasID     []bool
	unk       int
	prefix    string
	maxChars  int
}

type wordPieceJSON struct {
	UnkToken                string  `json:"unk_token"`
	ContinuingSubwordPrefix *string `json:"continuing_subword_prefix"`
	MaxInputCharsPerWord    *int    `json:"max_input_chars_per_word"`
}

func newWordPiece(raw json.RawMessage, vocabRaw json.RawMessage) (*wordPiece, error) {
	var j wordPieceJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, invalidf("model: %v", err)
	}
	if isNull(vocabRaw) {
		return nil, invalidf("model has no vocab")
	}
	vocab, err := parseVocab(vocabRaw)
	if err != nil {
		return nil, err
	}
	idToToken, hasID, err := vocabTable(vocab)
	if err != nil {
		return nil, err
	}
	m := &wordPiece{vocab: vocab, idToToken: idToToken, hasID: hasID, prefix: "##", maxChars: 100}
	if j.ContinuingSubwordPrefix != nil {
		m.prefix = *j.ContinuingSubwordPrefix
	}
	if j.MaxInputCharsPerWord != nil {
		m.maxChars = *j.MaxInputCharsPerWord
	}
	if j.UnkToken == "" {
		j.UnkToken = "[UNK]"
	}
	unk, ok := vocab[j.UnkToken]
	if !ok {
		return nil, invalidf("model unk_token %q is not in the vocab", j.UnkToken)
	}
	m.unk = unk
	return m, nil
}

// vocabTable inverts a token → id vocabulary, checking the ids.
func vocabTable(vocab map[string]int) (idToToken []string, hasID []bool, err error) {
	n := 0
	for tok, id := range vocab {
		if id < 0 || id > maxTokenID {
			return nil, nil, invalidf("model vocab token %q has id %d outside 0..%d", tok, id, maxTokenID)
		}
		n = max(n, id+1)
	}
	if err := checkIDSpace(n, len(vocab)); err != nil {
		return nil, nil, err
	}
	idToToken, hasID = make([]string, n), make([]bool, n)
	for tok, id := range vocab {
		if hasID[id] {
			return nil, nil, invalidf("model vocab gives id %d to both %q and %q", id, idToToken[id], tok)
		}
		idToToken[id], hasID[id] = tok, true
	}
	return idToToken, hasID, nil
}

func (m *wordPiece) tokens() ([]string, []bool) { return m.idToToken, m.hasID }

func (m *wordPiece) id(tok string) (int, bool) {
	id, ok := m.vocab[tok]
	return id, ok
}

// minTokens: a word longer than the longest match is one [UNK].
func (m *wordPiece) minTokens(w string) int { return min(len(w), 1) }

func (m *wordPiece) getScratch() *mergeScratch { return nil }
func (m *wordPiece) putScratch(*mergeScratch)  {}

func (m *wordPiece) encodeWord(w string, dst []int, _ *mergeScratch) ([]int, error) {
	if w == "" {
		return dst, nil
	}
	if utf8.RuneCountInString(w) > m.maxChars {
		return append(dst, m.unk), nil
	}
	start0 := len(dst)
	var buf strings.Builder
	for start := 0; start < len(w); {
		end, found := len(w), -1
		for start < end {
			sub := w[start:end]
			if start > 0 {
				buf.Reset()
				buf.WriteString(m.prefix)
				buf.WriteString(sub)
				sub = buf.String()
			}
			if id, ok := m.vocab[sub]; ok {
				found = id
				break
			}
			_, size := utf8.DecodeLastRuneInString(w[start:end])
			end -= size
		}
		if found < 0 {
			return append(dst[:start0], m.unk), nil
		}
		dst = append(dst, found)
		start = end
	}
	return dst, nil
}

// wordPieceDecoder joins WordPiece tokens: a token with the prefix continues
// the previous word, any other starts a new one after a space; cleanup then
// undoes BERT's spacing around punctuation and contractions.
type wordPieceDecoder struct {
	prefix  string
	cleanup bool
}

func (d wordPieceDecoder) decode(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		if i > 0 {
			if rest, ok := strings.CutPrefix(tok, d.prefix); ok {
				tok = rest
			} else {
				tok = " " + tok
			}
		}
		if d.cleanup {
			tok = cleanupDecoded(tok)
		}
		out[i] = tok
	}
	return out
}

// cleanupDecoded is Hugging Face's wordpiece cleanup: BERT puts spaces
// around punctuation and splits contractions; this takes them back out, one
// replacement after another in this order.
func cleanupDecoded(s string) string {
	for _, r := range [...][2]string{{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
		{" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

// bertNormalizer is BERT's normalizer: drop control characters and map
// whitespace to spaces (cleanText), put spaces around CJK ideographs
// (chineseChars), remove accents (stripAccents: NFD, then nonspacing marks
// dropped) and lowercase, in that order.
type bertNormalizer struct {
	cleanText, chineseChars, stripAccents, lowercase bool
}

type bertNormalizerJSON struct {
	CleanText          *bool `json:"clean_text"`
	HandleChineseChars *bool `json:"handle_chinese_chars"`
	StripAccents       *bool `json:"strip_accents"`
	Lowercase          *bool `json:"lowercase"`
}

func parseBertNormalizer(raw json.RawMessage) (normalizer, error) {
	var j bertNormalizerJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, invalidf("normalizer BertNormalizer: %v", err)
	}
	orTrue := func(b *bool) bool { return b == nil || *b }
	n := bertNormalizer{cleanText: orTrue(j.CleanText), chineseChars: orTrue(j.HandleChineseChars), lowercase: orTrue(j.Lowercase)}
	n.stripAccents = n.lowercase // strip_accents null follows lowercase
	if j.StripAccents != nil {
		n.stripAccents = *j.StripAccents
	}
	return n, nil
}

func (n bertNormalizer) normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for _, r := range s {
		if n.cleanText {
			if r == 0 || r == utf8.RuneError || isBertControl(r) {
				continue
			}
			if r == '\t' || r == '\n' || r == '\r' || isWhiteSpace(r) {
				r = ' '
			}
		}
		if n.chineseChars && isCJKIdeograph(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	s = b.String()
	if n.stripAccents {
		s = stripNonspacingMarks(norm.NFD.String(s))
	}
	if n.lowercase {
		s = lowercaseChars(s)
	}
	return s
}

// isBertControl is Unicode's "Other" category (Cc, Cf, Co, Cs and unassigned
// code points) except tab, newline and carriage return, which count as
// whitespace.
func isBertControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	if r < 0x80 { // the common case, without the table lookups
		return r < 0x20 || r == 0x7f
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) || isUnassigned(r)
}

// isUnassigned reports a code point in no general category (Cn).
func isUnassigned(r rune) bool {
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// isCJKIdeograph is BERT's "Chinese character": the CJK Unified Ideographs
// blocks and their extensions and compatibility blocks (not Hangul, Hiragana
// or Katakana, which are written with spaces).
func isCJKIdeograph(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

func stripNonspacingMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, s)
}

// lowercaseChars lowercases character by character with the full mappings
// (Rust's char::to_lowercase, as Hugging Face uses): İ becomes i and a
// combining dot; Σ is always σ (no final-sigma rule).
func lowercaseChars(s string) string {
	if !strings.ContainsRune(s, 'İ') {
		return strings.Map(unicode.ToLower, s)
	}
	return strings.ReplaceAll(strings.Map(func(r rune) rune {
		if r == 'İ' {
			return r
		}
		return unicode.ToLower(r)
	}, s), "İ", "i\u0307")
}

// bertPreTokenizer splits on whitespace (dropped) and isolates every
// punctuation character (ASCII punctuation and Unicode category P).
func bertPreTokenizer() preTokenizer {
	return sequencePreTokenizer{
		whitespaceSplit(),
		splitPreTokenizer{pattern: runePattern(isBertPunct), behavior: behaviorIsolated},
	}
}

func isBertPunct(r rune) bool {
	if r < 0x80 {
		return (r >= '!' && r <= '/') || (r >= ':' && r <= '@') || (r >= '[' && r <= '`') || (r >= '{' && r <= '~')
	}
	return unicode.IsPunct(r)
}
