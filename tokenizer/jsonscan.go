package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The vocabulary and merges are most of tokenizer.json (up to 500,000
// entries); this scanner reads them several times faster than
// encoding/json. The input was already validated by json.Unmarshal of the
// enclosing document, so errors here mean a wrong shape, not bad syntax.

type jsonScanner struct {
	data []byte
	pos  int
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// next skips white space and returns the next byte (0 at the end).
func (s *jsonScanner) next() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *jsonScanner) expect(c byte) error {
	if s.next() != c {
		return fmt.Errorf("expected %q at offset %d", c, s.pos)
	}
	s.pos++
	return nil
}

// str reads a JSON string.
func (s *jsonScanner) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start := s.pos
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; {
		case c == '"':
			out := string(s.data[start:s.pos])
			s.pos++
			return out, nil
		case c == '\\':
			return s.escapedStr(start)
		default:
			s.pos++
		}
	}
	return "", fmt.Errorf("unterminated string at offset %d", start)
}

// escapedStr finishes a string that contains escapes; s.pos is at the first
// backslash.
func (s *jsonScanner) escapedStr(start int) (string, error) {
	buf := append([]byte(nil), s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return string(buf), nil
		case c != '\\':
			buf = append(buf, c)
			s.pos++
			continue
		}
		if s.pos+1 >= len(s.data) {
			break
		}
		e := s.data[s.pos+1]
		s.pos += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", fmt.Errorf("bad \\u escape at offset %d", s.pos)
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				save := s.pos
				if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
					s.pos += 2
					if lo, ok := s.hex4(); ok {
						r2 = utf16.DecodeRune(r, lo)
					}
				}
				if r2 == utf8.RuneError {
					s.pos = save // encoding/json: lone surrogate becomes U+FFFD
				}
				r = r2
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", fmt.Errorf("bad escape \\%c at offset %d", e, s.pos)
		}
	}
	return "", fmt.Errorf("unterminated string at offset %d", start)
}

func (s *jsonScanner) hex4() (rune, bool) {
	if s.pos+4 > len(s.data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.data[s.pos:s.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.pos += 4
	return rune(v), true
}

func (s *jsonScanner) integer() (int, error) {
	s.skipSpace()
	start := s.pos
	for s.pos < len(s.data) && (s.data[s.pos] == '-' || (s.data[s.pos] >= '0' && s.data[s.pos] <= '9')) {
		s.pos++
	}
	n, err := strconv.Atoi(string(s.data[start:s.pos]))
	if err != nil {
		return 0, fmt.Errorf("expected an integer at offset %d", start)
	}
	return n, nil
}

// list calls item for each element of a JSON array.
func (s *jsonScanner) list(item func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.next() == ']' {
		s.pos++
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		switch s.next() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return fmt.Errorf("expected ',' or ']' at offset %d", s.pos)
		}
	}
}

// parseVocab reads {"token": id, ...}.
func parseVocab(raw json.RawMessage) (map[string]int, error) {
	s := &jsonScanner{data: raw}
	vocab := make(map[string]int, len(raw)/16)
	if err := s.expect('{'); err != nil {
		return nil, invalidf("model.vocab: %v", err)
	}
	if s.next() == '}' {
		return vocab, nil
	}
	for {
		tok, err := s.str()
		if err == nil {
			err = s.expect(':')
		}
		var id int
		if err == nil {
			id, err = s.integer()
		}
		if err != nil {
			return nil, invalidf("model.vocab: %v", err)
		}
		vocab[tok] = id
		switch s.next() {
		case ',':
			s.pos++
		case '}':
			return vocab, nil
		default:
			return nil, invalidf("model.vocab: expected ',' or '}' at offset %d", s.pos)
		}
	}
}

// skipValue moves past one JSON value of any kind.
func (s *jsonScanner) skipValue() error {
	switch s.next() {
	case '"':
		_, err := s.rawString()
		return err
	case '{', '[':
		depth := 0
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case '"':
				if _, err := s.rawString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.pos++
					return nil
				}
			}
			s.pos++
		}
		return fmt.Errorf("unterminated value")
	case 0:
		return fmt.Errorf("unexpected end of input")
	}
	start := s.pos // number, true, false, null
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if s.pos == start {
				return fmt.Errorf("expected a value at offset %d", start)
			}
			return nil
		}
		s.pos++
	}
	return nil
}

// rawString moves past a string without decoding it.
func (s *jsonScanner) rawString() ([]byte, error) {
	start := s.pos
	s.pos++ // opening quote
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case '\\':
			s.pos += 2
			continue
		case '"':
			s.pos++
			return s.data[start:s.pos], nil
		}
		s.pos++
	}
	return nil, fmt.Errorf("unterminated string at offset %d", start)
}

// objectFields splits a JSON object into its members' raw values (later
// duplicates win, as in encoding/json).
func objectFields(raw []byte) (map[string]json.RawMessage, error) {
	s := &jsonScanner{data: raw}
	fields := map[string]json.RawMessage{}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	if s.next() == '}' {
		s.pos++
		return fields, s.end()
	}
	for {
		key, err := s.str()
		if err == nil {
			err = s.expect(':')
		}
		if err != nil {
			return nil, err
		}
		s.skipSpace()
		start := s.pos
		if err := s.skipValue(); err != nil {
			return nil, err
		}
		fields[key] = raw[start:s.pos]
		switch s.next() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return fields, s.end()
		default:
			return nil, fmt.Errorf("expected ',' or '}' at offset %d", s.pos)
		}
	}
}

// end checks that only white space follows.
func (s *jsonScanner) end() error {
	if s.next() != 0 {
		return fmt.Errorf("unexpected data after the object at offset %d", s.pos)
	}
	return nil
}
