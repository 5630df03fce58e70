package tokenizer

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// precompiled is SentencePiece's compiled normalizer (precompiled_charsmap
// in tokenizer.json, from the model's normalizer_spec): a double-array trie
// (darts) of byte strings, each mapped to a replacement stored NUL-ended in
// a string blob. As Hugging Face applies it: each grapheme cluster shorter
// than 6 bytes is looked up as a whole and, when some key is a prefix of it,
// the whole cluster becomes the replacement of the shortest such key;
// otherwise each of its characters is looked up the same way and replaced
// or kept.
type precompiled struct {
	units      []uint32 // the trie
	normalized string   // replacements, NUL-ended
}

// parsePrecompiled reads the base64 charsmap: a little-endian uint32 byte
// length of the trie, the trie's uint32 units, then the replacement blob.
func parsePrecompiled(b64 string) (normalizer, error) {
	blob, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, invalidf("normalizer Precompiled: precompiled_charsmap is not base64: %v", err)
	}
	if len(blob) == 0 {
		return nil, nil // SentencePiece models with the identity rule carry an empty map
	}
	if len(blob) < 4 {
		return nil, invalidf("normalizer Precompiled: precompiled_charsmap of %d bytes is truncated", len(blob))
	}
	size := binary.LittleEndian.Uint32(blob)
	if size%4 != 0 || uint64(size) > uint64(len(blob)-4) || size == 0 {
		return nil, invalidf("normalizer Precompiled: trie size %d does not fit the %d-byte charsmap", size, len(blob))
	}
	p := &precompiled{units: make([]uint32, size/4), normalized: string(blob[4+size:])}
	for i := range p.units {
		p.units[i] = binary.LittleEndian.Uint32(blob[4+4*i:])
	}
	return p, nil
}

// Darts unit layout: bits 0-7 label (with bit 31 for a value unit), bit 8
// "has a leaf", bits 10-30 the offset (shifted by 8 more when bit 9 is set).
func dartsOffset(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }
func dartsLabel(u uint32) uint32  { return u & (1<<31 | 0xff) }
func dartsHasLeaf(u uint32) bool  { return (u>>8)&1 == 1 }
func dartsValue(u uint32) uint32  { return u & (1<<31 - 1) }

// transform returns the replacement of the shortest key that is a prefix of
// chunk.
func (p *precompiled) transform(chunk string) (string, bool) {
	pos := dartsOffset(p.units[0])
	for i := 0; i < len(chunk); i++ {
		c := chunk[i]
		if c == 0 {
			return "", false
		}
		pos ^= uint32(c)
		if int(pos) >= len(p.units) {
			return "", false
		}
		u := p.units[pos]
		if dartsLabel(u) != uint32(c) {
			return "", false
		}
		pos ^= dartsOffset(u)
		if int(pos) >= len(p.units) {
			return "", false
		}
		if dartsHasLeaf(u) {
			at := int(dartsValue(p.units[pos]))
			if at > len(p.normalized) {
				return "", false
			}
			end := strings.IndexByte(p.normalized[at:], 0)
			if end < 0 {
				end = len(p.normalized) - at
			}
			return p.normalized[at : at+end], true
		}
	}
	return "", false
}

func (p *precompiled) normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	state := -1
	for s != "" {
		var g string
		g, s, _, state = uniseg.FirstGraphemeClusterInString(s, state)
		if len(g) < 6 {
			if r, ok := p.transform(g); ok {
				b.WriteString(r)
				continue
			}
		}
		for len(g) > 0 {
			_, size := utf8.DecodeRuneInString(g)
			if r, ok := p.transform(g[:size]); ok {
				b.WriteString(r)
			} else {
				b.WriteString(g[:size])
			}
			g = g[size:]
		}
	}
	return b.String()
}
