package grammar

import (
	"encoding/binary"
	"slices"
)

// dfa is the subset automaton of an nfa, built lazily: a state's successor on a byte is
// computed the first time it is asked for. Its states are a cache bounded by maxBytes: when
// a new state would pass it, every state is forgotten (their transitions dropped, so that
// the old states can be freed) and the automaton is built again as it is used, as RE2's
// DFA does. States held elsewhere (a matcher's current state) stay valid: a state is its
// set of NFA states, and its transitions are recomputed from the set.
type dfa struct {
	n        *nfa
	states   map[string]*dstate // by the sorted NFA state set
	start    *dstate
	dead     *dstate // no NFA state: every byte fails
	bytes    int64   // memory of the cached states
	maxBytes int64
	flushes  int   // times the cache was emptied
	work     int64 // NFA states and edges visited building states, ever (computeMask reads the growth)

	// scratch for closures
	mark  []uint32
	epoch uint32
	stack []int32
	set   []int32
	key   []byte
}

// dstate is a set of NFA states closed under epsilon edges.
type dstate struct {
	set    []int32
	accept bool
	next   *[256]*dstate // nil until the first step from this state
	bytes  []int32       // NFA states with a byte edge (the only ones a step reads)
}

// size is about the memory a cached state holds: its set twice (the state and the map's
// key), its byte-edge states, its transition table and the map entry.
func (s *dstate) size() int64 { return int64(len(s.set))*12 + 256*8 + 128 }

func newDFA(n *nfa, maxBytes int64) *dfa {
	d := &dfa{n: n, states: map[string]*dstate{}, mark: make([]uint32, len(n.states)), maxBytes: maxBytes}
	d.dead = &dstate{}
	d.dead.next = new([256]*dstate)
	for i := range d.dead.next {
		d.dead.next[i] = d.dead
	}
	d.start = d.closure([]int32{0})
	return d
}

// flush forgets every cached state but the start.
func (d *dfa) flush() {
	for _, s := range d.states {
		s.next = nil
	}
	clear(d.states)
	d.flushes++
	d.bytes = 0
	d.states[string(d.keyOf(d.start.set))] = d.start
	d.bytes += d.start.size()
}

func (d *dfa) keyOf(set []int32) []byte {
	key := d.key[:0]
	for _, s := range set {
		key = binary.LittleEndian.AppendUint32(key, uint32(s))
	}
	d.key = key
	return key
}

// closure returns the state for the epsilon closure of seeds.
func (d *dfa) closure(seeds []int32) *dstate {
	d.epoch++
	if d.epoch == 0 {
		clear(d.mark)
		d.epoch = 1
	}
	set, stack := d.set[:0], d.stack[:0]
	for _, s := range seeds {
		if d.mark[s] != d.epoch {
			d.mark[s] = d.epoch
			stack = append(stack, s)
		}
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		set = append(set, s)
		d.work += 1 + int64(len(d.n.states[s].eps))
		for _, e := range d.n.states[s].eps {
			if d.mark[e] != d.epoch {
				d.mark[e] = d.epoch
				stack = append(stack, e)
			}
		}
	}
	d.stack = stack
	// Only states with a byte edge, and the accept state, distinguish DFA states.
	keep := set[:0]
	for _, s := range set {
		if d.n.states[s].next >= 0 || s == d.n.accept {
			keep = append(keep, s)
		}
	}
	d.set = keep
	if len(keep) == 0 {
		return d.dead
	}
	slices.Sort(keep)
	key := d.keyOf(keep)
	if st, ok := d.states[string(key)]; ok {
		return st
	}
	st := &dstate{set: slices.Clone(keep)}
	for _, s := range st.set {
		if s == d.n.accept {
			st.accept = true
		} else {
			st.bytes = append(st.bytes, s)
		}
	}
	skey := string(key) // flush reuses the key's buffer
	if d.start != nil && d.bytes+st.size() > d.maxBytes {
		d.flush()
	}
	d.states[skey] = st
	d.bytes += st.size()
	return st
}

// step returns the state after byte c (d.dead if none).
func (d *dfa) step(s *dstate, c byte) *dstate {
	if s.next == nil {
		s.next = new([256]*dstate)
	} else if nx := s.next[c]; nx != nil {
		return nx
	}
	seeds := make([]int32, 0, 8)
	d.work += int64(len(s.bytes))
	for _, q := range s.bytes {
		st := &d.n.states[q]
		if st.lo <= c && c <= st.hi {
			seeds = append(seeds, st.next)
		}
	}
	nx := d.dead
	if len(seeds) > 0 {
		flushes := d.flushes
		nx = d.closure(seeds)
		if d.flushes != flushes && s.next == nil {
			return nx // s was forgotten by the flush: do not give it a table again
		}
	}
	s.next[c] = nx
	return nx
}
