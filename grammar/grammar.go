// Package grammar constrains generation to a formal language: a JSON Schema, any JSON
// object, a GBNF grammar, or literal text around them (tool-call wrappers). At every step a
// Matcher fills a bitset of the token ids that keep the output inside the language, and only
// those are sampled; end-of-sequence is allowed only where the language may end. Output
// generated this way always parses and validates, whatever the model's weights.
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
// Sources come from strangers, so every compilation runs under Limits fixed before it starts
// (nesting, expression nodes, automaton states, wall time, the caller's context), counted as
// the work grows; a Compiler holds one such budget and may compile several sources under it
// (a request's tools). A grammar's DFA and mask caches are bounded too, also while it is
// matching.
//
// It owns JSON Schema → grammar translation (the subset that OpenAI's strict structured
// outputs accept, plus length, item-count and integer bounds and plain-regex patterns; any
// other keyword is a *SchemaError naming it) and the token masks. It does not own sampling
// (package sample applies the mask) or tokenization (package tokenizer gives each token's
// bytes).
package grammar

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors, matched with errors.Is.
var (
	// ErrNoEnd reports a grammar with no finite string in its language (it can never end).
	ErrNoEnd = errors.New("the grammar cannot end")
	// ErrTooLarge reports work past one of the Limits (a *LimitError says which).
	ErrTooLarge = errors.New("the grammar is too large")
	// ErrRejected reports a token the grammar does not allow at this point.
	ErrRejected = errors.New("token not allowed by the grammar")
)

// SchemaError names a JSON Schema keyword that cannot be honoured, or a malformed schema.
type SchemaError struct {
	Path    string // JSON pointer of the schema object, e.g. "#/properties/tags"
	Keyword string // e.g. "patternProperties"
	Reason  string
	Err     error // ErrNoEnd or a *LimitError when compiling the schema's grammar failed
}

func (e *SchemaError) Unwrap() error { return e.Err }

func (e *SchemaError) Error() string {
	if e.Keyword == "" {
		return fmt.Sprintf("json schema %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("json schema %s: %q: %s", e.Path, e.Keyword, e.Reason)
}

// LimitError reports work past one of the Limits. It matches ErrTooLarge.
type LimitError struct {
	Limit string // the Limits field: "MaxDepth", "MaxNodes", "MaxStates", "Timeout", "MaxDFABytes", "MaxMaskWork"
	Max   int64  // its value (nanoseconds for Timeout)
	What  string // what went past it, e.g. "nesting of ( ) groups"
}

func (e *LimitError) Unwrap() error { return ErrTooLarge }

func (e *LimitError) Error() string {
	limit := fmt.Sprint(e.Max)
	if e.Limit == "Timeout" {
		limit = time.Duration(e.Max).String()
	}
	return fmt.Sprintf("%v: %s: more than %s (grammar.Limits.%s)", ErrTooLarge, e.What, limit, e.Limit)
}

// Limits bound the work and memory one request's grammars may cost. A zero field takes
// DefaultLimits' value.
type Limits struct {
	// MaxDepth bounds nesting in a source: brackets in JSON, ( ) in GBNF and in patterns,
	// and subschemas (through $ref too) in a JSON Schema.
	MaxDepth int
	// MaxNodes bounds the expression nodes built from the sources, across every grammar one
	// Compiler builds (about 130 bytes each).
	MaxNodes int
	// MaxStates bounds the byte-automaton states built, across every grammar one Compiler
	// builds (about 64 bytes each).
	MaxStates int
	// Timeout bounds a Compiler's wall time, from NewCompiler.
	Timeout time.Duration
	// MaxDFABytes bounds one grammar's lazily built DFA while it matches: when it is full
	// it is emptied and rebuilt as needed; a token whose mask needs more than a whole
	// cache stops the match with a *LimitError.
	MaxDFABytes int64
	// MaxMaskBytes bounds one grammar's cached token masks (masks beyond it are computed
	// each time they are needed).
	MaxMaskBytes int64
	// MaxMaskWork bounds the automaton work of one token's mask: the NFA states and edges
	// visited while building the DFA states the mask needs. A grammar whose states each
	// close over long chains of empty steps (GBNF's ("" ""){1000}) makes every new DFA
	// state cost that much; past the bound the match stops with a *LimitError.
	MaxMaskWork int64
}

// DefaultLimits: nesting 256, 2^18 nodes, 2^20 states, 5 s, 8 MiB of DFA, 16 MiB of masks
// (about 850 masks of a 150k-token vocabulary), 2^26 units of work per mask (about
// 0.2 s; a 100,000-value enum needs 2^25).
var DefaultLimits = Limits{MaxDepth: 256, MaxNodes: 1 << 18, MaxStates: 1 << 20, Timeout: 5 * time.Second,
	MaxDFABytes: 8 << 20, MaxMaskBytes: 16 << 20, MaxMaskWork: 1 << 26}

// Approximate sizes, for the memory estimates below.
const (
	nodeBytes  = 160 // a node, its slices' headers and a share of their contents
	stateBytes = 64  // an NFA state and its epsilon edges
)

// Validate reports a negative field, naming it.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxDepth", int64(l.MaxDepth)}, {"MaxNodes", int64(l.MaxNodes)}, {"MaxStates", int64(l.MaxStates)},
		{"Timeout", int64(l.Timeout)}, {"MaxDFABytes", l.MaxDFABytes}, {"MaxMaskBytes", l.MaxMaskBytes},
		{"MaxMaskWork", l.MaxMaskWork},
	} {
		if f.v < 0 {
			return fmt.Errorf("grammar: Limits.%s = %d, must be ≥ 0 (0: the default)", f.name, f.v)
		}
	}
	return nil
}

// withDefaults fills zero fields from DefaultLimits and refuses negative ones.
func (l Limits) withDefaults() (Limits, error) {
	if err := l.Validate(); err != nil {
		return l, err
	}
	d := DefaultLimits
	l.MaxDepth = cmp.Or(l.MaxDepth, d.MaxDepth)
	l.MaxNodes = cmp.Or(l.MaxNodes, d.MaxNodes)
	l.MaxStates = cmp.Or(l.MaxStates, d.MaxStates)
	l.Timeout = cmp.Or(l.Timeout, d.Timeout)
	l.MaxDFABytes = cmp.Or(l.MaxDFABytes, d.MaxDFABytes)
	l.MaxMaskBytes = cmp.Or(l.MaxMaskBytes, d.MaxMaskBytes)
	l.MaxMaskWork = cmp.Or(l.MaxMaskWork, d.MaxMaskWork)
	return l, nil
}

// CompileBytes is about the most memory one Compiler under these limits holds: its nodes
// and automaton states at their limits.
func (l Limits) CompileBytes() int64 {
	l, _ = l.withDefaults()
	return int64(l.MaxNodes)*nodeBytes + int64(l.MaxStates)*stateBytes
}

// CacheBytes is the most memory one grammar's DFA and mask caches hold.
func (l Limits) CacheBytes() int64 {
	l, _ = l.withDefaults()
	return l.MaxDFABytes + l.MaxMaskBytes
}

// Grammar is a compiled language. It is safe for concurrent use; its lazily built automaton
// and token masks are shared by every Matcher made from it.
type Grammar struct {
	nfa *nfa
	lim Limits

	mu        sync.Mutex
	dfa       *dfa
	masks     map[*Vocab]map[*dstate][]uint64
	maskBytes int64
	maskGen   int // dfa.flushes when the masks were computed: a flush makes them stale
}

func newGrammar(n *nfa, lim Limits) *Grammar {
	return &Grammar{nfa: n, lim: lim, dfa: newDFA(n, lim.MaxDFABytes), masks: map[*Vocab]map[*dstate][]uint64{}}
}

// MaxBytes is the most memory the grammar can come to hold: its automaton and full caches.
func (g *Grammar) MaxBytes() int64 {
	return g.nfa.bytes() + g.lim.MaxDFABytes + g.lim.MaxMaskBytes
}

// Limits of recursion in the automaton.
const (
	// recursionDepth is how deep recursive rules ($ref cycles, nested JSON values) unroll.
	recursionDepth = 6
	// maxExpandDepth bounds the nesting of the expression an automaton is built from, once
	// rule references are expanded (a chain of rules each naming the next nests deeper
	// than any one source).
	maxExpandDepth = 1 << 13
)

// FromJSONSchema compiles a JSON Schema under DefaultLimits (see Compiler.JSONSchema).
func FromJSONSchema(schema []byte) (*Grammar, error) {
	c, _ := NewCompiler(context.Background(), DefaultLimits)
	return c.JSONSchema(schema)
}

// ParseGBNF compiles a GBNF grammar under DefaultLimits (see Compiler.GBNF).
func ParseGBNF(src string) (*Grammar, error) {
	c, _ := NewCompiler(context.Background(), DefaultLimits)
	return c.GBNF(src)
}
