package grammar

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// GBNFError reports a malformed GBNF grammar, with the line of the fault.
type GBNFError struct {
	Line   int
	Reason string
	Err    error // a *LimitError when the grammar went past a limit
}

func (e *GBNFError) Error() string { return fmt.Sprintf("gbnf line %d: %s", e.Line, e.Reason) }

func (e *GBNFError) Unwrap() error { return e.Err }

// GBNF compiles a grammar in llama.cpp's GBNF notation: rules `name ::= alternatives`,
// the start rule named root; "literals" with \n \t \r \" \\ \xHH \uHHHH escapes; character
// classes [a-z] and negated [^…] (over code points); groups ( … ); repetition *, +, ? and
// {m}, {m,}, {m,n}; # comments. Rules may recurse; recursion is unrolled a fixed depth (as
// for JSON Schema references), which keeps every output inside the language. Groups nest at
// most MaxDepth deep.
func (c *Compiler) GBNF(src string) (*Grammar, error) {
	prefix := c.prefix()
	p := &gbnfParser{src: src, line: 1, rules: map[string]*node{}, prefix: prefix, b: &c.b}
	if err := p.parse(); err != nil {
		return nil, err
	}
	if _, ok := p.rules["root"]; !ok {
		return nil, &GBNFError{Line: 1, Reason: "no rule named root"}
	}
	for name := range p.used {
		if _, ok := p.rules[name]; !ok {
			return nil, &GBNFError{Line: p.used[name], Reason: fmt.Sprintf("rule %q is used but not defined", name)}
		}
	}
	for name, n := range p.rules {
		c.rules[prefix+name] = n
	}
	return c.Compile(Expr{ref(prefix + "root"), c})
}

type gbnfParser struct {
	src    string
	pos    int
	line   int
	rules  map[string]*node
	used   map[string]int // rule name → line of first use
	prefix string         // of the rule names in the compiler
	b      *budget
	depth  int // groups open
}

func (p *gbnfParser) errf(format string, args ...any) error {
	return &GBNFError{Line: p.line, Reason: fmt.Sprintf(format, args...)}
}

// limit reports a budget error (a limit, or the context) at the current line.
func (p *gbnfParser) limit(err error) error {
	if _, ok := err.(*LimitError); ok {
		return &GBNFError{Line: p.line, Reason: err.Error(), Err: err}
	}
	return err
}

// space skips blanks and comments; newlines too when nl is set.
func (p *gbnfParser) space(nl bool) {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '\n' && nl:
			p.pos++
			p.line++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *gbnfParser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *gbnfParser) parse() error {
	p.used = map[string]int{}
	for {
		p.space(true)
		if p.pos >= len(p.src) {
			return nil
		}
		name := p.name()
		if name == "" {
			return p.errf("expected a rule name, got %q", p.src[p.pos:min(p.pos+10, len(p.src))])
		}
		p.space(false)
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return p.errf("expected ::= after %q", name)
		}
		p.pos += 3
		if _, dup := p.rules[name]; dup {
			return p.errf("rule %q defined twice", name)
		}
		n, err := p.alternatives(false)
		if err != nil {
			return err
		}
		if err := p.b.charge(n); err != nil {
			return p.limit(err)
		}
		p.rules[name] = n
	}
}

// alternatives parses seq | seq …; inside a group newlines are blanks, at top level a
// newline ends the rule unless the next line continues it with |.
func (p *gbnfParser) alternatives(group bool) (*node, error) {
	var alts []*node
	for {
		s, err := p.sequence(group)
		if err != nil {
			return nil, err
		}
		alts = append(alts, s)
		p.space(group)
		if !group {
			// A following line starting with | continues the rule.
			save, line := p.pos, p.line
			p.space(true)
			if p.pos < len(p.src) && p.src[p.pos] == '|' {
				p.pos++
				continue
			}
			p.pos, p.line = save, line
			return alt(alts...), nil
		}
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		return alt(alts...), nil
	}
}

func (p *gbnfParser) sequence(group bool) (*node, error) {
	var items []*node
	for {
		p.space(group)
		if p.pos >= len(p.src) {
			break
		}
		c := p.src[p.pos]
		if c == '|' || c == ')' || c == '\n' {
			break
		}
		// A name followed by ::= starts the next rule.
		if isNameByte(c) {
			save := p.pos
			p.name()
			p.space(false)
			next := strings.HasPrefix(p.src[p.pos:], "::=")
			p.pos = save
			if next {
				break
			}
		}
		item, err := p.item(group)
		if err != nil {
			return nil, err
		}
		item, err = p.repetition(item)
		if err != nil {
			return nil, err
		}
		if err := p.b.charge(item); err != nil {
			return nil, p.limit(err)
		}
		items = append(items, item)
	}
	n := seq(items...)
	return n, p.limit(p.b.charge(n))
}

func (p *gbnfParser) item(group bool) (*node, error) {
	c := p.src[p.pos]
	switch {
	case c == '"':
		p.pos++
		var b []byte
		for {
			if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
				return nil, p.errf("unterminated literal")
			}
			if p.src[p.pos] == '"' {
				p.pos++
				return lit(b), nil
			}
			r, err := p.char()
			if err != nil {
				return nil, err
			}
			b = utf8.AppendRune(b, r)
		}
	case c == '[':
		return p.class()
	case c == '(':
		p.pos++
		p.depth++
		if err := p.b.depth(p.depth, "( ) groups"); err != nil {
			return nil, p.limit(err)
		}
		n, err := p.alternatives(true)
		p.depth--
		if err != nil {
			return nil, err
		}
		p.space(true)
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return nil, p.errf("expected )")
		}
		p.pos++
		return n, nil
	case c == '.':
		p.pos++
		return utf8Class([]rune{0, '\n' - 1, '\n' + 1, utf8.MaxRune}, p.b), nil
	case isNameByte(c):
		name := p.name()
		if _, ok := p.used[name]; !ok {
			p.used[name] = p.line
		}
		return ref(p.prefix + name), nil
	}
	return nil, p.errf("unexpected %q", c)
}

// char reads one possibly escaped character of a literal or class.
func (p *gbnfParser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += size
		return r, nil
	}
	p.pos++
	if p.pos >= len(p.src) {
		return 0, p.errf("escape at the end")
	}
	e := p.src[p.pos]
	p.pos++
	switch e {
	case 'n':
		return '\n', nil
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case '"', '\\', '[', ']', '-', '^':
		return rune(e), nil
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
		if p.pos+n > len(p.src) {
			return 0, p.errf("short \\%c escape", e)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return 0, p.errf("bad \\%c escape", e)
		}
		p.pos += n
		return rune(v), nil
	}
	return 0, p.errf("unknown escape \\%c", e)
}

func (p *gbnfParser) class() (*node, error) {
	p.pos++ // [
	negate := p.pos < len(p.src) && p.src[p.pos] == '^'
	if negate {
		p.pos++
	}
	var ranges []rune
	for {
		if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
			return nil, p.errf("unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.errf("class range %q-%q is backwards", lo, hi)
			}
		}
		ranges = append(ranges, lo, hi)
	}
	if negate {
		ranges = complementRanges(ranges)
	}
	n := utf8Class(ranges, p.b)
	return n, p.limit(p.b.err)
}

// complementRanges returns the code points outside the pairs (lo, hi, lo, hi, …), as
// sorted pairs: sorted and merged first, then the gaps between them. Surrogates are left
// in; utf8Class drops them.
func complementRanges(pairs []rune) []rune {
	type span struct{ lo, hi rune }
	spans := make([]span, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		spans = append(spans, span{pairs[i], pairs[i+1]})
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.lo - b.lo) })
	var out []rune
	next := rune(0) // the lowest code point not yet covered or emitted
	for _, sp := range spans {
		if sp.lo > next {
			out = append(out, next, sp.lo-1)
		}
		next = max(next, sp.hi+1)
	}
	if next <= utf8.MaxRune {
		out = append(out, next, utf8.MaxRune)
	}
	return out
}

// utf8Class is the raw UTF-8 encodings of the code points in the pairs (GBNF matches text,
// not JSON string content), its nodes charged to b as they are made (on a budget error it
// stops; b.err says why).
func utf8Class(pairs []rune, b *budget) *node {
	var kids []*node
	for i := 0; i+1 < len(pairs) && b.err == nil; i += 2 {
		lo, hi := pairs[i], pairs[i+1]
		first := len(kids)
		if lo < 0x80 {
			kids = append(kids, byteRange(byte(lo), byte(min(hi, 0x7F))))
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

func (p *gbnfParser) repetition(n *node) (*node, error) {
	if p.pos >= len(p.src) {
		return n, nil
	}
	switch p.src[p.pos] {
	case '*':
		p.pos++
		return star(n), nil
	case '+':
		p.pos++
		return rep(n, 1, -1), nil
	case '?':
		p.pos++
		return opt(n), nil
	case '{':
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return nil, p.errf("unterminated {")
		}
		body := p.src[p.pos+1 : p.pos+end]
		p.pos += end + 1
		lo, hi, comma := body, body, false
		if i := strings.IndexByte(body, ','); i >= 0 {
			lo, hi, comma = body[:i], body[i+1:], true
		}
		m, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || m < 0 || m > maxRegexRepeat {
			return nil, p.errf("bad repetition {%s}", body)
		}
		x := m
		if comma {
			x = -1
			if t := strings.TrimSpace(hi); t != "" {
				if x, err = strconv.Atoi(t); err != nil || x < m || x > maxRegexRepeat {
					return nil, p.errf("bad repetition {%s}", body)
				}
			}
		}
		return rep(n, m, x), nil
	}
	return n, nil
}
