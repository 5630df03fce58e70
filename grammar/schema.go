package grammar

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// JSONSchema compiles a JSON Schema into the language of the JSON documents it accepts (see
// SchemaExpr for what is supported).
func (c *Compiler) JSONSchema(schema []byte) (*Grammar, error) {
	e, err := c.SchemaExpr(schema)
	if err != nil {
		return nil, err
	}
	g, err := c.Compile(e)
	if err != nil {
		if _, ok := err.(*SchemaError); ok {
			return nil, err
		}
		return nil, schemaErr(err, "#")
	}
	return g, nil
}

// SchemaExpr translates a JSON Schema into the expression of the JSON documents it accepts.
// What is supported: type (one or a list; without it, the types the keywords present
// constrain), object with properties and required (properties are generated in the order the
// schema lists them; properties it does not list are never generated, so
// additionalProperties needs no support beyond being accepted), string (minLength,
// maxLength, pattern when a plain regular expression, format date, time, date-time, uuid),
// number, integer (minimum, maximum, exclusiveMinimum, exclusiveMaximum, within ±1e15),
// boolean, null, enum and const (beside type only), array (items, minItems, maxItems),
// anyOf, allOf with one member, $ref to #, #/$defs/… or #/definitions/… (recursion unrolled
// a fixed depth) and nesting. Annotations (title, description, default, examples, $schema,
// $id, $comment, deprecated, readOnly, writeOnly, strict) are ignored. Any other keyword,
// or a keyword beside one that would leave it unchecked, is a *SchemaError naming it; so is
// a schema past the Compiler's limits (its Err a *LimitError).
func (c *Compiler) SchemaExpr(schema []byte) (Expr, error) {
	root, err := decodeJSON(schema, &c.b)
	if err != nil {
		if _, ok := err.(*LimitError); ok || c.b.ctx.Err() != nil {
			return Expr{}, schemaErr(err, "#")
		}
		return Expr{}, &SchemaError{Path: "#", Reason: "not JSON: " + err.Error()}
	}
	prefix := c.prefix()
	sc := &schemaCompiler{b: &c.b, rules: c.rules, prefix: prefix, root: root, defs: map[string]any{}}
	if o, ok := root.(*object); ok {
		for _, k := range []string{"$defs", "definitions"} {
			if d, ok := o.vals[k].(*object); ok {
				for _, name := range d.keys {
					sc.defs["#/"+k+"/"+escapePointer(name)] = d.vals[name]
				}
			}
		}
	}
	n, err := sc.schema(root, &pointer{seg: "#"}, 1)
	if err != nil {
		return Expr{}, err
	}
	if _, ok := c.rules[anyValueRule]; !ok {
		anyValueRules(c.rules)
	}
	return Expr{n, c}, nil
}

// schemaErr wraps a limit or context error as a *SchemaError at path (a context error is
// returned as it is).
func schemaErr(err error, path string) error {
	if le, ok := err.(*LimitError); ok {
		return &SchemaError{Path: path, Reason: le.Error(), Err: le}
	}
	if err == ErrNoEnd {
		return &SchemaError{Path: path, Reason: err.Error(), Err: err}
	}
	return err
}

type schemaCompiler struct {
	b      *budget
	rules  map[string]*node // the Compiler's
	prefix string           // of this schema's rule names
	root   any
	defs   map[string]any // by JSON pointer
}

var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$schema": true,
	"$id": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"strict": true, "$defs": true, "definitions": true,
}

// handled lists the keywords this compiler honours, by the type they constrain ("" for
// keywords of any type).
var handled = map[string]string{
	"type": "", "enum": "", "const": "", "anyOf": "", "allOf": "", "$ref": "",
	"properties": "object", "required": "object", "additionalProperties": "object", "unevaluatedProperties": "object",
	"items": "array", "minItems": "array", "maxItems": "array",
	"minLength": "string", "maxLength": "string", "pattern": "string", "format": "string",
	"minimum": "integer", "maximum": "integer", "exclusiveMinimum": "integer", "exclusiveMaximum": "integer",
}

// schema compiles the subschema s at path, depth subschemas deep.
func (c *schemaCompiler) schema(s any, path *pointer, depth int) (*node, error) {
	if err := c.b.depth(depth, "subschemas"); err != nil {
		return nil, schemaErr(err, path.String())
	}
	var n *node
	var err error
	switch s := s.(type) {
	case bool:
		if !s {
			return nil, &SchemaError{Path: path.String(), Reason: "the schema false accepts nothing"}
		}
		n = ref(anyValueRule)
	case *object:
		n, err = c.object(s, path, depth)
	default:
		return nil, &SchemaError{Path: path.String(), Reason: "a schema must be an object or a boolean"}
	}
	if err != nil {
		return nil, err
	}
	if err := c.b.charge(n); err != nil {
		return nil, schemaErr(err, path.String())
	}
	return n, nil
}

func (c *schemaCompiler) object(s *object, path *pointer, depth int) (*node, error) {
	keys := append([]string(nil), s.keys...)
	sort.Strings(keys)
	var validating []string // keywords beside the annotations
	for _, k := range keys {
		if annotations[k] {
			continue
		}
		if _, ok := handled[k]; !ok {
			return nil, &SchemaError{Path: path.String(), Keyword: k, Reason: "not supported"}
		}
		if s.vals[k] == nil && k != "const" {
			return nil, &SchemaError{Path: path.String(), Keyword: k, Reason: "must not be null"}
		}
		validating = append(validating, k)
	}
	if ap, ok := s.get("additionalProperties"); ok {
		if _, isBool := ap.(bool); !isBool {
			if _, isObj := ap.(*object); !isObj {
				return nil, &SchemaError{Path: path.String(), Keyword: "additionalProperties", Reason: "must be a boolean or a schema"}
			}
		}
	}
	// Keywords that replace the rest of the schema allow only annotations (and type,
	// for const and enum) beside them: anything else would go unchecked.
	for _, kw := range []string{"$ref", "const", "enum", "anyOf", "allOf"} {
		if _, ok := s.get(kw); !ok {
			continue
		}
		for _, k := range validating {
			if k != kw && !(k == "type" && (kw == "const" || kw == "enum")) {
				return nil, &SchemaError{Path: path.String(), Keyword: k, Reason: "not supported beside " + kw}
			}
		}
		switch kw {
		case "$ref":
			return c.ref(s, path, depth)
		case "const":
			return c.values([]any{s.vals["const"]}, s, path, "const")
		case "enum":
			vals, ok := s.vals["enum"].([]any)
			if !ok || len(vals) == 0 {
				return nil, &SchemaError{Path: path.String(), Keyword: "enum", Reason: "must be a non-empty array"}
			}
			return c.values(vals, s, path, "enum")
		case "anyOf":
			return c.anyOf(s.vals["anyOf"], path.down("anyOf"), depth)
		case "allOf":
			list, ok := s.vals["allOf"].([]any)
			if !ok || len(list) != 1 {
				return nil, &SchemaError{Path: path.String(), Keyword: "allOf", Reason: "only an allOf of one schema is supported"}
			}
			return c.schema(list[0], path.down("allOf").down("0"), depth+1)
		}
	}
	types, err := c.types(s, path)
	if err != nil {
		return nil, err
	}
	if types == nil {
		// No type and no keyword that constrains one: any value.
		return ref(anyValueRule), nil
	}
	var kids []*node
	for _, t := range types {
		n, err := c.typed(s, t, path, depth)
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
	}
	return alt(kids...), nil
}

// types returns the schema's types: its type keyword, or without one the types its
// keywords constrain (minLength makes it a string, …; a value of another type would
// validate too, but generating only constrained ones is what keeps the keywords honoured).
// nil means any value.
func (c *schemaCompiler) types(s *object, path *pointer) ([]string, error) {
	switch t := s.vals["type"].(type) {
	case string:
		return []string{t}, nil
	case []any:
		var types []string
		for _, ti := range t {
			name, ok := ti.(string)
			if !ok {
				return nil, &SchemaError{Path: path.String(), Keyword: "type", Reason: "must be a string or a list of strings"}
			}
			types = append(types, name)
		}
		if len(types) == 0 {
			return nil, &SchemaError{Path: path.String(), Keyword: "type", Reason: "must not be an empty list"}
		}
		return types, nil
	case nil:
		var types []string
		for _, t := range []string{"object", "array", "string", "integer"} {
			for _, k := range s.keys {
				if handled[k] == t {
					types = append(types, t)
					break
				}
			}
		}
		return types, nil
	}
	return nil, &SchemaError{Path: path.String(), Keyword: "type", Reason: "must be a string or a list of strings"}
}

// values is the alternatives of const or enum values, keeping those of the schema's type
// when it has one.
func (c *schemaCompiler) values(vals []any, s *object, path *pointer, kw string) (*node, error) {
	types, err := c.types(s, path)
	if err != nil {
		return nil, err
	}
	if _, typed := s.get("type"); !typed {
		types = nil
	}
	var kids []*node
	for _, v := range vals {
		if types != nil && !hasType(v, types) {
			continue
		}
		n := lit(appendJSON(nil, v))
		if err := c.b.charge(n); err != nil {
			return nil, schemaErr(err, path.String())
		}
		kids = append(kids, n)
	}
	if len(kids) == 0 {
		return nil, &SchemaError{Path: path.String(), Keyword: kw, Reason: "no value is of the schema's type"}
	}
	return alt(kids...), nil
}

// hasType reports whether a JSON value is of one of the types.
func hasType(v any, types []string) bool {
	for _, t := range types {
		switch v := v.(type) {
		case nil:
			if t == "null" {
				return true
			}
		case bool:
			if t == "boolean" {
				return true
			}
		case string:
			if t == "string" {
				return true
			}
		case []any:
			if t == "array" {
				return true
			}
		case *object:
			if t == "object" {
				return true
			}
		case json.Number:
			if t == "number" {
				return true
			}
			if f, err := strconv.ParseFloat(string(v), 64); t == "integer" && err == nil && f == math.Trunc(f) {
				return true
			}
		}
	}
	return false
}

func (c *schemaCompiler) anyOf(v any, path *pointer, depth int) (*node, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, &SchemaError{Path: path.up.String(), Keyword: "anyOf", Reason: "must be a non-empty array"}
	}
	var kids []*node
	for i, s := range list {
		n, err := c.schema(s, path.down(strconv.Itoa(i)), depth+1)
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
	}
	return alt(kids...), nil
}

func (c *schemaCompiler) ref(s *object, path *pointer, depth int) (*node, error) {
	r, ok := s.vals["$ref"].(string)
	if !ok {
		return nil, &SchemaError{Path: path.String(), Keyword: "$ref", Reason: "must be a string"}
	}
	name := c.prefix + "ref:" + r
	if _, done := c.rules[name]; done {
		return ref(name), nil
	}
	var target any
	if r == "#" {
		target = c.root
	} else if t, ok := c.defs[r]; ok {
		target = t
	} else {
		return nil, &SchemaError{Path: path.String(), Keyword: "$ref", Reason: fmt.Sprintf("%q: only #, #/$defs/NAME and #/definitions/NAME are supported", r)}
	}
	c.rules[name] = fail() // placeholder while compiling a recursive definition
	n, err := c.schema(target, &pointer{seg: r}, depth+1)
	if err != nil {
		return nil, err
	}
	c.rules[name] = n
	return ref(name), nil
}

func (c *schemaCompiler) typed(s *object, t string, path *pointer, depth int) (*node, error) {
	switch t {
	case "object":
		return c.objectType(s, path, depth)
	case "array":
		return c.arrayType(s, path, depth)
	case "string":
		return c.stringType(s, path)
	case "integer":
		return integerType(s, path)
	case "number":
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if _, ok := s.get(k); ok {
				return nil, &SchemaError{Path: path.String(), Keyword: k, Reason: "bounds are supported on integers only"}
			}
		}
		return jsonNumber(), nil
	case "boolean":
		return alt(litS("true"), litS("false")), nil
	case "null":
		return litS("null"), nil
	}
	return nil, &SchemaError{Path: path.String(), Keyword: "type", Reason: fmt.Sprintf("unknown type %q", t)}
}

func (c *schemaCompiler) objectType(s *object, path *pointer, depth int) (*node, error) {
	var props *object
	if p, ok := s.get("properties"); ok {
		if props, ok = p.(*object); !ok {
			return nil, &SchemaError{Path: path.String(), Keyword: "properties", Reason: "must be an object"}
		}
	} else {
		props = &object{}
	}
	required := map[string]bool{}
	if r, ok := s.get("required"); ok {
		list, ok := r.([]any)
		if !ok {
			return nil, &SchemaError{Path: path.String(), Keyword: "required", Reason: "must be an array of strings"}
		}
		for _, name := range list {
			n, ok := name.(string)
			if !ok {
				return nil, &SchemaError{Path: path.String(), Keyword: "required", Reason: "must list strings"}
			}
			if _, ok := props.get(n); !ok {
				return nil, &SchemaError{Path: path.String(), Keyword: "required", Reason: fmt.Sprintf("%q is not among the properties", n)}
			}
			required[n] = true
		}
	}
	sep := func() *node { return seq(litS(","), ws()) }
	if len(props.keys) == 0 {
		ap, _ := s.get("additionalProperties")
		if up, ok := s.get("unevaluatedProperties"); ok && ap == nil {
			ap = up
		}
		if b, ok := ap.(bool); ok && !b {
			return litS("{}"), nil
		}
		v := ref(anyValueRule)
		if m, ok := ap.(*object); ok {
			var err error
			if v, err = c.schema(m, path.down("additionalProperties"), depth+1); err != nil {
				return nil, err
			}
		}
		member := seq(jsonString(0, -1), litS(":"), ws(), v)
		return seq(litS("{"), opt(list(member, sep())), litS("}")), nil
	}
	var kvs []*node
	var req []bool
	for _, name := range props.keys {
		v, err := c.schema(props.vals[name], path.down("properties").down(name), depth+1)
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, seq(lit(appendString(nil, name)), litS(":"), ws(), v))
		req = append(req, required[name])
	}
	return seq(litS("{"), members(kvs, req, sep()), litS("}")), nil
}

func (c *schemaCompiler) arrayType(s *object, path *pointer, depth int) (*node, error) {
	item := ref(anyValueRule)
	if it, ok := s.get("items"); ok {
		if _, isList := it.([]any); isList {
			return nil, &SchemaError{Path: path.String(), Keyword: "items", Reason: "tuple form (a list of schemas) is not supported"}
		}
		n, err := c.schema(it, path.down("items"), depth+1)
		if err != nil {
			return nil, err
		}
		item = n
	}
	lo, hi, err := bounds(s, path, "minItems", "maxItems")
	if err != nil {
		return nil, err
	}
	sep := func() *node { return seq(litS(","), ws()) }
	if lo == 0 && hi < 0 {
		return seq(litS("["), opt(list(item, sep())), litS("]")), nil
	}
	if hi == 0 {
		return litS("[]"), nil
	}
	body := seq(item, rep(seq(sep(), item), max(lo-1, 0), hiMinus1(hi)))
	if lo == 0 {
		body = opt(body)
	}
	return seq(litS("["), body, litS("]")), nil
}

func hiMinus1(hi int) int {
	if hi < 0 {
		return -1
	}
	return hi - 1
}

// bounds reads a pair of non-negative integer keywords (max -1 when absent).
func bounds(s *object, path *pointer, minKW, maxKW string) (lo, hi int, err error) {
	hi = -1
	for _, kw := range []string{minKW, maxKW} {
		v, ok := s.get(kw)
		if !ok {
			continue
		}
		num, ok := v.(json.Number)
		n, perr := strconv.Atoi(string(num))
		if !ok || perr != nil || n < 0 || n > 10000 {
			return 0, 0, &SchemaError{Path: path.String(), Keyword: kw, Reason: "must be an integer from 0 to 10000"}
		}
		if kw == minKW {
			lo = n
		} else {
			hi = n
		}
	}
	if hi >= 0 && lo > hi {
		return 0, 0, &SchemaError{Path: path.String(), Keyword: minKW, Reason: fmt.Sprintf("%d is above %s %d", lo, maxKW, hi)}
	}
	return lo, hi, nil
}

func (c *schemaCompiler) stringType(s *object, path *pointer) (*node, error) {
	lo, hi, err := bounds(s, path, "minLength", "maxLength")
	if err != nil {
		return nil, err
	}
	_, hasPattern := s.get("pattern")
	_, hasMin := s.get("minLength")
	_, hasMax := s.get("maxLength")
	if f, ok := s.get("format"); ok {
		name, _ := f.(string)
		re, ok := formats[name]
		if !ok {
			return nil, &SchemaError{Path: path.String(), Keyword: "format", Reason: fmt.Sprintf("%q is not supported (date, time, date-time, uuid are)", name)}
		}
		if hasPattern || hasMin || hasMax {
			return nil, &SchemaError{Path: path.String(), Keyword: "format", Reason: "cannot be combined with pattern or lengths"}
		}
		n, err := patternNode(re, path.String(), c.b)
		if err != nil {
			return nil, err
		}
		return seq(litS(`"`), n, litS(`"`)), nil
	}
	if hasPattern {
		re, ok := s.vals["pattern"].(string)
		if !ok {
			return nil, &SchemaError{Path: path.String(), Keyword: "pattern", Reason: "must be a string"}
		}
		if hasMin || hasMax {
			return nil, &SchemaError{Path: path.String(), Keyword: "pattern", Reason: "cannot be combined with minLength/maxLength"}
		}
		n, err := patternNode(re, path.String(), c.b)
		if err != nil {
			return nil, err
		}
		return seq(litS(`"`), n, litS(`"`)), nil
	}
	return jsonString(lo, hi), nil
}

var formats = map[string]string{
	"date":      `^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`,
	"time":      `^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`,
	"date-time": `^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`,
	"uuid":      `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`,
}

// maxIntBound is the largest magnitude of an integer bound: 10^15, as documented.
const maxIntBound = 1_000_000_000_000_000

func integerType(s *object, path *pointer) (*node, error) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	for _, kw := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		v, ok := s.get(kw)
		if !ok {
			continue
		}
		num, ok := v.(json.Number)
		if !ok {
			return nil, &SchemaError{Path: path.String(), Keyword: kw, Reason: "must be a number"}
		}
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil || math.Abs(f) > maxIntBound {
			return nil, &SchemaError{Path: path.String(), Keyword: kw, Reason: "must be a number within ±1e15"}
		}
		// Exact for integers written as such (float64 holds every integer up to 2^53).
		if n, err := strconv.ParseInt(string(num), 10, 64); err == nil {
			f = float64(n)
		}
		switch kw {
		case "minimum": // n ≥ f
			lo = max(lo, int64(math.Ceil(f)))
		case "exclusiveMinimum": // n > f
			lo = max(lo, int64(math.Floor(f))+1)
		case "maximum": // n ≤ f
			hi = min(hi, int64(math.Floor(f)))
		case "exclusiveMaximum": // n < f
			hi = min(hi, int64(math.Ceil(f))-1)
		}
	}
	if lo > hi {
		return nil, &SchemaError{Path: path.String(), Keyword: "minimum", Reason: "no integer lies within the bounds"}
	}
	if lo == math.MinInt64 && hi == math.MaxInt64 {
		return jsonInteger(), nil
	}
	return intRange(lo, hi), nil
}

// intRange is the decimal text of the integers lo..hi without leading zeros (either end
// may be unbounded: MinInt64/MaxInt64, which stand for ±(10^15-1), the longest integer an
// unbounded schema generates).
func intRange(lo, hi int64) *node {
	const unbounded = maxIntBound - 1
	if lo == math.MinInt64 {
		lo = -unbounded
	}
	if hi == math.MaxInt64 {
		hi = unbounded
	}
	var kids []*node
	if lo < 0 {
		// Negative part: -(1..-lo) intersected with hi.
		nlo, nhi := int64(1), -lo
		if hi < 0 {
			nlo = -hi
		}
		kids = append(kids, seq(litS("-"), natRange(nlo, nhi)))
	}
	if hi >= 0 {
		kids = append(kids, natRange(max(lo, 0), hi))
	}
	return alt(kids...)
}

// natRange is the decimal text of lo..hi, 0 ≤ lo ≤ hi ≤ 10^15: one piece per number of
// digits, each the digit-by-digit ranges of sameLen.
func natRange(lo, hi int64) *node {
	var kids []*node
	for dlo, dhi := int64(0), int64(9); dlo <= hi; dlo, dhi = dhi+1, dhi*10+9 {
		// dlo..dhi are the numbers of one length: 0..9, 10..99, 100..999, …
		if a, b := max(lo, dlo), min(hi, dhi); a <= b {
			kids = append(kids, sameLen(strconv.FormatInt(a, 10), strconv.FormatInt(b, 10)))
		}
	}
	return alt(kids...)
}

// sameLen matches the decimal strings from a to b, both of the same length, as regex range
// generators do: split at the first differing digit into "a's digit, then a's tail up to
// 99…", "a digit in between, then anything", "b's digit, then 00… up to b's tail". Only the
// first and last pieces recurse, and each on a side already pinned to all nines or all
// zeros, so the expression has O(digits) nodes.
func sameLen(a, b string) *node {
	if len(a) == 0 {
		return empty()
	}
	if a == b {
		return litS(a)
	}
	if allDigit(a, '0') && allDigit(b, '9') {
		return rep(digit(), len(a), len(a))
	}
	if a[0] == b[0] {
		return seq(litS(a[:1]), sameLen(a[1:], b[1:]))
	}
	rest := len(a) - 1
	nines, zeros := strings.Repeat("9", rest), strings.Repeat("0", rest)
	var kids []*node
	kids = append(kids, seq(litS(a[:1]), sameLen(a[1:], nines)))
	if a[0]+1 <= b[0]-1 {
		kids = append(kids, seq(byteRange(a[0]+1, b[0]-1), rep(digit(), rest, rest)))
	}
	kids = append(kids, seq(litS(b[:1]), sameLen(zeros, b[1:])))
	return alt(kids...)
}

func allDigit(s string, d byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != d {
			return false
		}
	}
	return true
}
