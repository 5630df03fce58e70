package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A schema is decoded into these values: nil, bool, json.Number, string, []any and *object.
// Objects keep their keys' order (properties are generated in the order the schema lists
// them), and decoding counts each value against the budget and its nesting against MaxDepth.

// object is a JSON object that remembers the order of its keys.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// decodeJSON decodes one JSON value, and nothing after it.
func decodeJSON(text []byte, b *budget) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	v, err := decodeValue(dec, b, 1)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, b *budget, depth int) (any, error) {
	if err := b.spend(1); err != nil {
		return nil, err
	}
	b.nodes++
	if b.nodes > b.lim.MaxNodes {
		return nil, b.fail(&LimitError{Limit: "MaxNodes", Max: int64(b.lim.MaxNodes), What: "JSON values and expression nodes"})
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if err := b.depth(depth, "brackets in the JSON text"); err != nil {
		return nil, err
	}
	if d == '[' {
		list := []any{}
		for dec.More() {
			v, err := decodeValue(dec, b, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token()
		return list, err
	}
	o := &object{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := k.(string) // the decoder allows only strings here
		v, err := decodeValue(dec, b, depth+1)
		if err != nil {
			return nil, err
		}
		if o.vals == nil {
			o.vals = map[string]any{}
		}
		if _, dup := o.vals[key]; !dup {
			o.keys = append(o.keys, key)
		}
		o.vals[key] = v
	}
	_, err = dec.Token()
	return o, err
}

// appendJSON appends v's compact JSON text (keys in order, no HTML escaping).
func appendJSON(buf []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...)
	case bool:
		if v {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case json.Number:
		return append(buf, v...)
	case string:
		return appendString(buf, v)
	case []any:
		buf = append(buf, '[')
		for i, x := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSON(buf, x)
		}
		return append(buf, ']')
	case *object:
		buf = append(buf, '{')
		for i, k := range v.keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, k)
			buf = append(buf, ':')
			buf = appendJSON(buf, v.vals[k])
		}
		return append(buf, '}')
	}
	panic(fmt.Sprintf("grammar: appendJSON of %T", v)) // decodeJSON makes no other type
}

func appendString(buf []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(buf, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

// pointer is a JSON pointer, built as the compiler descends and spelled out only for an
// error (spelling every path out would cost the depth times the key lengths per value).
type pointer struct {
	up  *pointer
	seg string // a key or index below up; the whole text when up is nil ("#", "#/$defs/x")
}

func (p *pointer) down(seg string) *pointer { return &pointer{up: p, seg: seg} }

func (p *pointer) String() string {
	if p.up == nil {
		return p.seg
	}
	return p.up.String() + "/" + escapePointer(p.seg)
}

// escapePointer escapes a key as a JSON pointer segment (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
