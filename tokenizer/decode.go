package tokenizer

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// decoder turns token strings into text pieces, like Hugging Face's
// Decoder::decode_chain; the pieces are concatenated at the end.
type decoder interface {
	decode(tokens []string) []string
}

type decoderJSON struct {
	Type           string            `json:"type"`
	Decoders       []json.RawMessage `json:"decoders"`
	Pattern        patternJSON       `json:"pattern"`
	Content        string            `json:"content"`
	Start          int               `json:"start"`
	Stop           int               `json:"stop"`
	Replacement    string            `json:"replacement"`
	PrependScheme  string            `json:"prepend_scheme"`
	AddPrefixSpace *bool             `json:"add_prefix_space"`
	Prefix         *string           `json:"prefix"`
	Cleanup        *bool             `json:"cleanup"`
}

func parseDecoder(raw json.RawMessage) (decoder, error) {
	if isNull(raw) {
		return nil, nil
	}
	var j decoderJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, invalidf("decoder: %v", err)
	}
	switch j.Type {
	case "Sequence":
		var seq sequenceDecoder
		for _, r := range j.Decoders {
			d, err := parseDecoder(r)
			if err != nil {
				return nil, err
			}
			if d != nil {
				seq = append(seq, d)
			}
		}
		return seq, nil
	case "ByteLevel":
		return byteLevelDecoder{}, nil
	case "Replace":
		p, err := j.Pattern.compile("decoder Replace")
		if err != nil {
			return nil, err
		}
		return replaceDecoder{pattern: p, content: j.Content}, nil
	case "ByteFallback":
		return byteFallbackDecoder{}, nil
	case "Fuse":
		return fuseDecoder{}, nil
	case "Strip":
		if len(j.Content) != 1 && utf8.RuneCountInString(j.Content) != 1 {
			return nil, invalidf("decoder Strip content %q must be one character", j.Content)
		}
		r, _ := utf8.DecodeRuneInString(j.Content)
		return stripDecoder{content: r, start: j.Start, stop: j.Stop}, nil
	case "WordPiece":
		d := wordPieceDecoder{prefix: "##", cleanup: j.Cleanup == nil || *j.Cleanup}
		if j.Prefix != nil {
			d.prefix = *j.Prefix
		}
		return d, nil
	case "Metaspace":
		m := metaspaceDecoder{replacement: j.Replacement, prepend: j.PrependScheme != "never"}
		if j.PrependScheme == "" && j.AddPrefixSpace != nil {
			m.prepend = *j.AddPrefixSpace
		}
		if m.replacement == "" {
			m.replacement = "▁"
		}
		return m, nil
	}
	return nil, &UnsupportedError{Component: "decoder", Type: j.Type}
}

type sequenceDecoder []decoder

func hasByteFallback(d decoder) bool {
	switch d := d.(type) {
	case byteFallbackDecoder:
		return true
	case sequenceDecoder:
		for _, sub := range d {
			if hasByteFallback(sub) {
				return true
			}
		}
	}
	return false
}

func (seq sequenceDecoder) decode(tokens []string) []string {
	for _, d := range seq {
		tokens = d.decode(tokens)
	}
	return tokens
}

// byteLevelDecoder maps byte-level characters back to bytes. A token with a
// character outside the byte alphabet (an added token) keeps its UTF-8.
// Invalid UTF-8 becomes U+FFFD as in Rust's from_utf8_lossy.
type byteLevelDecoder struct{}

func (byteLevelDecoder) decode(tokens []string) []string {
	var buf []byte
	for _, tok := range tokens {
		if raw, ok := byteLevelDecode(tok); ok {
			buf = append(buf, raw...)
		} else {
			buf = append(buf, tok...)
		}
	}
	return []string{lossyUTF8(buf)}
}

type replaceDecoder struct {
	pattern pattern
	content string
}

func (r replaceDecoder) decode(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		out[i] = replaceAll(r.pattern, tok, r.content)
	}
	return out
}

// byteFallbackDecoder joins runs of <0xNN> tokens into text; a run that is
// not valid UTF-8 becomes one U+FFFD per byte.
type byteFallbackDecoder struct{}

func fallbackByte(tok string) (byte, bool) {
	if len(tok) != 6 || tok[:3] != "<0x" || tok[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexDigit(tok[3])
	lo, ok2 := hexDigit(tok[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func (byteFallbackDecoder) decode(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, tok := range tokens {
		if b, ok := fallbackByte(tok); ok {
			pending = append(pending, b)
			continue
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}

type fuseDecoder struct{}

func (fuseDecoder) decode(tokens []string) []string { return []string{strings.Join(tokens, "")} }

// stripDecoder removes up to start leading and stop trailing copies of
// content from every token.
type stripDecoder struct {
	content     rune
	start, stop int
}

func (s stripDecoder) decode(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		for k := 0; k < s.start; k++ {
			r, size := utf8.DecodeRuneInString(tok)
			if size == 0 || r != s.content {
				break
			}
			tok = tok[size:]
		}
		for k := 0; k < s.stop; k++ {
			r, size := utf8.DecodeLastRuneInString(tok)
			if size == 0 || r != s.content {
				break
			}
			tok = tok[:len(tok)-size]
		}
		out[i] = tok
	}
	return out
}

// metaspaceDecoder turns ▁ back into spaces; in the first token (unless
// prepend_scheme is "never") every ▁ is dropped instead, as Hugging Face does.
type metaspaceDecoder struct {
	replacement string
	prepend     bool
}

func (m metaspaceDecoder) decode(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		with := " "
		if i == 0 && m.prepend {
			with = ""
		}
		out[i] = strings.ReplaceAll(tok, m.replacement, with)
	}
	return out
}

// Decode turns ids into text. With skipSpecial, added tokens marked special
// (BOS, EOS, chat markers) are left out. An id outside the vocabulary is an
// *UnknownIDError.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) (_ string, err error) {
	defer catchRegex(&err)
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		tok, ok := t.Token(id)
		if !ok {
			return "", &UnknownIDError{ID: id, VocabSize: len(t.tokens)}
		}
		if skipSpecial && t.special[id] {
			continue
		}
		tokens = append(tokens, tok)
	}
	if t.decoder == nil {
		return strings.Join(tokens, " "), nil
	}
	return strings.Join(t.decoder.decode(tokens), ""), nil
}
