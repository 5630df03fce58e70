package grammar

import (
	"context"
	"fmt"
)

// Matcher follows one generation through a grammar. It is not safe for concurrent use;
// use one per sequence.
type Matcher struct {
	g     *Grammar
	v     *Vocab
	ctx   context.Context
	cur   *dstate
	ended bool  // an end-of-sequence token was accepted
	err   error // why the matcher stopped: a *LimitError or the context's error
}

// NewMatcher starts matching at the beginning of the language.
func (g *Grammar) NewMatcher(v *Vocab) *Matcher { return g.NewMatcherContext(context.Background(), v) }

// NewMatcherContext starts matching at the beginning of the language; computing a mask
// stops when ctx is done (see Err).
func (g *Grammar) NewMatcherContext(ctx context.Context, v *Vocab) *Matcher {
	g.mu.Lock()
	defer g.mu.Unlock()
	return &Matcher{g: g, v: v, ctx: ctx, cur: g.dfa.start}
}

// Err reports why the matcher stopped following the grammar: the context ended while a mask
// was computed, or a mask needed more automaton than MaxDFABytes holds (a *LimitError).
// After an error every mask is empty and Accept returns the error.
func (m *Matcher) Err() error { return m.err }

// FillMask sets allowed (at least v.MaskWords() words) to the tokens that may come next:
// those whose bytes continue a string of the language, and the end-of-sequence ids where
// the language may end here. After the end, or after an error (Err), nothing is allowed.
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
	if m.ended || m.err != nil {
		clear(allowed)
		return
	}
	g := m.g
	g.mu.Lock()
	if g.maskGen != g.dfa.flushes {
		// The DFA was emptied: the masks are keyed by states it no longer holds.
		clear(g.masks)
		g.maskBytes, g.maskGen = 0, g.dfa.flushes
	}
	cache := g.masks[m.v]
	if cache == nil {
		cache = map[*dstate][]uint64{}
		g.masks[m.v] = cache
	}
	if mask, ok := cache[m.cur]; ok {
		copy(allowed, mask)
	} else {
		if err := m.v.computeMask(m.ctx, g.dfa, m.cur, allowed, g.lim.MaxMaskWork); err != nil {
			g.mu.Unlock()
			m.err = err
			clear(allowed)
			return
		}
		size := int64(len(allowed))*8 + 64
		if g.maskGen == g.dfa.flushes && g.maskBytes+size <= g.lim.MaxMaskBytes {
			cache[m.cur] = append([]uint64(nil), allowed...)
			g.maskBytes += size
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
	if m.err != nil {
		return m.err
	}
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
