package grammar

import "fmt"

// nfa is a Thompson automaton over bytes. State 0 is the start; accept is the one final state.
type nfa struct {
	states []nstate
	accept int32
}

// nstate has either a byte-range edge (lo ≤ b ≤ hi → next) or epsilon edges.
type nstate struct {
	lo, hi byte
	next   int32   // byte edge target; -1 for none
	eps    []int32 // epsilon edges
}

// bytes is about the memory the automaton holds.
func (n *nfa) bytes() int64 { return int64(len(n.states)) * stateBytes }

// frag is a piece of automaton under construction: in is its entry, out its exit state
// (which has no edges yet).
type frag struct{ in, out int32 }

type nfaBuilder struct {
	n     *nfa
	b     *budget
	rules map[string]*node
	depth map[string]int // per rule: how many of its expansions enclose this point
	nest  int            // expressions enclosing this point, rules expanded
}

// compileNFA builds the automaton of root, inlining rule references; a rule that recurses
// deeper than recursionDepth contributes no strings at that depth. States are counted
// against the budget as they are made.
func compileNFA(root *node, rules map[string]*node, b *budget) (*nfa, error) {
	nb := &nfaBuilder{n: &nfa{}, b: b, rules: rules, depth: map[string]int{}}
	start := nb.state()
	f := nb.build(root)
	nb.eps(start, f.in)
	if b.err != nil {
		return nil, b.err
	}
	nb.n.accept = f.out
	if !nb.n.canEnd() {
		return nil, ErrNoEnd
	}
	return nb.n, nil
}

func (nb *nfaBuilder) state() int32 {
	b := nb.b
	if b.err != nil {
		return 0
	}
	if b.states >= b.lim.MaxStates {
		b.fail(&LimitError{Limit: "MaxStates", Max: int64(b.lim.MaxStates), What: "automaton states"})
		return 0
	}
	if b.spend(1) != nil {
		return 0
	}
	b.states++
	nb.n.states = append(nb.n.states, nstate{next: -1})
	return int32(len(nb.n.states) - 1)
}

func (nb *nfaBuilder) eps(from, to int32) {
	if nb.b.err == nil {
		nb.n.states[from].eps = append(nb.n.states[from].eps, to)
	}
}

// edge sets the byte edge lo..hi of from.
func (nb *nfaBuilder) edge(from int32, lo, hi byte, to int32) {
	if nb.b.err == nil {
		s := &nb.n.states[from]
		s.lo, s.hi, s.next = lo, hi, to
	}
}

func (nb *nfaBuilder) build(n *node) frag {
	if nb.b.err != nil {
		return frag{}
	}
	nb.nest++
	defer func() { nb.nest-- }()
	if nb.nest > maxExpandDepth {
		nb.b.fail(&LimitError{Limit: "MaxDepth", Max: maxExpandDepth, What: "nesting of the expression with its rules expanded"})
		return frag{}
	}
	switch n.kind {
	case kEmpty:
		s := nb.state()
		return frag{s, s}
	case kFail:
		return frag{nb.state(), nb.state()} // no edge joins them
	case kLit:
		in := nb.state()
		cur := in
		for _, c := range n.lit {
			nx := nb.state()
			nb.edge(cur, c, c, nx)
			cur = nx
		}
		return frag{in, cur}
	case kClass:
		if len(n.ranges) == 1 {
			in, out := nb.state(), nb.state()
			nb.edge(in, n.ranges[0][0], n.ranges[0][1], out)
			return frag{in, out}
		}
		in, out := nb.state(), nb.state()
		for _, r := range n.ranges {
			s, t := nb.state(), nb.state()
			nb.edge(s, r[0], r[1], t)
			nb.eps(in, s)
			nb.eps(t, out)
		}
		return frag{in, out}
	case kSeq:
		f := nb.build(n.kids[0])
		for _, k := range n.kids[1:] {
			g := nb.build(k)
			nb.eps(f.out, g.in)
			f.out = g.out
		}
		return f
	case kAlt:
		in, out := nb.state(), nb.state()
		for _, k := range n.kids {
			g := nb.build(k)
			nb.eps(in, g.in)
			nb.eps(g.out, out)
		}
		return frag{in, out}
	case kRep:
		return nb.repeat(n.kids[0], n.min, n.max)
	case kList:
		item := nb.build(n.kids[0])
		sep := nb.build(n.kids[1])
		out := nb.state()
		nb.eps(item.out, out)
		nb.eps(item.out, sep.in)
		nb.eps(sep.out, item.in)
		return frag{item.in, out}
	case kMembers:
		return nb.members(n)
	case kRef:
		r, ok := nb.rules[n.ref]
		if !ok {
			nb.b.fail(fmt.Errorf("grammar: rule %q is not defined", n.ref))
			return frag{}
		}
		if nb.depth[n.ref] >= recursionDepth {
			return nb.build(fail())
		}
		nb.depth[n.ref]++
		f := nb.build(r)
		nb.depth[n.ref]--
		return f
	}
	nb.b.fail(fmt.Errorf("grammar: bad node kind %d", n.kind))
	return frag{}
}

// repeat builds min mandatory copies, then max-min optional ones (nested, so that a later
// copy needs the earlier), or a loop when max is unbounded.
func (nb *nfaBuilder) repeat(k *node, min, max int) frag {
	in := nb.state()
	f := frag{in, in}
	for i := 0; i < min && nb.b.err == nil; i++ {
		g := nb.build(k)
		nb.eps(f.out, g.in)
		f.out = g.out
	}
	switch {
	case max < 0:
		g := nb.build(k)
		loop := nb.state()
		nb.eps(f.out, loop)
		nb.eps(loop, g.in)
		nb.eps(g.out, loop)
		f.out = loop
	case max > min:
		out := nb.state()
		for i := min; i < max && nb.b.err == nil; i++ {
			g := nb.build(k)
			nb.eps(f.out, g.in)
			nb.eps(f.out, out)
			f.out = g.out
		}
		nb.eps(f.out, out)
		f.out = out
	}
	return f
}

// members builds a JSON object's members m0, m1, … in order, separated by the separator,
// each optional unless required, with one copy of each member. Before member i there are
// two states, from the last one back:
//
//	none(i) = m_i some(i+1) | none(i+1)        no member yet: m_i takes no separator
//	some(i) = sep m_i some(i+1) | some(i+1)    a member before: m_i takes one
//
// (the second alternative only when m_i is optional). Both reach m_i's one copy, which
// goes on to some(i+1) either way, so the automaton is linear in the members; spelling
// "the first present member takes no separator" out as alternatives needs a copy of every
// later member per optional one, N² in all.
func (nb *nfaBuilder) members(n *node) frag {
	kvs, sep := n.kids[:len(n.kids)-1], n.kids[len(n.kids)-1]
	out := nb.state()
	none, some := out, out // none(len), some(len): nothing more
	for i := len(kvs) - 1; i >= 0 && nb.b.err == nil; i-- {
		m := nb.build(kvs[i])
		nb.eps(m.out, some)
		n0, s0 := nb.state(), nb.state()
		nb.eps(n0, m.in)
		sp := nb.build(sep)
		nb.eps(s0, sp.in)
		nb.eps(sp.out, m.in)
		if !n.required[i] {
			nb.eps(n0, none)
			nb.eps(s0, some)
		}
		none, some = n0, s0
	}
	return frag{none, out}
}

// canEnd reports whether the accept state is reachable from the start.
func (n *nfa) canEnd() bool {
	seen := make([]bool, len(n.states))
	stack := []int32{0}
	seen[0] = true
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s == n.accept {
			return true
		}
		st := &n.states[s]
		if st.next >= 0 && !seen[st.next] {
			seen[st.next] = true
			stack = append(stack, st.next)
		}
		for _, e := range st.eps {
			if !seen[e] {
				seen[e] = true
				stack = append(stack, e)
			}
		}
	}
	return false
}
