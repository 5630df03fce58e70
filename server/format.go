package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/hfstatic/hfstatic/grammar"
)

// responseFormat is the response_format field: {"type": "text"}, {"type": "json_object"} or
// {"type": "json_schema", "json_schema": {"name", "description", "schema", "strict"}}.
type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema"`
}

type jsonSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// grammarSpec is the language a request's reply must follow, as the request gave it. It is
// compiled once the request is admitted (Server.constrain), so that compiling counts
// against the generation slots and the grammar memory budget.
type grammarSpec struct {
	key     string // the grammar cache's key: everything the grammar is compiled from
	param   string // the request field its errors name
	compile func(*grammar.Compiler) (*grammar.Grammar, error)
}

// grammarCache keeps the compiled grammars of recent requests: clients send the same schema
// request after request, and a grammar's token masks, built on first use, are then shared
// instead of rebuilt. It holds at most grammarCacheSize grammars and grammarCacheBytes of
// them, each counted at the most it can grow to (grammar.Grammar.MaxBytes).
type grammarCache struct {
	mu    sync.Mutex
	byKey map[string]*grammar.Grammar
	order []string // oldest first
	bytes int64
}

const (
	grammarCacheSize  = 32
	grammarCacheBytes = 256 << 20
)

func (c *grammarCache) get(key string) *grammar.Grammar {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byKey[key]
}

func (c *grammarCache) add(key string, g *grammar.Grammar) {
	size := g.MaxBytes()
	if size > grammarCacheBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]*grammar.Grammar{}
	}
	if _, ok := c.byKey[key]; ok {
		return
	}
	for len(c.order) > 0 && (len(c.order) >= grammarCacheSize || c.bytes+size > grammarCacheBytes) {
		c.bytes -= c.byKey[c.order[0]].MaxBytes()
		delete(c.byKey, c.order[0])
		c.order = c.order[1:]
	}
	c.byKey[key] = g
	c.order = append(c.order, key)
	c.bytes += size
}

// formatGrammar returns the request's constraint: response_format or a GBNF grammar (not
// both); nil for none.
func (s *Server) formatGrammar(f *responseFormat, gbnf *string) (*grammarSpec, error) {
	if gbnf == nil {
		return f.spec()
	}
	if f != nil && f.Type != "" && f.Type != "text" {
		return nil, badRequest("grammar", "invalid_value", "grammar and response_format cannot be combined")
	}
	src := *gbnf
	return &grammarSpec{key: "gbnf\x00" + src, param: "grammar",
		compile: func(c *grammar.Compiler) (*grammar.Grammar, error) { return c.GBNF(src) }}, nil
}

// spec checks response_format and returns the language the reply must belong to (nil for
// plain text).
func (f *responseFormat) spec() (*grammarSpec, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case "", "text":
		return nil, nil
	case "json_object":
		return &grammarSpec{key: "json_object", param: "response_format",
			compile: func(c *grammar.Compiler) (*grammar.Grammar, error) { return c.JSONSchema([]byte(`{"type":"object"}`)) }}, nil
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
		return &grammarSpec{key: "json_schema\x00" + string(schema), param: "response_format.json_schema.schema",
			compile: func(c *grammar.Compiler) (*grammar.Grammar, error) { return c.JSONSchema(schema) }}, nil
	}
	return nil, badRequest("response_format.type", "invalid_value", "response_format type %q: want text, json_object or json_schema", f.Type)
}

// constrain compiles the request's grammar (or takes it from the cache); the caller holds
// a generation slot, so at most MaxSessions compile at once. Compiling runs under
// Limits.Grammar, within ctx, and holds Limits.Grammar.CompileBytes() of GrammarMemory;
// the generation then holds the grammar's MaxBytes until it calls release.
func (s *Server) constrain(ctx context.Context, spec *grammarSpec) (g *grammar.Grammar, release func(), err error) {
	mem, lim := s.guards.grammarMemory, s.guards.limits.Grammar
	if g = s.formats.get(spec.key); g == nil {
		need := lim.CompileBytes()
		if err := mem.reserve(ctx, need, s.o.QueueTimeout); err != nil {
			return nil, nil, s.grammarMemoryError(err)
		}
		c, err := grammar.NewCompiler(ctx, lim)
		if err == nil {
			g, err = spec.compile(c)
		}
		mem.release(need)
		if err != nil {
			return nil, nil, grammarError(spec.param, err)
		}
		s.formats.add(spec.key, g)
	}
	hold := g.MaxBytes()
	if err := mem.reserve(ctx, hold, s.o.QueueTimeout); err != nil {
		return nil, nil, s.grammarMemoryError(err)
	}
	return g, func() { mem.release(hold) }, nil
}

func (s *Server) grammarMemoryError(err error) error {
	if !errors.Is(err, errGrammarMemory) {
		return err // the context ended
	}
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeOverloaded, Code: "grammar_memory", RetryAfter: 1,
		Message: fmt.Sprintf("the grammars of running requests hold this server's %d bytes for grammars; retry later", s.guards.limits.GrammarMemory)}
}

// grammarError turns a compile error into the client's error naming param: a 400 for the
// grammar's faults (unsupported keyword, syntax, a language that cannot end, a limit), the
// context's error as it is.
func grammarError(param string, err error) error {
	var (
		ae *apiError
		se *grammar.SchemaError
		ge *grammar.GBNFError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, grammar.ErrTooLarge):
		return badRequest(param, "grammar_too_large", "%s: %v; simplify it", param, err)
	case errors.As(err, &se) && se.Keyword != "":
		return badRequest(param, "unsupported_schema", "%s: keyword %q at %s: %s", param, se.Keyword, se.Path, se.Reason)
	case errors.As(err, &se):
		return badRequest(param, "invalid_schema", "%s: %v", param, err)
	case errors.As(err, &ge) || param == "grammar":
		return badRequest(param, "invalid_grammar", "%s: %v", param, err)
	}
	return badRequest(param, "invalid_value", "%s: %v", param, err)
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
