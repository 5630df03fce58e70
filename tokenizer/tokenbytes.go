package tokenizer

import "strings"

// TokenBytes returns the bytes a token adds to the text when it follows other tokens: the
// byte-level alphabet mapped back to bytes, a <0xNN> byte-fallback token as its byte, the
// SentencePiece "▁" as a space. Decoders that act only on the first token of a text (Strip,
// Metaspace's prepended space) are not applied. Special tokens and unknown ids report false:
// they stand for no text. Constrained decoding (package grammar) matches these bytes.
func (t *Tokenizer) TokenBytes(id int) ([]byte, bool) {
	tok, ok := t.Token(id)
	if !ok || t.IsSpecial(id) {
		return nil, false
	}
	if hasByteLevel(t.decoder) {
		if raw, ok := byteLevelDecode(tok); ok {
			return raw, true
		}
		return []byte(tok), true
	}
	if t.byteFallbackDecoder {
		if b, ok := fallbackByte(tok); ok {
			return []byte{b}, true
		}
	}
	return []byte(strings.ReplaceAll(tok, "▁", " ")), true
}

func hasByteLevel(d decoder) bool {
	switch d := d.(type) {
	case byteLevelDecoder:
		return true
	case sequenceDecoder:
		for _, sub := range d {
			if hasByteLevel(sub) {
				return true
			}
		}
	}
	return false
}
