package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// byteToChar is GPT-2's reversible byte → printable character map used by
// byte-level vocabularies; charToByte is its inverse (-1: not a byte
// character). All the characters are below U+0144.
var byteToChar, charToByte = func() (b2c [256]string, c2b [0x200]int16) {
	for i := range c2b {
		c2b[i] = -1
	}
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if !printable {
			r = rune(256 + n)
			n++
		}
		b2c[b] = string(r)
		c2b[r] = int16(b)
	}
	return b2c, c2b
}()

// byteLevelEncode maps every byte of s to its GPT-2 character.
func byteLevelEncode(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteString(byteToChar[s[i]])
	}
	return b.String()
}

// byteLevelDecode maps a byte-level token back to its bytes; ok is false if
// some character is outside the byte alphabet.
func byteLevelDecode(tok string) (raw []byte, ok bool) {
	raw = make([]byte, 0, len(tok))
	for _, r := range tok {
		if r >= rune(len(charToByte)) || charToByte[r] < 0 {
			return nil, false
		}
		raw = append(raw, byte(charToByte[r]))
	}
	return raw, true
}

// lossyUTF8 converts bytes to a string like Rust's String::from_utf8_lossy:
// each maximal invalid subsequence becomes one U+FFFD.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			out = append(out, b[i])
			i++
			continue
		}
		if r, size := utf8.DecodeRune(b[i:]); r != utf8.RuneError || size > 1 {
			out = append(out, b[i:i+size]...)
			i += size
			continue
		}
		out = append(out, "\uFFFD"...)
		i += invalidPrefixLen(b[i:])
	}
	return string(out)
}

// invalidPrefixLen returns how many bytes of b (which does not start with a
// valid character) form one maximal invalid subpart (1 to 3).
func invalidPrefixLen(b []byte) int {
	first := b[0]
	var width int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case first >= 0xC2 && first <= 0xDF:
		width = 2
	case first == 0xE0:
		width, lo = 3, 0xA0
	case first >= 0xE1 && first <= 0xEC, first == 0xEE, first == 0xEF:
		width = 3
	case first == 0xED:
		width, hi = 3, 0x9F
	case first == 0xF0:
		width, lo = 4, 0x90
	case first >= 0xF1 && first <= 0xF3:
		width = 4
	case first == 0xF4:
		width, hi = 4, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 1; k < width; k++ {
		if k >= len(b) {
			return n
		}
		c := b[k]
		if k == 1 && (c < lo || c > hi) {
			return n
		}
		if k > 1 && (c < 0x80 || c > 0xBF) {
			return n
		}
		n++
	}
	return n // unreachable for input that is invalid at b[0]
}
