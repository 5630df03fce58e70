package server

import (
	"encoding/json"
	"errors"
	"sync"

	"github.com/hfstatic/hfstatic/grammar"
)

// responseFormat is the response_format field: {"type": "text"}, {"type": "json_object"} or
// {"type": "json_schema", "json_schema": {"name", "description", "schema", "strict"}}.
type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema"`
	gbnf       string      // Type "gbnf": the request's grammar field
}

type jsonSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// grammarCache keeps the compiled grammars of recent response formats: clients send the
// same schema request after request, and a grammar's token masks, built on first use,
// are then shared instead of rebuilt.
type grammarCache struct {
	mu    sync.Mutex
	byKey map[string]*grammar.Grammar
	order []string // oldest first
}

const grammarCacheSize = 32

func (c *grammarCache) get(f *responseFormat) (*grammar.Grammar, error) {
	if f == nil || f.Type == "" || f.Type == "text" {
		return nil, nil
	}
	key := f.Type + "\x00" + f.gbnf
	if f.JSONSchema != nil {
		key += "\x00" + string(f.JSONSchema.Schema)
	}
	c.mu.Lock()
	g, ok := c.byKey[key]
	c.mu.Unlock()
	if ok {
		return g, nil
	}
	g, err := f.grammar()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]*grammar.Grammar{}
	}
	if _, ok := c.byKey[key]; !ok {
		if len(c.order) >= grammarCacheSize {
			delete(c.byKey, c.order[0])
			c.order = c.order[1:]
		}
		c.byKey[key] = g
		c.order = append(c.order, key)
	}
	return g, nil
}

// formatGrammar returns the request's constraint: response_format or a GBNF grammar (not
// both).
func (s *Server) formatGrammar(f *responseFormat, gbnf *string) (*grammar.Grammar, error) {
	if gbnf == nil {
		return s.formats.get(f)
	}
	if f != nil && f.Type != "" && f.Type != "text" {
		return nil, badRequest("grammar", "invalid_value", "grammar and response_format cannot be combined")
	}
	return s.formats.get(&responseFormat{Type: "gbnf", gbnf: *gbnf})
}

// grammar returns the language the reply must belong to (nil for plain text). A schema the
// grammar engine cannot honour is a 400 naming the keyword.
func (f *responseFormat) grammar() (*grammar.Grammar, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case "", "text":
		return nil, nil
	case "json_object":
		return grammar.AnyJSONObject(), nil
	case "gbnf":
		g, err := grammar.ParseGBNF(f.gbnf)
		if err != nil {
			return nil, badRequest("grammar", "invalid_grammar", "grammar: %v", err)
		}
		return g, nil
	case "json_schema":
		if f.JSONSchema == nil {
			return nil, badRequest("response_format.json_schema", "invalid_value", "response_format of type json_schema needs a json_schema object")
		}
		if f.JSONSchema.Name == "" {
			return nil, badRequest("response_format.json_schema.name", "invalid_value", "json_schema.name is required")
		}
		schema := f.JSONSchema.Schema
		if isNull(schema) {
			schema = json.RawMessage(`{}`) // OpenAI: an absent schema is any JSON value
		}
		g, err := grammar.FromJSONSchema(schema)
		if err != nil {
			var se *grammar.SchemaError
			if errors.As(err, &se) {
				param := "response_format.json_schema.schema"
				if se.Keyword != "" {
					return nil, badRequest(param, "unsupported_schema", "%s: keyword %q at %s: %s", param, se.Keyword, se.Path, se.Reason)
				}
				return nil, badRequest(param, "invalid_schema", "%s: %v", param, err)
			}
			return nil, badRequest("response_format.json_schema.schema", "invalid_schema", "%v", err)
		}
		return g, nil
	}
	return nil, badRequest("response_format.type", "invalid_value", "response_format type %q: want text, json_object or json_schema", f.Type)
}

// grammarVocab is the tokenizer's vocabulary as the grammar engine sees it, built once.
type grammarVocab struct {
	once  sync.Once
	vocab *grammar.Vocab
}

func (s *Server) vocab() *grammar.Vocab {
	s.gv.once.Do(func() {
		tok := s.o.Tokenizer
		toks := make([][]byte, tok.VocabSize())
		for id := range toks {
			toks[id], _ = tok.TokenBytes(id)
		}
		s.gv.vocab = grammar.NewVocab(toks, s.eos)
	})
	return s.gv.vocab
}
