package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ardanlabs/jinja"
)

// toValue converts any JSON-marshalable Go value into a template value.
// It goes through JSON so that struct field order and json.RawMessage key
// order reach the template unchanged: templates print tools and arguments
// with tojson, and Hugging Face keeps the caller's key order there.
// Go maps have no order; their keys come out sorted.
func toValue(v any) (jinja.Value, error) {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case nil:
		return jinja.None(), nil
	case string:
		return jinja.NewString(x), nil
	case bool:
		return jinja.NewBool(x), nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("encode %T as JSON: %w", v, err)
		}
		raw = b
	}
	return decodeJSONValue(raw)
}

// decodeJSONValue parses one JSON document into a template value, keeping
// object key order and the integer/float distinction of numbers.
func decodeJSONValue(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeNext(dec)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("decode JSON value: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Undefined(), fmt.Errorf("decode JSON value: trailing data after the first value")
	}
	return v, nil
}

func decodeNext(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := jinja.NewDict()
			dict := d.AsDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				key, ok := kt.(string)
				if !ok {
					return jinja.Undefined(), fmt.Errorf("object key %v is not a string", kt)
				}
				val, err := decodeNext(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				dict.Set(key, val)
			}
			if _, err := dec.Token(); err != nil { // '}'
				return jinja.Undefined(), err
			}
			return d, nil
		case '[':
			var items []jinja.Value
			for dec.More() {
				val, err := decodeNext(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, val)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return jinja.Undefined(), err
			}
			return jinja.NewList(items), nil
		}
		return jinja.Undefined(), fmt.Errorf("unexpected delimiter %q", t)
	case nil:
		return jinja.None(), nil
	case bool:
		return jinja.NewBool(t), nil
	case string:
		return jinja.NewString(t), nil
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := t.Int64(); err == nil {
				return jinja.NewInt(i), nil
			}
		}
		f, err := t.Float64()
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("number %s: %w", s, err)
		}
		return jinja.NewFloat(f), nil
	}
	return jinja.Undefined(), fmt.Errorf("unexpected JSON token %v", tok)
}
