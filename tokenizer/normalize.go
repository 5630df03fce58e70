package tokenizer

import (
	"encoding/json"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a text segment before pre-tokenization.
type normalizer interface {
	normalize(s string) string
}

type normalizerJSON struct {
	Type        string            `json:"type"`
	Normalizers []json.RawMessage `json:"normalizers"`
	Pattern     patternJSON       `json:"pattern"`
	Content     string            `json:"content"`
	Prepend     string            `json:"prepend"`
	Left        *bool             `json:"left"`
	Right       *bool             `json:"right"`
	Charsmap    *string           `json:"precompiled_charsmap"`
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var j normalizerJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, invalidf("normalizer: %v", err)
	}
	switch j.Type {
	case "Sequence":
		var seq sequenceNormalizer
		for _, r := range j.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	case "NFC":
		return unicodeNormalizer{norm.NFC}, nil
	case "NFD":
		return unicodeNormalizer{norm.NFD}, nil
	case "NFKC":
		return unicodeNormalizer{norm.NFKC}, nil
	case "NFKD":
		return unicodeNormalizer{norm.NFKD}, nil
	case "Lowercase":
		return lowercase{}, nil
	case "Prepend":
		return prepend(j.Prepend), nil
	case "Replace":
		p, err := j.Pattern.compile("normalizer Replace")
		if err != nil {
			return nil, err
		}
		return replaceNormalizer{pattern: p, content: j.Content}, nil
	case "ByteLevel":
		return byteLevelNormalizer{}, nil
	case "Strip":
		return strip{left: j.Left == nil || *j.Left, right: j.Right == nil || *j.Right}, nil
	case "BertNormalizer":
		return parseBertNormalizer(raw)
	case "Precompiled":
		if j.Charsmap == nil {
			return nil, invalidf("normalizer Precompiled has no precompiled_charsmap")
		}
		return parsePrecompiled(*j.Charsmap)
	}
	return nil, &UnsupportedError{Component: "normalizer", Type: j.Type}
}

type sequenceNormalizer []normalizer

func (seq sequenceNormalizer) normalize(s string) string {
	for _, n := range seq {
		s = n.normalize(s)
	}
	return s
}

type unicodeNormalizer struct{ form norm.Form }

func (u unicodeNormalizer) normalize(s string) string {
	if u.form.IsNormalString(s) {
		return s
	}
	return u.form.String(s)
}

type lowercase struct{}

func (lowercase) normalize(s string) string { return strings.ToLower(s) }

// prepend adds its text in front of a non-empty segment.
type prepend string

func (p prepend) normalize(s string) string {
	if s == "" {
		return s
	}
	return string(p) + s
}

type replaceNormalizer struct {
	pattern pattern
	content string
}

func (r replaceNormalizer) normalize(s string) string { return replaceAll(r.pattern, s, r.content) }

// byteLevelNormalizer maps bytes to GPT-2 characters (the model then
// works on characters).
type byteLevelNormalizer struct{}

func (byteLevelNormalizer) normalize(s string) string { return byteLevelEncode(s) }

type strip struct{ left, right bool }

func (st strip) normalize(s string) string {
	if st.left {
		s = strings.TrimLeftFunc(s, isWhiteSpace)
	}
	if st.right {
		s = strings.TrimRightFunc(s, isWhiteSpace)
	}
	return s
}

// isWhiteSpace is Unicode White_Space, the set of Rust's char::is_whitespace
// and of \s in the regex engines Hugging Face uses.
func isWhiteSpace(r rune) bool {
	if r < 0x80 {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return unicode.Is(unicode.White_Space, r)
}
