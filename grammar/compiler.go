package grammar

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Compiler compiles grammars under one budget: the Limits given to NewCompiler, fixed
// before any work starts and shared by everything it compiles (a request's response format,
// or all of its tools). Work is counted as it grows, and the first limit reached, or the end
// of the context, stops every later step with that error. A Compiler is not safe for
// concurrent use.
type Compiler struct {
	b       budget
	rules   map[string]*node
	sources int // sources compiled so far: each one's rule names get its own prefix
}

// NewCompiler returns a compiler whose work stops when ctx is done or a limit is reached.
func NewCompiler(ctx context.Context, lim Limits) (*Compiler, error) {
	lim, err := lim.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Compiler{b: budget{ctx: ctx, lim: lim, deadline: time.Now().Add(lim.Timeout)}, rules: map[string]*node{}}, nil
}

// Usage is what a Compiler's work has cost so far.
type Usage struct {
	Nodes  int // expression nodes built
	States int // automaton states built
}

// Usage reports the work so far.
func (c *Compiler) Usage() Usage { return Usage{Nodes: c.b.nodes, States: c.b.states} }

// Expr is a language not compiled yet: a piece that Concat and Union join and Compile turns
// into one automaton (so that a request's tools make one automaton, not one each). An Expr
// belongs to the Compiler that made it.
type Expr struct {
	n *node
	c *Compiler
}

// Text is the language of exactly s.
func (c *Compiler) Text(s string) Expr {
	n := litS(s)
	c.b.charge(n)
	return Expr{n, c}
}

// Concat is the language of the parts' strings one after the other.
func (c *Compiler) Concat(parts ...Expr) Expr { return c.join(parts, seq) }

// Union is the union of the parts' languages.
func (c *Compiler) Union(parts ...Expr) Expr { return c.join(parts, alt) }

func (c *Compiler) join(parts []Expr, f func(...*node) *node) Expr {
	kids := make([]*node, len(parts))
	for i, p := range parts {
		if p.c != c {
			c.b.fail(errors.New("grammar: an Expr of another Compiler"))
			return Expr{fail(), c}
		}
		kids[i] = p.n
	}
	n := f(kids...)
	c.b.charge(n)
	return Expr{n, c}
}

// Compile builds the automaton of e.
func (c *Compiler) Compile(e Expr) (*Grammar, error) {
	if e.c != c {
		return nil, errors.New("grammar: Compile of an Expr made by another Compiler")
	}
	if c.b.err != nil {
		return nil, c.b.err
	}
	n, err := compileNFA(e.n, c.rules, &c.b)
	if err != nil {
		return nil, err
	}
	return newGrammar(n, c.b.lim), nil
}

// prefix returns a fresh prefix for the rule names of one source.
func (c *Compiler) prefix() string {
	c.sources++
	return fmt.Sprintf("%d.", c.sources)
}

// budget is one Compiler's account: what its work has cost so far against its Limits.
type budget struct {
	ctx      context.Context
	lim      Limits
	deadline time.Time
	nodes    int
	states   int
	work     int   // units of work since the clock was last read
	err      error // the first limit reached: every later check returns it
}

// fail records err as the budget's end (keeping the first one) and returns it.
func (b *budget) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return b.err
}

// spend counts n units of work, reading the clock and the context every 4096.
func (b *budget) spend(n int) error {
	if b.err != nil {
		return b.err
	}
	b.work += n
	if b.work < 4096 {
		return nil
	}
	b.work = 0
	if err := b.ctx.Err(); err != nil {
		return b.fail(err)
	}
	if time.Now().After(b.deadline) {
		return b.fail(&LimitError{Limit: "Timeout", Max: int64(b.lim.Timeout), What: "compile time"})
	}
	return nil
}

// charge counts the nodes of n's tree that were not counted before (a shared subtree is
// counted once, as it is held once).
func (b *budget) charge(n *node) error {
	if b.err != nil {
		return b.err
	}
	stack := []*node{n}
	added := 0
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x.counted {
			continue
		}
		x.counted = true
		added++
		stack = append(stack, x.kids...)
	}
	b.nodes += added
	if b.nodes > b.lim.MaxNodes {
		return b.fail(&LimitError{Limit: "MaxNodes", Max: int64(b.lim.MaxNodes), What: "expression nodes"})
	}
	return b.spend(added)
}

// depth returns a MaxDepth error when d is past the limit.
func (b *budget) depth(d int, what string) error {
	if d > b.lim.MaxDepth {
		return b.fail(&LimitError{Limit: "MaxDepth", Max: int64(b.lim.MaxDepth), What: "nesting of " + what})
	}
	return nil
}
