package grammar

import "fmt"

// Matcher follows one generation through a grammar. It is not safe for concurrent use;
// use one per sequence.
type Matcher struct {
	g     *Grammar
	v     *Vocab
	cur   *dstate
	ended bool // an end-of-sequence token was accepted
}

// NewMatcher starts matching at the beginning of the language.
func (g *Grammar) NewMatcher(v *Vocab) *Matcher {
	g.mu.Lock()
	defer g.mu.Unlock()
	return &Matcher{g: g, v: v, cur: g.dfa.start}
}

// FillMask sets allowed (at least v.MaskWords() words) to the tokens that may come next:
// those whose bytes continue a string of the language, and the end-of-sequence ids where
// the language may end here. After the end, nothing is allowed.
func (m *Matcher) FillMask(allowed []uint64) {
	if len(allowed) < m.v.MaskWords() {
		// A shorter mask (a model with fewer output rows than tokens): fill a full one.
		full := make([]uint64, m.v.MaskWords())
		m.FillMask(full)
		copy(allowed, full)
		return
	}
	clear(allowed[m.v.MaskWords():])
	allowed = allowed[:m.v.MaskWords()]
	if m.ended {
		clear(allowed)
		return
	}
	g := m.g
	g.mu.Lock()
	cache := g.masks[m.v]
	if cache == nil {
		cache = map[*dstate][]uint64{}
		g.masks[m.v] = cache
	}
	if mask, ok := cache[m.cur]; ok {
		copy(allowed, mask)
	} else {
		m.v.computeMask(g.dfa, m.cur, allowed)
		if g.nMasks < maxCachedMasks {
			cache[m.cur] = append([]uint64(nil), allowed...)
			g.nMasks++
		}
	}
	accept := m.cur.accept
	g.mu.Unlock()
	for _, id := range m.v.eos {
		if id >= 0 && id < m.v.size {
			if accept {
				allowed[id>>6] |= 1 << (uint(id) & 63)
			} else {
				allowed[id>>6] &^= 1 << (uint(id) & 63)
			}
		}
	}
}

// Accept advances over a sampled token. A token the grammar does not allow here is an
// error wrapping ErrRejected and leaves the matcher unchanged.
func (m *Matcher) Accept(id int) error {
	if m.ended {
		return fmt.Errorf("token %d after the end: %w", id, ErrRejected)
	}
	if m.v.isEOS(id) {
		if !m.cur.accept {
			return fmt.Errorf("end of sequence where the grammar cannot end: %w", ErrRejected)
		}
		m.ended = true
		return nil
	}
	b := m.v.TokenBytes(id)
	if len(b) == 0 {
		return fmt.Errorf("token %d stands for no text: %w", id, ErrRejected)
	}
	if !m.advance(b) {
		return fmt.Errorf("token %d (%q): %w", id, b, ErrRejected)
	}
	return nil
}

// advance moves over b if the language allows it, and reports whether it did.
func (m *Matcher) advance(b []byte) bool {
	m.g.mu.Lock()
	s := m.cur
	for _, c := range b {
		s = m.g.dfa.step(s, c)
	}
	dead := s == m.g.dfa.dead
	m.g.mu.Unlock()
	if !dead {
		m.cur = s
	}
	return !dead
}

// CanEnd reports whether the output so far is a complete string of the language.
func (m *Matcher) CanEnd() bool { return m.ended || m.cur.accept }

// Ended reports whether an end-of-sequence token was accepted.
func (m *Matcher) Ended() bool { return m.ended }
