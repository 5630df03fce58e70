package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// FromJSONSchema compiles a JSON Schema into the language of the JSON documents it
// accepts. What is supported: type (one or a list), object with properties and required
// (properties are generated in the order the schema lists them; properties it does not
// list are never generated, so additionalProperties needs no support beyond being
// accepted), string (minLength, maxLength, pattern when a plain regular expression, format
// date, time, date-time, uuid), number, integer (minimum, maximum, exclusiveMinimum,
// exclusiveMaximum), boolean, null, enum, const, array (items, minItems, maxItems), anyOf,
// allOf with one member, $ref to #, #/$defs/… or #/definitions/… (recursion unrolled a fixed
// depth) and nesting. Annotations (title, description, default, examples, $schema, $id,
// $comment, deprecated, readOnly, writeOnly, strict) are ignored. Any other keyword is a
// *SchemaError naming it.
func FromJSONSchema(schema []byte) (*Grammar, error) {
	var root any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, &SchemaError{Path: "#", Reason: "not JSON: " + err.Error()}
	}
	c := &schemaCompiler{rules: map[string]*node{}, root: root, defs: map[string]any{}, orders: keyOrders(schema)}
	if m, ok := root.(map[string]any); ok {
		for _, k := range []string{"$defs", "definitions"} {
			if d, ok := m[k].(map[string]any); ok {
				for name, s := range d {
					c.defs["#/"+k+"/"+name] = s
				}
			}
		}
	}
	n, err := c.schema(root, "#")
	if err != nil {
		return nil, err
	}
	anyValueRules(c.rules)
	g, err := New(n, c.rules)
	if err != nil {
		return nil, &SchemaError{Path: "#", Reason: err.Error(), Err: err}
	}
	return g, nil
}

type schemaCompiler struct {
	orders map[string][]string // JSON pointer of an object → its keys in text order
	root   any
	defs   map[string]any // by JSON pointer
	rules  map[string]*node
}

var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$schema": true,
	"$id": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"strict": true, "$defs": true, "definitions": true, "additionalProperties": true,
	"unevaluatedProperties": true,
}

func (c *schemaCompiler) schema(s any, path string) (*node, error) {
	switch s := s.(type) {
	case bool:
		if s {
			return ref(anyValueRule), nil
		}
		return nil, &SchemaError{Path: path, Reason: "the schema false accepts nothing"}
	case map[string]any:
		return c.object(s, path)
	}
	return nil, &SchemaError{Path: path, Reason: "a schema must be an object or a boolean"}
}

func (c *schemaCompiler) object(s map[string]any, path string) (*node, error) {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !annotations[k] && !handled[k] {
			return nil, &SchemaError{Path: path, Keyword: k, Reason: "not supported"}
		}
	}
	if ap, ok := s["additionalProperties"]; ok {
		if _, isBool := ap.(bool); !isBool {
			if _, isObj := ap.(map[string]any); !isObj {
				return nil, &SchemaError{Path: path, Keyword: "additionalProperties", Reason: "must be a boolean or a schema"}
			}
		}
	}
	switch {
	case s["$ref"] != nil:
		return c.ref(s, path)
	case s["const"] != nil:
		return jsonLiteral(s["const"], path+"/const")
	case s["enum"] != nil:
		vals, ok := s["enum"].([]any)
		if !ok || len(vals) == 0 {
			return nil, &SchemaError{Path: path, Keyword: "enum", Reason: "must be a non-empty array"}
		}
		var kids []*node
		for i, v := range vals {
			n, err := jsonLiteral(v, fmt.Sprintf("%s/enum/%d", path, i))
			if err != nil {
				return nil, err
			}
			kids = append(kids, n)
		}
		return alt(kids...), nil
	case s["anyOf"] != nil:
		return c.anyOf(s["anyOf"], path+"/anyOf", "anyOf")
	case s["allOf"] != nil:
		list, ok := s["allOf"].([]any)
		if !ok || len(list) != 1 {
			return nil, &SchemaError{Path: path, Keyword: "allOf", Reason: "only an allOf of one schema is supported"}
		}
		return c.schema(list[0], path+"/allOf/0")
	}
	switch t := s["type"].(type) {
	case nil:
		if s["properties"] != nil {
			return c.typed(s, "object", path)
		}
		if s["items"] != nil {
			return c.typed(s, "array", path)
		}
		return ref(anyValueRule), nil
	case string:
		return c.typed(s, t, path)
	case []any:
		var kids []*node
		for _, ti := range t {
			name, ok := ti.(string)
			if !ok {
				return nil, &SchemaError{Path: path, Keyword: "type", Reason: "must be a string or a list of strings"}
			}
			n, err := c.typed(s, name, path)
			if err != nil {
				return nil, err
			}
			kids = append(kids, n)
		}
		return alt(kids...), nil
	}
	return nil, &SchemaError{Path: path, Keyword: "type", Reason: "must be a string or a list of strings"}
}

// handled lists the keywords this compiler honours.
var handled = map[string]bool{
	"type": true, "properties": true, "required": true, "items": true, "minItems": true,
	"maxItems": true, "minLength": true, "maxLength": true, "pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"enum": true, "const": true, "anyOf": true, "allOf": true, "$ref": true,
}

func (c *schemaCompiler) anyOf(v any, path, kw string) (*node, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, &SchemaError{Path: path, Keyword: kw, Reason: "must be a non-empty array"}
	}
	var kids []*node
	for i, s := range list {
		n, err := c.schema(s, fmt.Sprintf("%s/%d", path, i))
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
	}
	return alt(kids...), nil
}

func (c *schemaCompiler) ref(s map[string]any, path string) (*node, error) {
	r, ok := s["$ref"].(string)
	if !ok {
		return nil, &SchemaError{Path: path, Keyword: "$ref", Reason: "must be a string"}
	}
	for k := range s {
		if k != "$ref" && !annotations[k] {
			return nil, &SchemaError{Path: path, Keyword: k, Reason: "not supported beside $ref"}
		}
	}
	name := "ref:" + r
	if _, done := c.rules[name]; done {
		return ref(name), nil
	}
	var target any
	if r == "#" {
		target = c.root
	} else if t, ok := c.defs[r]; ok {
		target = t
	} else {
		return nil, &SchemaError{Path: path, Keyword: "$ref", Reason: fmt.Sprintf("%q: only #, #/$defs/NAME and #/definitions/NAME are supported", r)}
	}
	c.rules[name] = fail() // placeholder while compiling a recursive definition
	n, err := c.schema(target, r)
	if err != nil {
		return nil, err
	}
	c.rules[name] = n
	return ref(name), nil
}

func (c *schemaCompiler) typed(s map[string]any, t, path string) (*node, error) {
	switch t {
	case "object":
		return c.objectType(s, path)
	case "array":
		return c.arrayType(s, path)
	case "string":
		return c.stringType(s, path)
	case "integer":
		return integerType(s, path)
	case "number":
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if s[k] != nil {
				return nil, &SchemaError{Path: path, Keyword: k, Reason: "bounds are supported on integers only"}
			}
		}
		return jsonNumber(), nil
	case "boolean":
		return alt(litS("true"), litS("false")), nil
	case "null":
		return litS("null"), nil
	}
	return nil, &SchemaError{Path: path, Keyword: "type", Reason: fmt.Sprintf("unknown type %q", t)}
}

func (c *schemaCompiler) objectType(s map[string]any, path string) (*node, error) {
	props, _ := s["properties"].(map[string]any)
	if s["properties"] != nil && props == nil {
		return nil, &SchemaError{Path: path, Keyword: "properties", Reason: "must be an object"}
	}
	if len(props) == 0 {
		if ap, ok := s["additionalProperties"].(bool); ok && !ap {
			return litS("{}"), nil
		}
		if m, ok := s["additionalProperties"].(map[string]any); ok {
			v, err := c.schema(m, path+"/additionalProperties")
			if err != nil {
				return nil, err
			}
			member := seq(jsonString(0, -1), litS(":"), ws(), v)
			return seq(litS("{"), opt(list(member, seq(litS(","), ws()))), litS("}")), nil
		}
		return seq(litS("{"), opt(list(seq(jsonString(0, -1), litS(":"), ws(), ref(anyValueRule)), seq(litS(","), ws()))), litS("}")), nil
	}
	required := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, name := range r {
			n, ok := name.(string)
			if !ok {
				return nil, &SchemaError{Path: path, Keyword: "required", Reason: "must list strings"}
			}
			if _, ok := props[n]; !ok {
				return nil, &SchemaError{Path: path, Keyword: "required", Reason: fmt.Sprintf("%q is not among the properties", n)}
			}
			required[n] = true
		}
	}
	names := c.propertyOrder(path, props)
	type member struct {
		kv       *node
		required bool
	}
	var members []member
	for _, name := range names {
		v, err := c.schema(props[name], path+"/properties/"+name)
		if err != nil {
			return nil, err
		}
		key, _ := json.Marshal(name)
		members = append(members, member{seq(lit(key), litS(":"), ws(), v), required[name]})
	}
	comma := func() *node { return seq(litS(","), ws()) }
	// after(i): members i.. with at least one before them (each present one takes a comma).
	after := func(i int) *node {
		var parts []*node
		for _, m := range members[i:] {
			item := seq(comma(), m.kv)
			if !m.required {
				item = opt(item)
			}
			parts = append(parts, item)
		}
		return seq(parts...)
	}
	// first(i): members i.. with none before them: the first present one takes no comma.
	var first func(i int) *node
	first = func(i int) *node {
		if i == len(members) {
			return empty()
		}
		m := members[i]
		withIt := seq(m.kv, after(i+1))
		if m.required {
			return withIt
		}
		return alt(withIt, first(i+1))
	}
	return seq(litS("{"), first(0), litS("}")), nil
}

// propertyOrder returns the property names in the order the schema text lists them
// (Go maps lose it), so that generation follows the schema's order.
func (c *schemaCompiler) propertyOrder(path string, props map[string]any) []string {
	if names := c.orders[path+"/properties"]; len(names) == len(props) {
		return names
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// keyOrders records, for every object in a JSON text, its keys in order, by JSON pointer
// ("#", "#/properties", "#/properties/a", …; names unescaped).
func keyOrders(text []byte) map[string][]string {
	orders := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(text))
	var walk func(path string) error
	walk = func(path string) error {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'):
			var keys []string
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				keys = append(keys, key)
				if err := walk(path + "/" + key); err != nil {
					return err
				}
			}
			orders[path] = keys
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s/%d", path, i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	walk("#")
	return orders
}

func (c *schemaCompiler) arrayType(s map[string]any, path string) (*node, error) {
	item := ref(anyValueRule)
	if it, ok := s["items"]; ok {
		if _, isList := it.([]any); isList {
			return nil, &SchemaError{Path: path, Keyword: "items", Reason: "tuple form (a list of schemas) is not supported"}
		}
		n, err := c.schema(it, path+"/items")
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
func bounds(s map[string]any, path, minKW, maxKW string) (lo, hi int, err error) {
	hi = -1
	for _, kw := range []string{minKW, maxKW} {
		v, ok := s[kw]
		if !ok {
			continue
		}
		num, ok := v.(json.Number)
		n, perr := strconv.Atoi(string(num))
		if !ok || perr != nil || n < 0 || n > 10000 {
			return 0, 0, &SchemaError{Path: path, Keyword: kw, Reason: "must be an integer from 0 to 10000"}
		}
		if kw == minKW {
			lo = n
		} else {
			hi = n
		}
	}
	if hi >= 0 && lo > hi {
		return 0, 0, &SchemaError{Path: path, Keyword: minKW, Reason: fmt.Sprintf("%d is above %s %d", lo, maxKW, hi)}
	}
	return lo, hi, nil
}

func (c *schemaCompiler) stringType(s map[string]any, path string) (*node, error) {
	lo, hi, err := bounds(s, path, "minLength", "maxLength")
	if err != nil {
		return nil, err
	}
	if f, ok := s["format"]; ok {
		name, _ := f.(string)
		re, ok := formats[name]
		if !ok {
			return nil, &SchemaError{Path: path, Keyword: "format", Reason: fmt.Sprintf("%q is not supported (date, time, date-time, uuid are)", f)}
		}
		if s["pattern"] != nil || s["minLength"] != nil || s["maxLength"] != nil {
			return nil, &SchemaError{Path: path, Keyword: "format", Reason: "cannot be combined with pattern or lengths"}
		}
		n, err := patternNode(re, path)
		if err != nil {
			return nil, err
		}
		return seq(litS(`"`), n, litS(`"`)), nil
	}
	if p, ok := s["pattern"]; ok {
		re, ok := p.(string)
		if !ok {
			return nil, &SchemaError{Path: path, Keyword: "pattern", Reason: "must be a string"}
		}
		if s["minLength"] != nil || s["maxLength"] != nil {
			return nil, &SchemaError{Path: path, Keyword: "pattern", Reason: "cannot be combined with minLength/maxLength"}
		}
		n, err := patternNode(re, path)
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

// jsonLiteral is the compact JSON text of a value (const, enum members).
func jsonLiteral(v any, path string) (*node, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, &SchemaError{Path: path, Reason: err.Error()}
	}
	return lit(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

func integerType(s map[string]any, path string) (*node, error) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	read := func(kw string) (int64, bool, error) {
		v, ok := s[kw]
		if !ok {
			return 0, false, nil
		}
		num, ok := v.(json.Number)
		if !ok {
			return 0, false, &SchemaError{Path: path, Keyword: kw, Reason: "must be a number"}
		}
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil || math.Abs(f) > 1e15 {
			return 0, false, &SchemaError{Path: path, Keyword: kw, Reason: "must be a number within ±1e15"}
		}
		if kw == "minimum" || kw == "exclusiveMaximum" {
			f = math.Ceil(f)
		} else {
			f = math.Floor(f)
		}
		return int64(f), true, nil
	}
	for _, kw := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		n, ok, err := read(kw)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		switch kw {
		case "minimum":
			lo = max(lo, n)
		case "exclusiveMinimum":
			if raw, _ := strconv.ParseFloat(string(s[kw].(json.Number)), 64); raw == math.Floor(raw) {
				n++
			}
			lo = max(lo, n)
		case "maximum":
			hi = min(hi, n)
		case "exclusiveMaximum":
			if raw, _ := strconv.ParseFloat(string(s[kw].(json.Number)), 64); raw == math.Ceil(raw) {
				n--
			}
			hi = min(hi, n)
		}
	}
	if lo > hi {
		return nil, &SchemaError{Path: path, Keyword: "minimum", Reason: "no integer lies within the bounds"}
	}
	if lo == math.MinInt64 && hi == math.MaxInt64 {
		return jsonInteger(), nil
	}
	return intRange(lo, hi), nil
}

// intRange is the decimal text of the integers lo..hi (either end may be unbounded:
// MinInt64/MaxInt64), without leading zeros, within maxIntDigits digits.
func intRange(lo, hi int64) *node {
	limit := int64(math.Pow10(maxIntDigits)) - 1
	lo, hi = max(lo, -limit), min(hi, limit)
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

// natRange is the decimal text of lo..hi, 0 ≤ lo ≤ hi.
func natRange(lo, hi int64) *node {
	var kids []*node
	// Split by number of digits.
	for d := 1; d <= maxIntDigits; d++ {
		dlo, dhi := int64(math.Pow10(d-1)), int64(math.Pow10(d))-1
		if d == 1 {
			dlo = 0
		}
		a, b := max(lo, dlo), min(hi, dhi)
		if a > b {
			continue
		}
		kids = append(kids, sameLen(strconv.FormatInt(a, 10), strconv.FormatInt(b, 10)))
	}
	return alt(kids...)
}

// sameLen matches the decimal strings from a to b, both of the same length.
func sameLen(a, b string) *node {
	if len(a) == 0 {
		return empty()
	}
	if a == b {
		return litS(a)
	}
	if a[0] == b[0] {
		return seq(litS(a[:1]), sameLen(a[1:], b[1:]))
	}
	rest := len(a) - 1
	nines, zeros := strings.Repeat("9", rest), strings.Repeat("0", rest)
	var kids []*node
	// a[0] followed by a[1:]..99…
	kids = append(kids, seq(litS(a[:1]), sameLen(a[1:], nines)))
	if a[0]+1 <= b[0]-1 {
		kids = append(kids, seq(byteRange(a[0]+1, b[0]-1), rep(digit(), rest, rest)))
	}
	kids = append(kids, seq(litS(b[:1]), sameLen(zeros, b[1:])))
	return alt(kids...)
}
