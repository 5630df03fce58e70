package chat

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The Jinja engine used here differs from Hugging Face's environment in
// ways that cannot be changed from outside it: its whitespace control looks
// past expressions for the nearest text, it decodes few string escapes, its
// operator precedence is not Jinja2's, and its built-in filters cannot be
// replaced. rewriteSource therefore lexes the template the way Jinja2 does
// and hands the engine an equivalent program:
//
//   - whitespace control (-/+ markers, trim_blocks, lstrip_blocks, comments,
//     raw blocks) is applied here, and every remaining text run becomes a
//     string literal output, so the engine's own trimming has nothing to act on;
//   - string literals are re-encoded with all of Python's escapes decoded;
//   - expressions are re-emitted fully parenthesised with Jinja2's
//     precedence, with Python semantics for arithmetic on undefined, *,
//     slices and printing (expr.go);
//   - filters that must behave like Jinja2's are renamed to the
//     environment's versions (hfFilters);
//   - the iterable of every for loop is checked, so iterating an undefined
//     or none value is an error as in Hugging Face's renderers;
//   - macro bodies count their depth, so runaway recursion is an error;
//   - every loop iteration, macro call, printed value and text run, and
//     the functions above are metered against the rendering's Budget
//     (budget.go); str.replace calls go to the metered replace.

// pieceKind is the kind of one lexed template piece.
type pieceKind int

const (
	pieceText    pieceKind = iota
	pieceExpr              // {{ ... }}
	pieceStmt              // {% ... %}
	pieceComment           // {# ... #}
)

type piece struct {
	kind pieceKind
	body string // text, or the tag's content without delimiters and markers
	// lmod and rmod are the whitespace markers after the opening and before
	// the closing delimiter: '-', '+', or 0.
	lmod, rmod byte
}

// hfFilters maps filter names to the environment's replacements.
var hfFilters = map[string]string{
	"tojson":     "__hf_tojson",
	"join":       "__hf_join",
	"replace":    "__hf_replace",
	"indent":     "__hf_indent",
	"selectattr": "__hf_selectattr",
	"rejectattr": "__hf_rejectattr",
	"sort":       "__hf_sort",
	"dictsort":   "__hf_dictsort",
	"unique":     "__hf_unique",
	"int":        "__hf_int",
	"float":      "__hf_float",
	"map":        "__hf_map",
	"string":     "__hf_string",
}

var endRawRe = regexp.MustCompile(`\{%([-+]?)\s*endraw\s*([-+]?)%\}`)

// lexTemplate splits src into text and tag pieces like Jinja2's lexer.
func lexTemplate(src string) ([]piece, error) {
	var out []piece
	i, tags := 0, 0
	for i < len(src) {
		start := nextTagStart(src, i)
		if start < 0 {
			out = append(out, piece{kind: pieceText, body: src[i:]})
			break
		}
		if start > i {
			out = append(out, piece{kind: pieceText, body: src[i:start]})
		}
		var kind pieceKind
		var closer string
		switch src[start+1] {
		case '{':
			kind, closer = pieceExpr, "}}"
		case '%':
			kind, closer = pieceStmt, "%}"
		default:
			kind, closer = pieceComment, "#}"
		}
		if tags++; tags > maxTags {
			return nil, &BudgetError{Limit: "tags", Detail: fmt.Sprintf("more than %d tags", maxTags)}
		}
		p := piece{kind: kind}
		j := start + 2
		if j < len(src) && (src[j] == '-' || (src[j] == '+' && kind != pieceExpr)) {
			p.lmod = src[j]
			j++
		}
		end := findCloser(src, j, closer, kind != pieceComment)
		if end < 0 {
			return nil, fmt.Errorf("unclosed tag at byte %d: no %q", start, closer)
		}
		body := src[j:end]
		if n := len(body); n > 0 && (body[n-1] == '-' || (body[n-1] == '+' && kind != pieceExpr)) {
			p.rmod = body[n-1]
			body = body[:n-1]
		}
		p.body = body
		i = end + 2
		if kind == pieceStmt && strings.TrimSpace(body) == "raw" {
			m := endRawRe.FindStringSubmatchIndex(src[i:])
			if m == nil {
				return nil, fmt.Errorf("raw block at byte %d has no endraw", start)
			}
			out = append(out, p,
				piece{kind: pieceText, body: src[i : i+m[0]]},
				piece{kind: pieceComment, lmod: modAt(src, i+m[2], i+m[3]), rmod: modAt(src, i+m[4], i+m[5])})
			i += m[1]
			continue
		}
		out = append(out, p)
	}
	// The raw opening tag itself renders nothing: treat it as a comment.
	for k := range out {
		if out[k].kind == pieceStmt && strings.TrimSpace(out[k].body) == "raw" {
			out[k].kind = pieceComment
		}
	}
	return out, nil
}

func modAt(s string, from, to int) byte {
	if to > from {
		return s[from]
	}
	return 0
}

func nextTagStart(src string, from int) int {
	for i := from; i+1 < len(src); i++ {
		if src[i] == '{' && (src[i+1] == '{' || src[i+1] == '%' || src[i+1] == '#') {
			return i
		}
	}
	return -1
}

// findCloser returns the index of closer at or after from, skipping string
// literals when quoted is set.
func findCloser(src string, from int, closer string, quoted bool) int {
	for i := from; i+1 < len(src); i++ {
		c := src[i]
		if quoted && (c == '\'' || c == '"') {
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' {
					i++
				}
			}
			continue
		}
		if c == closer[0] && src[i+1] == closer[1] {
			return i
		}
	}
	return -1
}

// applyWhitespace applies Jinja2's whitespace control with Hugging Face's
// trim_blocks=True and lstrip_blocks=True to the text pieces, in place.
func applyWhitespace(ps []piece) {
	for i := range ps {
		if ps[i].kind != pieceText {
			continue
		}
		text := strings.ReplaceAll(ps[i].body, "\r\n", "\n")
		lineStarting := i == 0
		if i > 0 {
			prev := ps[i-1]
			before := text
			switch {
			case prev.rmod == '-':
				text = strings.TrimLeftFunc(text, unicode.IsSpace)
			case prev.kind != pieceExpr && prev.rmod != '+':
				text = strings.TrimPrefix(text, "\n")
			}
			consumed := before[:len(before)-len(text)]
			lineStarting = strings.HasSuffix(consumed, "\n")
		}
		if i+1 < len(ps) {
			next := ps[i+1]
			switch {
			case next.lmod == '-':
				text = strings.TrimRightFunc(text, unicode.IsSpace)
			case next.kind != pieceExpr && next.lmod != '+':
				lpos := strings.LastIndexByte(text, '\n') + 1
				if (lpos > 0 || lineStarting) && isAllSpace(text[lpos:]) {
					text = text[:lpos]
				}
			}
		}
		ps[i].body = text
	}
}

// stmtKeyword returns the first word of a statement tag's body.
func stmtKeyword(body string) string {
	body = strings.TrimSpace(body)
	end := strings.IndexFunc(body, func(r rune) bool { return !unicode.IsLetter(r) && r != '_' })
	if end < 0 {
		return body
	}
	return body[:end]
}

func isAllSpace(s string) bool {
	return strings.TrimFunc(s, unicode.IsSpace) == ""
}

// rewriteSource turns src into the equivalent program for the engine.
func rewriteSource(src string) (string, error) {
	ps, err := lexTemplate(src)
	if err != nil {
		return "", err
	}
	applyWhitespace(ps)
	// Jinja2's keep_trailing_newline=False drops one final newline.
	if n := len(ps); n > 0 && ps[n-1].kind == pieceText {
		ps[n-1].body = strings.TrimSuffix(ps[n-1].body, "\n")
	}
	var b strings.Builder
	for _, p := range ps {
		switch p.kind {
		case pieceText:
			if p.body != "" {
				b.WriteString("{{ __hf_print(")
				b.WriteString(quoteLiteral(p.body))
				b.WriteString(") }}")
			}
		case pieceExpr:
			body, err := rewriteCode(p.body, false)
			if err != nil {
				return "", err
			}
			// Print floats, lists and dicts as Python does.
			// __hf_print also counts the text against the budget.
			b.WriteString("{{ __hf_print(" + body + ") }}")
		case pieceStmt:
			body, err := rewriteCode(p.body, true)
			if err != nil {
				return "", err
			}
			// Count macro depth so runaway recursion is an error, not a
			// stack overflow that would kill the process.
			kw := stmtKeyword(p.body)
			if kw == "endmacro" {
				b.WriteString("{{ __hf_leave_macro() }}")
			}
			b.WriteString("{% " + body + " %}")
			if kw == "macro" {
				b.WriteString("{{ __hf_enter_macro() }}")
			}
			// Every loop iteration is a step of the budget.
			if kw == "for" {
				b.WriteString("{{ __hf_step() }}")
			}
		}
	}
	return b.String(), nil
}

// quoteLiteral encodes s as a string literal the engine decodes back to s.
func quoteLiteral(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// codeToken is one token of a tag body: a string literal, a name, or any
// other single character (whitespace included).
type codeToken struct {
	text  string // source text
	str   string // decoded value, for string literals
	isStr bool
	name  bool
}

func tokenizeCode(s string) ([]codeToken, error) {
	var toks []codeToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string literal in %q", s)
			}
			val, err := unescapePython(s[i+1 : j])
			if err != nil {
				return nil, err
			}
			toks = append(toks, codeToken{text: s[i : j+1], str: val, isStr: true})
			i = j + 1
		case c == '_' || isASCIILetter(c):
			j := i + 1
			for j < len(s) && (s[j] == '_' || isASCIILetter(s[j]) || (s[j] >= '0' && s[j] <= '9')) {
				j++
			}
			toks = append(toks, codeToken{text: s[i:j], name: true})
			i = j
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			toks = append(toks, codeToken{text: s[i : i+n]})
			i += n
		}
	}
	return toks, nil
}

func isASCIILetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// rewriteCode re-encodes string literals and renames Hugging Face
// filters everywhere in a tag, and re-emits the expressions of output tags
// and of if/elif/for/set statements with Jinja2's precedence (see
// translateExpr); a for loop's iterable is checked by __hf_iterable.
func rewriteCode(body string, stmt bool) (string, error) {
	toks, err := tokenizeCode(body)
	if err != nil {
		return "", err
	}
	// Brackets nest the engine's parser as deep as they go, also where the
	// translator leaves code as written.
	depth := 0
	for _, t := range toks {
		switch t.text {
		case "(", "[", "{":
			if depth++; depth > maxExprDepth {
				return "", nestingError()
			}
		case ")", "]", "}":
			depth--
		}
	}
	for k := range toks {
		if toks[k].name {
			if repl, ok := hfFilters[toks[k].text]; ok && prevSignificant(toks, k) == "|" {
				toks[k].text = repl
			}
		}
	}
	if !stmt {
		return translateOr(toks)
	}
	first := nextSignificant(toks, 0)
	if first >= len(toks) {
		return plainCode(toks), nil
	}
	switch toks[first].text {
	case "if", "elif":
		x, err := translateOr(toks[first+1:])
		return plainCode(toks[:first+1]) + " " + x, err
	case "set":
		if eq := assignIndex(toks); eq >= 0 {
			x, err := translateOr(toks[eq+1:])
			return plainCode(toks[:eq+1]) + " " + x, err
		}
	case "for":
		start, end := forIterable(toks)
		if start < 0 {
			break
		}
		iter, err := translateOr(toks[start:end])
		if err != nil {
			return "", err
		}
		out := plainCode(toks[:start]) + " __hf_iterable(" + iter + ") "
		if end < len(toks) && toks[end].text == "if" {
			rec := len(toks)
			for k := end + 1; k < len(toks); k++ {
				if toks[k].name && toks[k].text == "recursive" {
					rec = k
				}
			}
			cond, err := translateOr(toks[end+1 : rec])
			return out + "if " + cond + " " + plainCode(toks[rec:]), err
		}
		return out + plainCode(toks[end:]), nil
	}
	return plainCode(toks), nil
}

// translateOr re-emits an expression, or returns it as written if it uses
// syntax the translator does not know (the engine may still accept it). An
// expression nested past maxExprDepth is an error either way.
func translateOr(toks []codeToken) (string, error) {
	out, err := translateExpr(toks)
	if errors.Is(err, ErrLimit) {
		return "", err
	}
	if err != nil {
		return plainCode(toks), nil
	}
	return out, nil
}

// plainCode writes tokens back with string literals re-encoded.
func plainCode(toks []codeToken) string {
	var b strings.Builder
	for _, t := range toks {
		if t.isStr {
			b.WriteString(quoteLiteral(t.str))
		} else {
			b.WriteString(t.text)
		}
	}
	return b.String()
}

func nextSignificant(toks []codeToken, k int) int {
	for k < len(toks) && strings.TrimSpace(toks[k].text) == "" {
		k++
	}
	return k
}

// assignIndex returns the index of the "=" of "set target = value" at
// bracket depth 0, or -1 (a block set has none).
func assignIndex(toks []codeToken) int {
	depth := 0
	for k, t := range toks {
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case "=":
			prev := prevSignificant(toks, k)
			nextIsEq := k+1 < len(toks) && toks[k+1].text == "="
			if depth == 0 && !nextIsEq && prev != "=" && prev != "!" && prev != "<" && prev != ">" {
				return k
			}
		}
	}
	return -1
}

func prevSignificant(toks []codeToken, k int) string {
	for j := k - 1; j >= 0; j-- {
		if strings.TrimSpace(toks[j].text) != "" {
			return toks[j].text
		}
	}
	return ""
}

// forIterable finds the token span [start, end) of the iterable in
// "for targets in ITERABLE [if cond] [recursive]", or -1, -1.
func forIterable(toks []codeToken) (start, end int) {
	k := 0
	for k < len(toks) && strings.TrimSpace(toks[k].text) == "" {
		k++
	}
	if k >= len(toks) || toks[k].text != "for" {
		return -1, -1
	}
	depth := 0
	start = -1
	for k++; k < len(toks); k++ {
		t := toks[k]
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		}
		if depth != 0 || !t.name {
			continue
		}
		if start < 0 && t.text == "in" {
			start = k + 1
			continue
		}
		if start >= 0 && (t.text == "if" || t.text == "recursive") {
			return start, k
		}
	}
	if start < 0 {
		return -1, -1
	}
	return start, len(toks)
}

// unescapePython decodes the escapes of a Python string literal body.
func unescapePython(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'a':
			b.WriteByte('\a')
		case '0':
			b.WriteByte(0)
		case '\\', '\'', '"':
			b.WriteByte(e)
		case '\n':
			// line continuation
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n >= len(s) {
				return "", fmt.Errorf("truncated \\%c escape in string literal", e)
			}
			var r rune
			for _, h := range s[i+1 : i+1+n] {
				d := strings.IndexRune("0123456789abcdef", unicode.ToLower(h))
				if d < 0 {
					return "", fmt.Errorf("bad \\%c escape in string literal", e)
				}
				r = r*16 + rune(d)
			}
			b.WriteRune(r)
			i += n
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), nil
}
