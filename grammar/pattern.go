package grammar

import (
	"fmt"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// patternNode compiles a JSON Schema pattern into the content of a JSON string (without
// the quotes): the characters it matches, escaped as JSON requires. JSON Schema patterns
// are unanchored: without ^ and $ any text may come before and after a match.
func patternNode(re, path string, b *budget) (*node, error) {
	p, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return nil, &SchemaError{Path: path, Keyword: "pattern", Reason: err.Error()}
	}
	startAnchored, endAnchored := false, false
	if p.Op == syntax.OpConcat && len(p.Sub) > 0 {
		if p.Sub[0].Op == syntax.OpBeginText || p.Sub[0].Op == syntax.OpBeginLine {
			startAnchored, p.Sub = true, p.Sub[1:]
		}
		if n := len(p.Sub); n > 0 && (p.Sub[n-1].Op == syntax.OpEndText || p.Sub[n-1].Op == syntax.OpEndLine) {
			endAnchored, p.Sub = true, p.Sub[:n-1]
		}
	}
	body, err := regexNode(p, path, b, 1)
	if err != nil {
		return nil, err
	}
	parts := []*node{}
	if !startAnchored {
		parts = append(parts, star(jsonChar()))
	}
	parts = append(parts, body)
	if !endAnchored {
		parts = append(parts, star(jsonChar()))
	}
	n := seq(parts...)
	return n, schemaLimit(b.charge(n), path, "pattern")
}

// schemaLimit turns a budget error into a *SchemaError naming the keyword (the context's
// errors pass unchanged).
func schemaLimit(err error, path, keyword string) error {
	if le, ok := err.(*LimitError); ok {
		return &SchemaError{Path: path, Keyword: keyword, Reason: le.Error(), Err: le}
	}
	return err
}

// maxRegexRepeat bounds x{n,m} (and stands in for * and + inside patterns, which stay
// unbounded).
const maxRegexRepeat = 1000

// regexNode compiles re, at depth nesting levels, charging its nodes to b.
func regexNode(re *syntax.Regexp, path string, b *budget, depth int) (*node, error) {
	if err := b.depth(depth, "groups in the pattern"); err != nil {
		return nil, schemaLimit(err, path, "pattern")
	}
	n, err := regexOp(re, path, b, depth)
	if err != nil {
		return nil, err
	}
	return n, schemaLimit(b.charge(n), path, "pattern")
}

func regexOp(re *syntax.Regexp, path string, b *budget, depth int) (*node, error) {
	unsupported := func(what string) error {
		return &SchemaError{Path: path, Keyword: "pattern", Reason: what + " is not supported (only plain regular expressions are)"}
	}
	sub := func() ([]*node, error) {
		var kids []*node
		for _, s := range re.Sub {
			n, err := regexNode(s, path, b, depth+1)
			if err != nil {
				return nil, err
			}
			kids = append(kids, n)
		}
		return kids, nil
	}
	switch re.Op {
	case syntax.OpEmptyMatch:
		return empty(), nil
	case syntax.OpNoMatch:
		return fail(), nil
	case syntax.OpLiteral:
		var kids []*node
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && unicode.SimpleFold(r) != r {
				kids = append(kids, runeClass([]rune{r, r, unicode.SimpleFold(r), unicode.SimpleFold(r)}, b))
			} else {
				kids = append(kids, runeLit(r))
			}
		}
		return seq(kids...), nil
	case syntax.OpCharClass:
		return runeClass(re.Rune, b), nil
	case syntax.OpAnyCharNotNL:
		return runeClass([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}, b), nil
	case syntax.OpAnyChar:
		return runeClass([]rune{0, unicode.MaxRune}, b), nil
	case syntax.OpCapture:
		kids, err := sub()
		if err != nil {
			return nil, err
		}
		return kids[0], nil
	case syntax.OpConcat:
		kids, err := sub()
		return seq(kids...), err
	case syntax.OpAlternate:
		kids, err := sub()
		return alt(kids...), err
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := re.Min, re.Max
		switch re.Op {
		case syntax.OpStar:
			lo, hi = 0, -1
		case syntax.OpPlus:
			lo, hi = 1, -1
		case syntax.OpQuest:
			lo, hi = 0, 1
		}
		if lo > maxRegexRepeat || hi > maxRegexRepeat {
			return nil, unsupported(fmt.Sprintf("a repetition over %d", maxRegexRepeat))
		}
		kids, err := sub()
		if err != nil {
			return nil, err
		}
		return rep(kids[0], lo, hi), nil
	case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpEndLine, syntax.OpEndText:
		return nil, unsupported("an anchor inside the pattern")
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil, unsupported(`\b`)
	}
	return nil, unsupported(re.Op.String())
}

// runeLit is one character as it appears inside a JSON string.
func runeLit(r rune) *node {
	return lit(jsonRune(r))
}

// jsonRune is a character's encoding inside a JSON string: escaped where JSON requires.
func jsonRune(r rune) []byte {
	switch r {
	case '"':
		return []byte(`\"`)
	case '\\':
		return []byte(`\\`)
	case '\n':
		return []byte(`\n`)
	case '\r':
		return []byte(`\r`)
	case '\t':
		return []byte(`\t`)
	case '\b':
		return []byte(`\b`)
	case '\f':
		return []byte(`\f`)
	}
	if r < 0x20 {
		return []byte(fmt.Sprintf(`\u%04x`, r))
	}
	return utf8.AppendRune(nil, r)
}

// runeClass is a set of characters given as inclusive rune range pairs, encoded as JSON
// string content: the characters JSON must escape (quote, backslash, controls) become
// their escapes; the rest become UTF-8 byte sequences. Its nodes are charged to b as they
// are made (on a budget error it stops; b.err says why).
func runeClass(ranges []rune, b *budget) *node {
	var kids []*node
	for i := 0; i+1 < len(ranges) && b.err == nil; i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		first := len(kids)
		// Split out the characters that need escapes.
		for r := lo; r <= hi && r < 0x80; {
			if r < 0x20 || r == '"' || r == '\\' {
				kids = append(kids, lit(jsonRune(r)))
				r++
				continue
			}
			end := r
			for end+1 <= hi && end+1 < 0x80 && !(end+1 < 0x20 || end+1 == '"' || end+1 == '\\') {
				end++
			}
			kids = append(kids, byteRange(byte(r), byte(end)))
			r = end + 1
		}
		if hi >= 0x80 {
			kids = appendUTF8(kids, max(lo, 0x80), hi)
		}
		for _, k := range kids[first:] {
			b.charge(k)
		}
	}
	return alt(kids...)
}

// appendUTF8 appends the byte sequences of the code points lo..hi, 0x80 ≤ lo, leaving out
// the surrogates (not encodable).
func appendUTF8(kids []*node, lo, hi rune) []*node {
	for _, seg := range [][2]rune{{lo, min(hi, 0xD7FF)}, {max(lo, 0xE000), hi}} {
		if seg[0] <= seg[1] {
			kids = append(kids, utf8Range(seg[0], seg[1])...)
		}
	}
	return kids
}

// utf8Range is the byte sequences of the code points lo..hi (no surrogates), split so that
// each piece is a sequence of byte ranges.
func utf8Range(lo, hi rune) []*node {
	// Split at the encoding-length boundaries.
	for _, b := range []rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= b && b < hi {
			return append(utf8Range(lo, b), utf8Range(b+1, hi)...)
		}
	}
	var a, z [utf8.UTFMax]byte
	n := utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(z[:], hi)
	return utf8Same(a[:n], z[:n])
}

// utf8Same splits the byte strings a..z of one length into sequences of ranges: the
// classic prefix split, with continuation bytes 0x80..0xBF.
func utf8Same(a, z []byte) []*node {
	if len(a) == 1 {
		return []*node{byteRange(a[0], z[0])}
	}
	if a[0] == z[0] {
		var out []*node
		for _, tail := range utf8Same(a[1:], z[1:]) {
			out = append(out, seq(lit([]byte{a[0]}), tail))
		}
		return out
	}
	lowTail, highTail := make([]byte, len(a)-1), make([]byte, len(a)-1)
	for i := range lowTail {
		lowTail[i], highTail[i] = 0x80, 0xBF
	}
	var out []*node
	for _, tail := range utf8Same(a[1:], highTail) {
		out = append(out, seq(lit([]byte{a[0]}), tail))
	}
	if a[0]+1 <= z[0]-1 {
		mid := []*node{byteRange(a[0]+1, z[0]-1)}
		for range len(a) - 1 {
			mid = append(mid, byteRange(0x80, 0xBF))
		}
		out = append(out, seq(mid...))
	}
	for _, tail := range utf8Same(lowTail, z[1:]) {
		out = append(out, seq(lit([]byte{z[0]}), tail))
	}
	return out
}
