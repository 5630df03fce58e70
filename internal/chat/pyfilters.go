package chat

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Filters whose engine versions ignore Jinja2 arguments that chat
// templates use (sort(attribute=...), int(base=16), map('upper'), ...) or
// sort case-sensitively where Jinja2 does not. See hfFilters.

// argument returns positional argument i (after the filtered value) or the
// keyword name, and whether either was given.
func argument(args []jinja.Value, kw map[string]jinja.Value, i int, name string) (jinja.Value, bool) {
	if i+1 < len(args) {
		return args[i+1], true
	}
	v, ok := kw[name]
	return v, ok
}

func boolArg(args []jinja.Value, kw map[string]jinja.Value, i int, name string, def bool) bool {
	if v, ok := argument(args, kw, i, name); ok {
		return v.IsTruthy()
	}
	return def
}

// sequenceItems lists what a filter iterates: list items, dict keys or
// string characters; undefined and none are refused like in a for loop.
func sequenceItems(filter string, v jinja.Value) ([]jinja.Value, error) {
	switch {
	case v.IsList():
		return v.AsList().Items, nil
	case v.IsDict():
		var keys []jinja.Value
		for _, k := range v.AsDict().OrderedKeys() {
			keys = append(keys, jinja.NewString(k))
		}
		return keys, nil
	case v.IsString():
		var chars []jinja.Value
		for _, r := range v.AsString() {
			chars = append(chars, jinja.NewString(string(r)))
		}
		return chars, nil
	}
	return nil, fmt.Errorf("%s on %s: %w", filter, kindName(v), ErrNotIterable)
}

// sortKey applies Jinja2's ignore_case: strings compare lower-cased unless
// caseSensitive.
func sortKey(v jinja.Value, caseSensitive bool) jinja.Value {
	if !caseSensitive && v.IsString() {
		return jinja.NewString(strings.ToLower(v.AsString()))
	}
	return v
}

// compare orders two values like Python: numbers (and booleans) by value,
// strings by code point, lists element-wise; other mixes are an error.
func compare(a, b jinja.Value) (int, error) {
	num := func(v jinja.Value) (float64, bool) {
		switch {
		case v.IsBool():
			if v.AsBool() {
				return 1, true
			}
			return 0, true
		case v.IsNumber():
			return toFloat(v), true
		}
		return 0, false
	}
	if x, ok := num(a); ok {
		if y, ok := num(b); ok {
			switch {
			case x < y:
				return -1, nil
			case x > y:
				return 1, nil
			}
			return 0, nil
		}
	}
	if a.IsString() && b.IsString() {
		return strings.Compare(a.AsString(), b.AsString()), nil
	}
	if a.IsList() && b.IsList() {
		x, y := a.AsList().Items, b.AsList().Items
		for i := 0; i < len(x) && i < len(y); i++ {
			if c, err := compare(x[i], y[i]); err != nil || c != 0 {
				return c, err
			}
		}
		return len(x) - len(y), nil
	}
	return 0, fmt.Errorf("cannot order a %s and a %s", kindName(a), kindName(b))
}

// sortValues sorts items stably by key(item), reporting the first
// comparison error.
func sortValues(items []jinja.Value, key func(jinja.Value) jinja.Value, reverse bool) ([]jinja.Value, error) {
	out := append([]jinja.Value(nil), items...)
	var firstErr error
	sort.SliceStable(out, func(i, j int) bool {
		c, err := compare(key(out[i]), key(out[j]))
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if reverse {
			return c > 0
		}
		return c < 0
	})
	return out, firstErr
}

// sortFilter is Jinja2's sort(reverse=False, case_sensitive=False, attribute=None).
func sortFilter(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	items, err := sequenceItems("sort", args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	reverse := boolArg(args, kw, 0, "reverse", false)
	caseSensitive := boolArg(args, kw, 1, "case_sensitive", false)
	var path []string
	if a, ok := argument(args, kw, 2, "attribute"); ok && a.IsString() {
		path = strings.Split(a.AsString(), ".")
	}
	out, err := sortValues(items, func(v jinja.Value) jinja.Value {
		for _, p := range path {
			v = attribute(v, p)
		}
		return sortKey(v, caseSensitive)
	}, reverse)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("sort: %w", err)
	}
	return jinja.NewList(out), nil
}

// dictsortFilter is Jinja2's dictsort(case_sensitive=False, by='key', reverse=False).
func dictsortFilter(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	d := args[0]
	if !d.IsDict() {
		return jinja.Undefined(), fmt.Errorf("dictsort on %s: want a mapping", kindName(d))
	}
	caseSensitive := boolArg(args, kw, 0, "case_sensitive", false)
	pos := 0
	if by, ok := argument(args, kw, 1, "by"); ok {
		switch {
		case by.IsString() && by.AsString() == "key":
		case by.IsString() && by.AsString() == "value":
			pos = 1
		default:
			return jinja.Undefined(), fmt.Errorf("dictsort: by must be 'key' or 'value', got %s", by.String())
		}
	}
	reverse := boolArg(args, kw, 2, "reverse", false)
	var pairs []jinja.Value
	for _, k := range d.AsDict().OrderedKeys() {
		v, _ := d.AsDict().Get(k)
		pairs = append(pairs, jinja.NewList([]jinja.Value{jinja.NewString(k), v}))
	}
	out, err := sortValues(pairs, func(p jinja.Value) jinja.Value {
		return sortKey(p.AsList().Get(pos), caseSensitive)
	}, reverse)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("dictsort: %w", err)
	}
	return jinja.NewList(out), nil
}

// uniqueFilter is Jinja2's unique(case_sensitive=False, attribute=None).
func uniqueFilter(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	items, err := sequenceItems("unique", args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	caseSensitive := boolArg(args, kw, 0, "case_sensitive", false)
	var path []string
	if a, ok := argument(args, kw, 1, "attribute"); ok && a.IsString() {
		path = strings.Split(a.AsString(), ".")
	}
	var seen []jinja.Value
	var out []jinja.Value
	for _, it := range items {
		k := it
		for _, p := range path {
			k = attribute(k, p)
		}
		k = sortKey(k, caseSensitive)
		dup := false
		for _, s := range seen {
			if equalValues(s, k) {
				dup = true
				break
			}
		}
		if !dup {
			seen = append(seen, k)
			out = append(out, it)
		}
	}
	return jinja.NewList(out), nil
}

// intFilter is Jinja2's int(default=0, base=10): strings parse in base
// ("42.23" gives 42), floats truncate, anything else gives default.
func intFilter(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	def := jinja.NewInt(0)
	if d, ok := argument(args, kw, 0, "default"); ok {
		def = d
	}
	base := int64(10)
	if b, ok := argument(args, kw, 1, "base"); ok && b.IsInt() {
		base = b.AsInt()
	}
	v := args[0]
	switch {
	case v.IsInt():
		return v, nil
	case v.IsBool():
		if v.AsBool() {
			return jinja.NewInt(1), nil
		}
		return jinja.NewInt(0), nil
	case v.IsFloat():
		if f := v.AsFloat(); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return jinja.NewInt(int64(f)), nil
		}
	case v.IsString():
		s := strings.ReplaceAll(strings.TrimSpace(v.AsString()), "_", "")
		digits := strings.TrimLeft(s, "+-")
		if base == 16 && (strings.HasPrefix(digits, "0x") || strings.HasPrefix(digits, "0X")) {
			s = s[:len(s)-len(digits)] + digits[2:]
		}
		if base >= 0 && base <= 36 && base != 1 {
			if n, err := strconv.ParseInt(s, int(base), 64); err == nil {
				return jinja.NewInt(n), nil
			}
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v.AsString()), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return jinja.NewInt(int64(f)), nil
		}
	}
	return def, nil
}

// floatFilter is Jinja2's float(default=0.0).
func floatFilter(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	def := jinja.NewFloat(0)
	if d, ok := argument(args, kw, 0, "default"); ok {
		def = d
	}
	v := args[0]
	switch {
	case v.IsFloat():
		return v, nil
	case v.IsInt():
		return jinja.NewFloat(float64(v.AsInt())), nil
	case v.IsBool():
		if v.AsBool() {
			return jinja.NewFloat(1), nil
		}
		return jinja.NewFloat(0), nil
	case v.IsString():
		if f, err := strconv.ParseFloat(strings.TrimSpace(v.AsString()), 64); err == nil {
			return jinja.NewFloat(f), nil
		}
	}
	return def, nil
}

// mapFilter is Jinja2's map(attribute=..., default=...) and map('filter', args...)
// for the filters that need no engine internals.
func mapFilter(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	items, err := sequenceItems("map", args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	if a, ok := kw["attribute"]; ok {
		if !a.IsString() {
			return jinja.Undefined(), fmt.Errorf("map: attribute must be a string")
		}
		path := strings.Split(a.AsString(), ".")
		def, hasDef := kw["default"]
		out := make([]jinja.Value, len(items))
		for i, it := range items {
			v := it
			for _, p := range path {
				v = attribute(v, p)
			}
			if v.IsUndefined() && hasDef {
				v = def
			}
			out[i] = v
		}
		return jinja.NewList(out), nil
	}
	if len(args) < 2 || !args[1].IsString() {
		return jinja.Undefined(), fmt.Errorf("map: want a filter name or attribute=")
	}
	name, extra := args[1].AsString(), args[2:]
	fn, ok := mappableFilters[name]
	if !ok {
		return jinja.Undefined(), fmt.Errorf("map: filter %q is not supported here", name)
	}
	out := make([]jinja.Value, len(items))
	for i, it := range items {
		v, err := fn(append([]jinja.Value{it}, extra...), kw)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("map(%q): %w", name, err)
		}
		out[i] = v
	}
	return jinja.NewList(out), nil
}

type filterFunc = func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error)

// mappableFilters are the filters map('name') can apply.
var mappableFilters = map[string]filterFunc{
	"upper":  stringFilter(strings.ToUpper),
	"lower":  stringFilter(strings.ToLower),
	"trim":   stringFilter(strings.TrimSpace),
	"string": stringFilterPy,
	"int":    intFilter,
	"float":  floatFilter,
	"tojson": tojson,
	"length": func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		items, err := sequenceItems("length", args[0])
		return jinja.NewInt(int64(len(items))), err
	},
}

// stringFilter lifts a string function to a filter over the value's text.
func stringFilter(f func(string) string) filterFunc {
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		v := args[0]
		s := ""
		switch {
		case v.IsString():
			s = v.AsString()
		case v.IsUndefined(), v.IsNone():
		case v.IsList(), v.IsDict():
			s = v.String()
		case v.IsFloat():
			s = pythonFloat(v.AsFloat())
		default:
			s = strings.Trim(v.String(), "'")
		}
		return jinja.NewString(f(s)), nil
	}
}
