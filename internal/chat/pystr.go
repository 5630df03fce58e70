package chat

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/ardanlabs/jinja"
)

// pyStr converts a value to the text Jinja2 prints for it: floats as
// Python's repr (3.0, 1e-05), lists and dicts as Python reprs. None and
// undefined print as "" (Hugging Face's JavaScript renderer and the engine
// agree on that; Python would print "None").
func pyStr(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("str: %d values", len(args))
	}
	v := args[0]
	switch {
	case v.IsFloat():
		return jinja.NewString(pythonFloat(v.AsFloat())), nil
	case v.IsList(), v.IsDict():
		var b strings.Builder
		pyRepr(&b, v)
		return jinja.NewString(b.String()), nil
	}
	return v, nil
}

// stringFilterPy is Jinja2's string filter: Python's str(value).
func stringFilterPy(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), fmt.Errorf("string: no value")
	}
	v := args[0]
	switch {
	case v.IsString():
		return v, nil
	case v.IsUndefined():
		return jinja.NewString(""), nil
	case v.IsNone(), v.IsBool(), v.IsInt(), v.IsFloat(), v.IsList(), v.IsDict():
		var b strings.Builder
		pyRepr(&b, v)
		return jinja.NewString(b.String()), nil
	}
	return jinja.NewString(v.String()), nil
}

// pyRepr writes Python's repr of v.
func pyRepr(b *strings.Builder, v jinja.Value) {
	switch {
	case v.IsUndefined(), v.IsNone():
		b.WriteString("None")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pythonFloat(v.AsFloat()))
	case v.IsString():
		pyQuote(b, v.AsString())
	case v.IsList():
		b.WriteByte('[')
		for i, it := range v.AsList().Items {
			if b.Len() > maxValue {
				return // the caller's size check refuses the result
			}
			if i > 0 {
				b.WriteString(", ")
			}
			pyRepr(b, it)
		}
		b.WriteByte(']')
	case v.IsDict():
		b.WriteByte('{')
		d := v.AsDict()
		for i, k := range d.OrderedKeys() {
			if b.Len() > maxValue {
				return // the caller's size check refuses the result
			}
			if i > 0 {
				b.WriteString(", ")
			}
			pyQuote(b, k)
			b.WriteString(": ")
			x, _ := d.Get(k)
			pyRepr(b, x)
		}
		b.WriteByte('}')
	default:
		b.WriteString(v.String())
	}
}

// pyQuote writes Python's repr of a string: single quotes unless the text
// has a single quote and no double quote.
func pyQuote(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(b, `\x%02x`, r)
		case !unicode.IsPrint(r) && r > 0x7f:
			if r > 0xffff {
				fmt.Fprintf(b, `\U%08x`, r)
			} else if r > 0xff {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				fmt.Fprintf(b, `\x%02x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
}
