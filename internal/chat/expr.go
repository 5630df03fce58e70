package chat

import (
	"errors"
	"fmt"
	"strings"
)

// This file re-emits Jinja expressions for the engine. Expressions are
// parsed with Jinja2's grammar and precedence (which differ from the
// engine's: there filters bind tighter than unary minus, "is" sits at the
// comparison level and "~" below "+") and printed fully parenthesised, so
// the engine evaluates them the way Jinja2 would. Operands of arithmetic
// and ordering operators are passed through __hf_operand, which fails on
// undefined and none as both Hugging Face renderers do (the engine would
// silently treat them as "" or 0).

var errExprSyntax = errors.New("unsupported expression syntax")

// etok is an expression token: n name, s string, i int, f float, o operator,
// 0 end of input.
type etok struct {
	kind byte
	text string // source text; the decoded value for strings
}

func lexExpr(toks []codeToken) []etok {
	var out []etok
	for k := 0; k < len(toks); k++ {
		t := toks[k]
		switch {
		case t.isStr:
			out = append(out, etok{'s', t.str})
		case t.name:
			out = append(out, etok{'n', t.text})
		case strings.TrimSpace(t.text) == "":
			// skip
		case t.text[0] >= '0' && t.text[0] <= '9':
			num, kind := t.text, byte('i')
			for k+1 < len(toks) && isDigitTok(toks[k+1]) {
				k++
				num += toks[k].text
			}
			if k+2 < len(toks) && toks[k+1].text == "." && isDigitTok(toks[k+2]) {
				k++
				num += "."
				kind = 'f'
				for k+1 < len(toks) && isDigitTok(toks[k+1]) {
					k++
					num += toks[k].text
				}
			}
			out = append(out, etok{kind, num})
		default:
			op := t.text
			if k+1 < len(toks) {
				switch two := op + toks[k+1].text; two {
				case "==", "!=", "<=", ">=", "//", "**":
					op = two
					k++
				}
			}
			out = append(out, etok{'o', op})
		}
	}
	return append(out, etok{kind: 0})
}

func isDigitTok(t codeToken) bool { return len(t.text) == 1 && t.text[0] >= '0' && t.text[0] <= '9' }

type exprParser struct {
	toks  []etok
	pos   int
	depth int // levels of the re-emitted expression open at this point
}

// nest opens one more level of the re-emitted expression (a bracket, a
// not, a unary sign, an operator, a filter or an attribute step: each
// wraps what came before), failing past maxExprDepth: both this parser
// and the engine's recurse once per level, and each level copies the
// text inside it. The caller gives the levels back (p.depth -= n).
func (p *exprParser) nest() error {
	if p.depth++; p.depth > maxExprDepth {
		return nestingError()
	}
	return nil
}

func (p *exprParser) peek() etok { return p.toks[p.pos] }
func (p *exprParser) next() etok {
	t := p.toks[p.pos]
	if t.kind != 0 {
		p.pos++
	}
	return t
}
func (p *exprParser) isOp(s string) bool   { return p.peek().kind == 'o' && p.peek().text == s }
func (p *exprParser) isName(s string) bool { return p.peek().kind == 'n' && p.peek().text == s }
func (p *exprParser) expectOp(s string) error {
	if !p.isOp(s) {
		return fmt.Errorf("%w: want %q, found %q", errExprSyntax, s, p.peek().text)
	}
	p.next()
	return nil
}

// translateExpr parses toks as one Jinja expression and returns the
// engine's equivalent text.
func translateExpr(toks []codeToken) (string, error) {
	p := &exprParser{toks: lexExpr(toks)}
	out, err := p.cond()
	if err != nil {
		return "", err
	}
	if p.peek().kind != 0 {
		return "", fmt.Errorf("%w: unexpected %q", errExprSyntax, p.peek().text)
	}
	return out, nil
}

func (p *exprParser) cond() (string, error) {
	defer func(depth int) { p.depth = depth }(p.depth)
	if err := p.nest(); err != nil {
		return "", err
	}
	e, err := p.or()
	if err != nil {
		return "", err
	}
	for p.isName("if") {
		if err := p.nest(); err != nil {
			return "", err
		}
		p.next()
		c, err := p.or()
		if err != nil {
			return "", err
		}
		if p.isName("else") {
			p.next()
			f, err := p.cond()
			if err != nil {
				return "", err
			}
			e = "(" + e + " if " + c + " else " + f + ")"
		} else {
			e = "(" + e + " if " + c + ")"
		}
	}
	return e, nil
}

func (p *exprParser) or() (string, error) {
	return p.leftAssoc(p.and, func() (string, bool) {
		if p.isName("or") {
			return "or", true
		}
		return "", false
	}, false)
}

func (p *exprParser) and() (string, error) {
	return p.leftAssoc(p.not, func() (string, bool) {
		if p.isName("and") {
			return "and", true
		}
		return "", false
	}, false)
}

func (p *exprParser) not() (string, error) {
	if p.isName("not") {
		defer func(depth int) { p.depth = depth }(p.depth)
		if err := p.nest(); err != nil {
			return "", err
		}
		p.next()
		x, err := p.not()
		if err != nil {
			return "", err
		}
		return "(not " + x + ")", nil
	}
	return p.compare()
}

// compare handles ==, !=, <, >, <=, >=, in and not in; a chain a < b < c
// means a < b and b < c.
func (p *exprParser) compare() (string, error) {
	left, err := p.math1()
	if err != nil {
		return "", err
	}
	var parts []string
	for {
		var op string
		switch {
		case p.isOp("==") || p.isOp("!=") || p.isOp("<") || p.isOp(">") || p.isOp("<=") || p.isOp(">="):
			op = p.next().text
		case p.isName("in"):
			p.next()
			op = "in"
		case p.isName("not") && p.toks[p.pos+1].kind == 'n' && p.toks[p.pos+1].text == "in":
			p.next()
			p.next()
			op = "not in"
		}
		if op == "" {
			break
		}
		right, err := p.math1()
		if err != nil {
			return "", err
		}
		l, r := left, right
		if op == "<" || op == ">" || op == "<=" || op == ">=" {
			l, r = strictOperand(l), strictOperand(r)
		}
		parts = append(parts, "("+l+" "+op+" "+r+")")
		left = right
	}
	switch len(parts) {
	case 0:
		return left, nil
	case 1:
		return parts[0], nil
	}
	return "(" + strings.Join(parts, " and ") + ")", nil
}

func (p *exprParser) math1() (string, error) {
	return p.leftAssoc(p.concat, func() (string, bool) {
		if p.isOp("+") || p.isOp("-") {
			return p.peek().text, true
		}
		return "", false
	}, true)
}

func (p *exprParser) concat() (string, error) {
	defer func(depth int) { p.depth = depth }(p.depth)
	left, err := p.math2()
	if err != nil {
		return "", err
	}
	for p.isOp("~") {
		if err := p.nest(); err != nil {
			return "", err
		}
		p.next()
		right, err := p.math2()
		if err != nil {
			return "", err
		}
		// The engine prints floats and containers unlike Python.
		left = "(__hf_str(" + left + ") ~ __hf_str(" + right + "))"
	}
	return left, nil
}

func (p *exprParser) math2() (string, error) {
	return p.leftAssoc(p.pow, func() (string, bool) {
		if t := p.peek(); t.kind == 'o' && (t.text == "*" || t.text == "/" || t.text == "//" || t.text == "%") {
			return t.text, true
		}
		return "", false
	}, true)
}

func (p *exprParser) pow() (string, error) {
	return p.leftAssoc(func() (string, error) { return p.unary(true) }, func() (string, bool) {
		if p.isOp("**") {
			return "**", true
		}
		return "", false
	}, true)
}

// leftAssoc parses operand (op operand)*; strict operands go through
// __hf_operand.
func (p *exprParser) leftAssoc(operand func() (string, error), op func() (string, bool), strict bool) (string, error) {
	defer func(depth int) { p.depth = depth }(p.depth)
	left, err := operand()
	if err != nil {
		return "", err
	}
	for {
		o, ok := op()
		if !ok {
			return left, nil
		}
		if err := p.nest(); err != nil {
			return "", err
		}
		p.next()
		right, err := operand()
		if err != nil {
			return "", err
		}
		switch {
		case o == "*":
			// __hf_mul caps the size of repeated strings and lists.
			left = "__hf_mul(" + left + ", " + right + ")"
		case strict:
			left = "(" + strictOperand(left) + " " + o + " " + strictOperand(right) + ")"
		default:
			left = "(" + left + " " + o + " " + right + ")"
		}
	}
}

// strictOperand wraps a non-literal operand in __hf_operand(...).
func strictOperand(x string) string {
	if x == "" || x[0] == '"' || x[0] == '[' || x[0] == '{' || (x[0] >= '0' && x[0] <= '9') {
		return x
	}
	return "__hf_operand(" + x + ")"
}

func (p *exprParser) unary(withFilter bool) (string, error) {
	var x string
	var err error
	if p.isOp("-") || p.isOp("+") {
		defer func(depth int) { p.depth = depth }(p.depth)
		if err := p.nest(); err != nil {
			return "", err
		}
		op := p.next().text
		operand, err := p.unary(false)
		if err != nil {
			return "", err
		}
		if op == "-" {
			x = "(-" + strictOperand(operand) + ")"
		} else {
			x = "(+" + operand + ")"
		}
	} else if x, err = p.primary(); err != nil {
		return "", err
	}
	if x, err = p.postfix(x); err != nil {
		return "", err
	}
	if withFilter {
		return p.filters(x)
	}
	return x, nil
}

func (p *exprParser) primary() (string, error) {
	t := p.next()
	switch t.kind {
	case 'n':
		switch t.text {
		case "true", "True":
			return "true", nil
		case "false", "False":
			return "false", nil
		case "none", "None":
			return "none", nil
		}
		return t.text, nil
	case 's':
		var s strings.Builder
		s.WriteString(t.text)
		for p.peek().kind == 's' { // adjacent literals concatenate
			s.WriteString(p.next().text)
		}
		return quoteLiteral(s.String()), nil
	case 'i', 'f':
		return t.text, nil
	case 'o':
		switch t.text {
		case "(":
			if p.isOp(")") {
				p.next()
				return "[]", nil
			}
			items, trailingComma, err := p.list(")")
			if err != nil {
				return "", err
			}
			if len(items) == 1 && !trailingComma {
				return items[0], nil
			}
			return "[" + strings.Join(items, ", ") + "]", nil // tuple
		case "[":
			items, _, err := p.list("]")
			if err != nil {
				return "", err
			}
			return "[" + strings.Join(items, ", ") + "]", nil
		case "{":
			var pairs []string
			for !p.isOp("}") {
				k, err := p.cond()
				if err != nil {
					return "", err
				}
				if err := p.expectOp(":"); err != nil {
					return "", err
				}
				v, err := p.cond()
				if err != nil {
					return "", err
				}
				pairs = append(pairs, k+": "+v)
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			if err := p.expectOp("}"); err != nil {
				return "", err
			}
			return "{" + strings.Join(pairs, ", ") + "}", nil
		}
	}
	return "", fmt.Errorf("%w: unexpected %q", errExprSyntax, t.text)
}

// list parses comma-separated expressions up to and including closer.
func (p *exprParser) list(closer string) (items []string, trailingComma bool, err error) {
	for !p.isOp(closer) {
		x, err := p.cond()
		if err != nil {
			return nil, false, err
		}
		items = append(items, x)
		trailingComma = false
		if !p.isOp(",") {
			break
		}
		p.next()
		trailingComma = true
	}
	return items, trailingComma, p.expectOp(closer)
}

func (p *exprParser) postfix(x string) (string, error) {
	defer func(depth int) { p.depth = depth }(p.depth)
	for {
		if p.isOp(".") || p.isOp("[") || p.isOp("(") {
			if err := p.nest(); err != nil {
				return "", err
			}
		}
		switch {
		case p.isOp("."):
			p.next()
			t := p.next()
			if t.kind != 'n' && t.kind != 'i' {
				return "", fmt.Errorf("%w: bad attribute %q", errExprSyntax, t.text)
			}
			if t.text == "replace" && p.isOp("(") {
				// str.replace goes to the metered replace (budget.go).
				args, err := p.callArgs()
				if err != nil {
					return "", err
				}
				inner := strings.TrimSpace(args[1 : len(args)-1])
				if inner == "" {
					return "", fmt.Errorf("%w: replace() without arguments", errExprSyntax)
				}
				x = "__hf_replace(" + x + ", " + inner + ")"
				break
			}
			x += "." + t.text
		case p.isOp("["):
			p.next()
			parts, err := p.subscript()
			if err != nil {
				return "", err
			}
			if len(parts) == 1 {
				x += "[" + parts[0] + "]"
				break
			}
			// Slices follow Python exactly (and cheaply) in __hf_slice.
			for len(parts) < 3 {
				parts = append(parts, "")
			}
			for i, part := range parts {
				if part == "" {
					parts[i] = "none"
				}
			}
			x = "__hf_slice(" + x + ", " + strings.Join(parts, ", ") + ")"
		case p.isOp("("):
			args, err := p.callArgs()
			if err != nil {
				return "", err
			}
			x += args
		default:
			return x, nil
		}
	}
}

// subscript parses the inside of [...] and the "]": one index, or two or
// three slice parts ("" where omitted).
func (p *exprParser) subscript() ([]string, error) {
	var parts []string
	cur := ""
	for {
		switch {
		case p.isOp("]"):
			p.next()
			parts = append(parts, cur)
			if len(parts) > 3 || (len(parts) == 1 && cur == "") {
				return nil, fmt.Errorf("%w: bad subscript", errExprSyntax)
			}
			return parts, nil
		case p.isOp(":"):
			p.next()
			parts = append(parts, cur)
			cur = ""
		default:
			if cur != "" {
				return nil, fmt.Errorf("%w: bad subscript", errExprSyntax)
			}
			x, err := p.cond()
			if err != nil {
				return nil, err
			}
			cur = x
		}
	}
}

// callArgs parses "(args)" and returns it re-emitted.
func (p *exprParser) callArgs() (string, error) {
	if err := p.expectOp("("); err != nil {
		return "", err
	}
	var args []string
	for !p.isOp(")") {
		if p.isOp("*") || p.isOp("**") {
			return "", fmt.Errorf("%w: *args in a call", errExprSyntax)
		}
		prefix := ""
		if p.peek().kind == 'n' && p.toks[p.pos+1].kind == 'o' && p.toks[p.pos+1].text == "=" {
			prefix = p.next().text + "="
			p.next()
		}
		x, err := p.cond()
		if err != nil {
			return "", err
		}
		args = append(args, prefix+x)
		if !p.isOp(",") {
			break
		}
		p.next()
	}
	if err := p.expectOp(")"); err != nil {
		return "", err
	}
	return "(" + strings.Join(args, ", ") + ")", nil
}

// filters parses any chain of "| filter(args)", "is [not] test [arg]" and
// calls after a unary expression.
func (p *exprParser) filters(x string) (string, error) {
	defer func(depth int) { p.depth = depth }(p.depth)
	for {
		if p.isOp("|") || p.isName("is") || p.isOp("(") {
			if err := p.nest(); err != nil {
				return "", err
			}
		}
		switch {
		case p.isOp("|"):
			p.next()
			t := p.next()
			if t.kind != 'n' {
				return "", fmt.Errorf("%w: bad filter name %q", errExprSyntax, t.text)
			}
			name := t.text
			args := ""
			if p.isOp("(") {
				var err error
				if args, err = p.callArgs(); err != nil {
					return "", err
				}
			}
			x = "(" + x + "|" + name + args + ")"
		case p.isName("is"):
			p.next()
			neg := ""
			if p.isName("not") {
				p.next()
				neg = "not "
			}
			t := p.next()
			if t.kind != 'n' {
				return "", fmt.Errorf("%w: bad test name %q", errExprSyntax, t.text)
			}
			name := t.text
			args := ""
			switch nt := p.peek(); {
			case p.isOp("("):
				var err error
				if args, err = p.callArgs(); err != nil {
					return "", err
				}
			case nt.kind == 's' || nt.kind == 'i' || nt.kind == 'f' || p.isOp("[") || p.isOp("{") ||
				(nt.kind == 'n' && nt.text != "else" && nt.text != "or" && nt.text != "and" && nt.text != "if"):
				arg, err := p.primary()
				if err != nil {
					return "", err
				}
				if arg, err = p.postfix(arg); err != nil {
					return "", err
				}
				args = "(" + arg + ")"
			}
			if _, ok := extraTests[name]; ok {
				// A Jinja2 test the engine lacks: evaluate it here.
				call := "__hf_test(" + quoteLiteral(name) + ", " + x
				if args != "" {
					call += ", " + args[1:len(args)-1]
				}
				x = "(" + strings.TrimSuffix(neg, " ") + " " + call + "))"
				break
			}
			x = "(" + x + " is " + neg + name + args + ")"
		case p.isOp("("):
			args, err := p.callArgs()
			if err != nil {
				return "", err
			}
			x += args
		default:
			return x, nil
		}
	}
}
