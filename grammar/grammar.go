// Package grammar constrains generation to a formal language: a JSON Schema, any JSON
// object, or literal text around them (tool-call wrappers). At every step a Matcher fills a
// bitset of the token ids that keep the output inside the language, and only those are
// sampled; end-of-sequence is allowed only where the language may end. Output generated
// this way always parses and validates, whatever the model's weights.
//
// How it works: a grammar is a tree of byte-level expressions (literals, byte ranges,
// sequences, alternatives, bounded repetitions, references to named rules). It is compiled
// into a Thompson NFA over bytes, with recursive rules unrolled to a fixed depth, and run as
// a lazily built DFA: each DFA state is created the first time a byte leads to it. A
// vocabulary is a trie of the tokens' bytes; the mask of a DFA state is computed once by
// walking the trie with the DFA (a dead state prunes a whole subtree of tokens) and cached,
// so a step in a state seen before costs one copy of the bitset. This is the index of
// outlines-core made lazy, with llguidance's and xgrammar's lesson that most masks repeat.
//
// It owns JSON Schema → grammar translation (the subset that OpenAI's strict structured
// outputs accept, plus length, item-count and integer bounds and plain-regex patterns; any
// other keyword is a *SchemaError naming it) and the token masks. It does not own sampling
// (package sample applies the mask) or tokenization (package tokenizer gives each token's
// bytes).
package grammar

import (
	"errors"
	"fmt"
	"sync"
)

// Errors, matched with errors.Is.
var (
	// ErrNoEnd reports a grammar with no finite string in its language (it can never end).
	ErrNoEnd = errors.New("the grammar cannot end")
	// ErrTooLarge reports a grammar whose automaton exceeds the size limits.
	ErrTooLarge = errors.New("the grammar is too large")
	// ErrRejected reports a token the grammar does not allow at this point.
	ErrRejected = errors.New("token not allowed by the grammar")
)

// SchemaError names a JSON Schema keyword that cannot be honoured, or a malformed schema.
type SchemaError struct {
	Path    string // JSON pointer of the schema object, e.g. "#/properties/tags"
	Keyword string // e.g. "patternProperties"
	Reason  string
	Err     error // ErrNoEnd or ErrTooLarge when compiling the schema's grammar failed
}

func (e *SchemaError) Unwrap() error { return e.Err }

func (e *SchemaError) Error() string {
	if e.Keyword == "" {
		return fmt.Sprintf("json schema %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("json schema %s: %q: %s", e.Path, e.Keyword, e.Reason)
}

// Grammar is a compiled language. It is safe for concurrent use; its lazily built automaton
// and token masks are shared by every Matcher made from it.
type Grammar struct {
	root  *node
	rules map[string]*node

	once sync.Once
	nfa  *nfa
	err  error

	mu     sync.Mutex
	dfa    *dfa
	masks  map[*Vocab]map[*dstate][]uint64
	nMasks int
}

// Limits of the compiled automaton and its caches.
const (
	// MaxNFAStates bounds the byte automaton a grammar compiles to.
	MaxNFAStates = 1 << 20
	// MaxDFAStates bounds the DFA states built lazily for one grammar.
	MaxDFAStates = 1 << 16
	// maxCachedMasks bounds the token masks kept per grammar (each is vocab/8 bytes).
	maxCachedMasks = 2048
	// recursionDepth is how deep recursive rules ($ref cycles, nested JSON values) unroll.
	recursionDepth = 6
)

// New compiles a grammar from its root expression and named rules (referenced with Ref).
func New(root *node, rules map[string]*node) (*Grammar, error) {
	g := &Grammar{root: root, rules: rules}
	if err := g.compile(); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *Grammar) compile() error {
	g.once.Do(func() {
		g.nfa, g.err = compileNFA(g.root, g.rules)
		if g.err == nil {
			g.dfa = newDFA(g.nfa)
			g.masks = map[*Vocab]map[*dstate][]uint64{}
		}
	})
	return g.err
}

// Literal is a grammar of exactly s.
func Literal(s string) *Grammar {
	g, _ := New(lit([]byte(s)), nil)
	return g
}

// Sequence is the language of a's strings followed by b's, and so on.
func Sequence(parts ...*Grammar) (*Grammar, error) {
	return combine(parts, func(kids []*node) *node { return seq(kids...) })
}

// Alternatives is the union of the languages.
func Alternatives(parts ...*Grammar) (*Grammar, error) {
	return combine(parts, func(kids []*node) *node { return alt(kids...) })
}

func combine(parts []*Grammar, join func([]*node) *node) (*Grammar, error) {
	rules := map[string]*node{}
	var kids []*node
	for i, p := range parts {
		prefix := fmt.Sprintf("g%d.", i)
		kids = append(kids, p.root.renamed(prefix))
		for name, r := range p.rules {
			rules[prefix+name] = r.renamed(prefix)
		}
	}
	return New(join(kids), rules)
}
