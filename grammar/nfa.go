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

// frag is a piece of automaton under construction: in is its entry, out its exit state
// (which has no edges yet).
type frag struct{ in, out int32 }

type nfaBuilder struct {
	n     *nfa
	rules map[string]*node
	depth map[string]int
	err   error
}

// compileNFA builds the automaton of root, inlining rule references; a rule that recurses
// deeper than recursionDepth contributes no strings at that depth.
func compileNFA(root *node, rules map[string]*node) (*nfa, error) {
	b := &nfaBuilder{n: &nfa{}, rules: rules, depth: map[string]int{}}
	f := b.build(root)
	if b.err != nil {
		return nil, b.err
	}
	b.n.accept = f.out
	// Move the entry to state 0 by an epsilon edge from a fresh first state: simpler to
	// reserve it first.
	n := b.n
	if f.in != 0 {
		n.states = append([]nstate{{next: -1, eps: []int32{f.in + 1}}}, n.states...)
		for i := 1; i < len(n.states); i++ {
			s := &n.states[i]
			if s.next >= 0 {
				s.next++
			}
			for j := range s.eps {
				s.eps[j]++
			}
		}
		n.accept++
	}
	if !n.canEnd() {
		return nil, ErrNoEnd
	}
	return n, nil
}

func (b *nfaBuilder) state() int32 {
	if len(b.n.states) >= MaxNFAStates {
		if b.err == nil {
			b.err = fmt.Errorf("%w: over %d automaton states", ErrTooLarge, MaxNFAStates)
		}
		return 0
	}
	b.n.states = append(b.n.states, nstate{next: -1})
	return int32(len(b.n.states) - 1)
}

func (b *nfaBuilder) eps(from, to int32) {
	if b.err == nil {
		b.n.states[from].eps = append(b.n.states[from].eps, to)
	}
}

func (b *nfaBuilder) build(n *node) frag {
	if b.err != nil {
		return frag{}
	}
	switch n.kind {
	case kEmpty:
		s := b.state()
		return frag{s, s}
	case kFail:
		return frag{b.state(), b.state()} // no edge joins them
	case kLit:
		in := b.state()
		cur := in
		for _, c := range n.lit {
			nx := b.state()
			if b.err != nil {
				return frag{}
			}
			b.n.states[cur].lo, b.n.states[cur].hi, b.n.states[cur].next = c, c, nx
			cur = nx
		}
		return frag{in, cur}
	case kClass:
		in, out := b.state(), b.state()
		for _, r := range n.ranges {
			s, t := b.state(), b.state()
			if b.err != nil {
				return frag{}
			}
			b.n.states[s].lo, b.n.states[s].hi, b.n.states[s].next = r[0], r[1], t
			b.eps(in, s)
			b.eps(t, out)
		}
		return frag{in, out}
	case kSeq:
		f := b.build(n.kids[0])
		for _, k := range n.kids[1:] {
			g := b.build(k)
			b.eps(f.out, g.in)
			f.out = g.out
		}
		return f
	case kAlt:
		in, out := b.state(), b.state()
		for _, k := range n.kids {
			g := b.build(k)
			b.eps(in, g.in)
			b.eps(g.out, out)
		}
		return frag{in, out}
	case kRep:
		return b.repeat(n.kids[0], n.min, n.max)
	case kList:
		item := b.build(n.kids[0])
		sep := b.build(n.kids[1])
		out := b.state()
		b.eps(item.out, out)
		b.eps(item.out, sep.in)
		b.eps(sep.out, item.in)
		return frag{item.in, out}
	case kRef:
		r, ok := b.rules[n.ref]
		if !ok {
			b.err = fmt.Errorf("grammar: rule %q is not defined", n.ref)
			return frag{}
		}
		if b.depth[n.ref] >= recursionDepth {
			return b.build(fail())
		}
		b.depth[n.ref]++
		f := b.build(r)
		b.depth[n.ref]--
		return f
	}
	b.err = fmt.Errorf("grammar: bad node kind %d", n.kind)
	return frag{}
}

// repeat builds min mandatory copies, then max-min optional ones (nested, so that a later
// copy needs the earlier), or a loop when max is unbounded.
func (b *nfaBuilder) repeat(k *node, min, max int) frag {
	in := b.state()
	f := frag{in, in}
	for i := 0; i < min; i++ {
		g := b.build(k)
		b.eps(f.out, g.in)
		f.out = g.out
	}
	switch {
	case max < 0:
		g := b.build(k)
		loop := b.state()
		b.eps(f.out, loop)
		b.eps(loop, g.in)
		b.eps(g.out, loop)
		f.out = loop
	case max > min:
		out := b.state()
		for i := min; i < max && b.err == nil; i++ {
			g := b.build(k)
			b.eps(f.out, g.in)
			b.eps(f.out, out)
			f.out = g.out
		}
		b.eps(f.out, out)
		f.out = out
	}
	return f
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
