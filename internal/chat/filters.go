package chat

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// ErrNotIterable is returned when a for loop or a filter meets a value that
// Hugging Face's renderers refuse to iterate (undefined or none), typically
// a variable the template needs and the caller did not pass (tools, documents).
var ErrNotIterable = errors.New("template iterates a value that is undefined or none")

// addFilters adds the replacements named in hfFilters, plus __hf_iterable.
// Every one is metered by m (see meter.guard).
func addFilters(data map[string]jinja.Value, m *meter) {
	data["__hf_iterable"] = m.guard("for", iterable)
	data["__hf_operand"] = m.guard("operand", operand)
	data["__hf_mul"] = m.guard("*", multiply)
	data["__hf_slice"] = m.guard("slice", slice)
	data["__hf_str"] = m.guard("str", pyStr)
	data["__hf_test"] = m.guard("test", extraTest)
	for name, fn := range map[string]filterFunc{
		"sort": sortFilter, "dictsort": dictsortFilter, "unique": uniqueFilter,
		"int": intFilter, "float": floatFilter, "map": mapFilter, "string": stringFilterPy,
		"join": joinFilter, "replace": replaceFilter, "indent": indentFilter, "tojson": tojson,
	} {
		data["__hf_"+name] = m.guard(name, fn)
	}
	data["__hf_selectattr"] = m.guard("selectattr", func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
		return selectAttr("selectattr", true, args)
	})
	data["__hf_rejectattr"] = m.guard("rejectattr", func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
		return selectAttr("rejectattr", false, args)
	})
}

func kindName(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return "undefined"
	case v.IsNone():
		return "none"
	case v.IsBool():
		return "bool"
	case v.IsInt():
		return "int"
	case v.IsFloat():
		return "float"
	case v.IsString():
		return "string"
	case v.IsList():
		return "list"
	case v.IsDict():
		return "mapping"
	}
	return "callable"
}

// iterable passes a for loop's iterable through, refusing undefined and
// none as Hugging Face does (Python's transformers passes absent tools and
// documents as None, which Python cannot iterate).
func iterable(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("for loop: %d iterables", len(args))
	}
	v := args[0]
	if v.IsList() || v.IsDict() || v.IsString() {
		return v, nil
	}
	return jinja.Undefined(), fmt.Errorf("for loop over %s: %w", kindName(v), ErrNotIterable)
}

// ErrUndefinedOperand is returned when arithmetic or an ordering
// comparison meets an undefined or none value, as in Hugging Face's
// renderers (the engine alone would treat it as "" or 0): the template needs
// a variable or message field the input lacks.
var ErrUndefinedOperand = errors.New("template computes with a value that is undefined or none")

func operand(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("operand: %d values", len(args))
	}
	if v := args[0]; v.IsUndefined() || v.IsNone() {
		return jinja.Undefined(), fmt.Errorf("arithmetic or comparison on %s: %w", kindName(v), ErrUndefinedOperand)
	}
	return args[0], nil
}

// multiply is Python's *: numbers multiply, a string or list times an
// integer repeats (capped at maxSequence), undefined and none fail.
func multiply(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Undefined(), fmt.Errorf("*: %d operands", len(args))
	}
	a, b := args[0], args[1]
	for _, v := range args {
		if v.IsUndefined() || v.IsNone() {
			return jinja.Undefined(), fmt.Errorf("* on %s: %w", kindName(v), ErrUndefinedOperand)
		}
	}
	if b.IsString() || b.IsList() {
		a, b = b, a
	}
	switch {
	case a.IsInt() && b.IsInt():
		return jinja.NewInt(a.AsInt() * b.AsInt()), nil
	case a.IsNumber() && b.IsNumber():
		return jinja.NewFloat(toFloat(a) * toFloat(b)), nil
	case (a.IsString() || a.IsList()) && b.IsInt():
		n := max(b.AsInt(), 0)
		size := int64(0)
		if a.IsString() {
			size = int64(len(a.AsString()))
		} else {
			size = int64(a.AsList().Len())
		}
		if size > 0 && n > maxSequence/size {
			return jinja.Undefined(), fmt.Errorf("%w: repeating %d items %d times", ErrLimit, size, n)
		}
		if a.IsString() {
			return jinja.NewString(strings.Repeat(a.AsString(), int(n))), nil
		}
		var items []jinja.Value
		for range n {
			items = append(items, a.AsList().Items...)
		}
		return jinja.NewList(items), nil
	}
	return jinja.Undefined(), fmt.Errorf("*: cannot multiply %s by %s", kindName(a), kindName(b))
}

// slice is Python's seq[start:stop:step] for strings (by code point) and
// lists; none means an omitted part.
func slice(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 4 {
		return jinja.Undefined(), fmt.Errorf("slice: %d arguments", len(args))
	}
	seq := args[0]
	var n int
	var runes []rune
	switch {
	case seq.IsString():
		runes = []rune(seq.AsString())
		n = len(runes)
	case seq.IsList():
		n = seq.AsList().Len()
	default:
		return jinja.Undefined(), fmt.Errorf("cannot slice a %s", kindName(seq))
	}
	var bound [3]*int64
	for i, a := range args[1:] {
		switch {
		case a.IsNone() || a.IsUndefined():
		case a.IsInt():
			v := a.AsInt()
			bound[i] = &v
		default:
			return jinja.Undefined(), fmt.Errorf("slice indices must be integers or none, got a %s", kindName(a))
		}
	}
	step := int64(1)
	if bound[2] != nil {
		step = *bound[2]
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("slice step cannot be zero")
	}
	start, stop := sliceBounds(bound[0], bound[1], step, int64(n))
	var idx []int
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		idx = append(idx, int(i))
	}
	if seq.IsString() {
		out := make([]rune, len(idx))
		for k, i := range idx {
			out[k] = runes[i]
		}
		return jinja.NewString(string(out)), nil
	}
	items := make([]jinja.Value, len(idx))
	for k, i := range idx {
		items[k] = seq.AsList().Get(i)
	}
	return jinja.NewList(items), nil
}

// sliceBounds resolves start and stop like Python's slice.indices(n).
func sliceBounds(startP, stopP *int64, step, n int64) (start, stop int64) {
	clamp := func(v *int64, def, lo, hi int64) int64 {
		if v == nil {
			return def
		}
		x := *v
		if x < 0 {
			x += n
		}
		return min(max(x, lo), hi)
	}
	if step > 0 {
		return clamp(startP, 0, 0, n), clamp(stopP, n, 0, n)
	}
	return clamp(startP, n-1, -1, n-1), clamp(stopP, -1, -1, n-1)
}

// extraTests are the Jinja2 tests the engine lacks; the translator turns
// "x is name(args)" for these into __hf_test("name", x, args...).
var extraTests = map[string]func(v jinja.Value, args []jinja.Value) (bool, error){
	"divisibleby": func(v jinja.Value, args []jinja.Value) (bool, error) {
		if len(args) != 1 || !args[0].IsInt() || !v.IsInt() {
			return false, errors.New("divisibleby: want an integer tested against an integer")
		}
		if args[0].AsInt() == 0 {
			return false, errors.New("divisibleby: division by zero")
		}
		return v.AsInt()%args[0].AsInt() == 0, nil
	},
	// No value is markup-escaped in a chat template environment.
	"escaped": func(jinja.Value, []jinja.Value) (bool, error) { return false, nil },
}

func extraTest(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 2 || !args[0].IsString() {
		return jinja.Undefined(), errors.New("test: want a test name and a value")
	}
	fn, ok := extraTests[args[0].AsString()]
	if !ok {
		return jinja.Undefined(), fmt.Errorf("unknown test %q", args[0].AsString())
	}
	r, err := fn(args[1], args[2:])
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewBool(r), nil
}

// selectAttr implements selectattr/rejectattr: keep the mappings whose
// attribute (a dotted path) passes the test (truthiness by default).
func selectAttr(name string, keep bool, args []jinja.Value) (jinja.Value, error) {
	if len(args) < 2 {
		return jinja.Undefined(), fmt.Errorf("%s: want an attribute name", name)
	}
	seq := args[0]
	if !seq.IsList() {
		return jinja.Undefined(), fmt.Errorf("%s on %s: %w", name, kindName(seq), ErrNotIterable)
	}
	if !args[1].IsString() {
		return jinja.Undefined(), fmt.Errorf("%s: attribute name must be a string, got %s", name, kindName(args[1]))
	}
	path := strings.Split(args[1].AsString(), ".")
	test := ""
	if len(args) > 2 {
		if !args[2].IsString() {
			return jinja.Undefined(), fmt.Errorf("%s: test name must be a string", name)
		}
		test = args[2].AsString()
	}
	var out []jinja.Value
	for _, item := range seq.AsList().Items {
		v := item
		for _, p := range path {
			v = attribute(v, p)
		}
		ok, err := applyTest(test, v, args[3:])
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("%s: %w", name, err)
		}
		if ok == keep {
			out = append(out, item)
		}
	}
	return jinja.NewList(out), nil
}

func attribute(v jinja.Value, key string) jinja.Value {
	if v.IsDict() {
		if x, ok := v.AsDict().Get(key); ok {
			return x
		}
		return jinja.Undefined()
	}
	if v.IsList() {
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < v.AsList().Len() {
			return v.AsList().Get(i)
		}
	}
	return jinja.Undefined()
}

// applyTest runs a Jinja test by name ("" means truthiness).
func applyTest(test string, v jinja.Value, args []jinja.Value) (bool, error) {
	arg := func() (jinja.Value, error) {
		if len(args) == 0 {
			return jinja.Undefined(), fmt.Errorf("test %q needs an argument", test)
		}
		return args[0], nil
	}
	switch test {
	case "":
		return v.IsTruthy(), nil
	case "defined":
		return !v.IsUndefined(), nil
	case "undefined":
		return v.IsUndefined(), nil
	case "none":
		return v.IsNone(), nil
	case "string":
		return v.IsString(), nil
	case "number":
		return v.IsNumber() && !v.IsBool(), nil
	case "integer":
		return v.IsInt(), nil
	case "float":
		return v.IsFloat(), nil
	case "boolean":
		return v.IsBool(), nil
	case "mapping":
		return v.IsDict(), nil
	case "sequence", "iterable":
		return v.IsList() || v.IsString() || v.IsDict(), nil
	case "true":
		return v.IsBool() && v.AsBool(), nil
	case "false":
		return v.IsBool() && !v.AsBool(), nil
	case "equalto", "eq", "==", "sameas":
		a, err := arg()
		if err != nil {
			return false, err
		}
		return equalValues(v, a), nil
	case "ne", "!=":
		a, err := arg()
		if err != nil {
			return false, err
		}
		return !equalValues(v, a), nil
	case "in":
		a, err := arg()
		if err != nil {
			return false, err
		}
		return contains(a, v), nil
	}
	return false, fmt.Errorf("unknown test %q", test)
}

func equalValues(a, b jinja.Value) bool {
	if a.IsNumber() && b.IsNumber() {
		return toFloat(a) == toFloat(b)
	}
	return a.Equals(b)
}

func toFloat(v jinja.Value) float64 {
	if v.IsInt() {
		return float64(v.AsInt())
	}
	return v.AsFloat()
}

func contains(container, item jinja.Value) bool {
	switch {
	case container.IsList():
		for _, x := range container.AsList().Items {
			if equalValues(x, item) {
				return true
			}
		}
	case container.IsDict():
		return item.IsString() && container.AsDict().Has(item.AsString())
	case container.IsString():
		return item.IsString() && strings.Contains(container.AsString(), item.AsString())
	}
	return false
}

// tojson is Hugging Face's tojson: Python's json.dumps(x,
// ensure_ascii=False, indent=indent, separators=separators,
// sort_keys=sort_keys), keys in insertion order unless sorted.
// maxIndent bounds tojson's indent.
const maxIndent = 1024

func tojson(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("tojson: no value")
	}
	e := jsonEncoder{itemSep: ", ", keySep: ": "}
	if ind, ok := kw["indent"]; ok && !ind.IsNone() {
		switch {
		case ind.IsInt():
			if ind.AsInt() > maxIndent {
				return jinja.Undefined(), &BudgetError{Limit: "value", Detail: fmt.Sprintf("tojson indent %d (the bound is %d)", ind.AsInt(), maxIndent)}
			}
			e.indent = strings.Repeat(" ", int(max(ind.AsInt(), 0)))
		case ind.IsString():
			e.indent = ind.AsString()
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent must be an integer or a string, got %s", kindName(ind))
		}
		e.indented = true
		e.itemSep = ","
	}
	if len(args) > 1 && !args[1].IsNone() && args[1].IsInt() { // tojson(2)
		if args[1].AsInt() > maxIndent {
			return jinja.Undefined(), &BudgetError{Limit: "value", Detail: fmt.Sprintf("tojson indent %d (the bound is %d)", args[1].AsInt(), maxIndent)}
		}
		e.indent, e.indented, e.itemSep = strings.Repeat(" ", int(max(args[1].AsInt(), 0))), true, ","
	}
	if sep, ok := kw["separators"]; ok && !sep.IsNone() {
		if !sep.IsList() || sep.AsList().Len() != 2 || !sep.AsList().Get(0).IsString() || !sep.AsList().Get(1).IsString() {
			return jinja.Undefined(), errors.New("tojson: separators must be two strings")
		}
		e.itemSep, e.keySep = sep.AsList().Get(0).AsString(), sep.AsList().Get(1).AsString()
	}
	if sk, ok := kw["sort_keys"]; ok {
		e.sortKeys = sk.IsTruthy()
	}
	var b strings.Builder
	if err := e.encode(&b, args[0], 0); err != nil {
		return jinja.Undefined(), fmt.Errorf("tojson: %w", err)
	}
	return jinja.NewString(b.String()), nil
}

type jsonEncoder struct {
	indented        bool
	indent          string
	itemSep, keySep string
	sortKeys        bool
}

func (e *jsonEncoder) newline(b *strings.Builder, depth int) {
	if e.indented {
		b.WriteByte('\n')
		for range depth {
			b.WriteString(e.indent)
		}
	}
}

func (e *jsonEncoder) encode(b *strings.Builder, v jinja.Value, depth int) error {
	switch {
	case v.IsUndefined(), v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		b.WriteString(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pythonFloat(v.AsFloat()))
	case v.IsString():
		writeJSONString(b, v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range items {
			if b.Len() > maxValue {
				return &BudgetError{Limit: "value", Detail: fmt.Sprintf("tojson builds more than %d bytes", maxValue)}
			}
			if i > 0 {
				b.WriteString(e.itemSep)
			}
			e.newline(b, depth+1)
			if err := e.encode(b, it, depth+1); err != nil {
				return err
			}
		}
		e.newline(b, depth)
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.OrderedKeys()
		if len(keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		if e.sortKeys {
			sort.Strings(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if b.Len() > maxValue {
				return &BudgetError{Limit: "value", Detail: fmt.Sprintf("tojson builds more than %d bytes", maxValue)}
			}
			if i > 0 {
				b.WriteString(e.itemSep)
			}
			e.newline(b, depth+1)
			writeJSONString(b, k)
			b.WriteString(e.keySep)
			x, _ := d.Get(k)
			if err := e.encode(b, x, depth+1); err != nil {
				return err
			}
		}
		e.newline(b, depth)
		b.WriteByte('}')
	default:
		return fmt.Errorf("cannot encode a %s as JSON", kindName(v))
	}
	return nil
}

// writeJSONString writes s as Python's json.dumps(ensure_ascii=False) does.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteByte('"')
}

// pythonFloat formats f like Python's repr(float).
func pythonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX, shortest
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	sign := ""
	if strings.HasPrefix(mant, "-") {
		sign, mant = "-", mant[1:]
	}
	digits := strings.Replace(mant, ".", "", 1)
	if exp < -4 || exp >= 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := fmt.Sprintf("%+03d", exp)
		return sign + m + "e" + es
	}
	if exp < 0 {
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	}
	if len(digits) <= exp+1 {
		return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}
