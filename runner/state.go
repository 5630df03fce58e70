package runner

import (
	"errors"
	"fmt"

	"github.com/hfstatic/hfstatic/program"
)

// ErrRewindRing is wrapped by a *RewindError when a sliding layer's ring cache no longer
// holds positions that the rewound session would need: later tokens overwrote their slots.
// Such a session must be recomputed (Reset and append the tokens again).
var ErrRewindRing = errors.New("rewind past a ring cache's window")

// ErrRewindRange is returned when Rewind is asked for a position outside [0, Position()].
var ErrRewindRange = errors.New("rewind position out of range")

// RewindError reports a sliding layer that cannot be rewound to Pos: the step at Pos
// needs positions [Need, Pos) but the ring only holds [Have, ·) intact.
type RewindError struct {
	Layer int
	Pos   int // requested position
	Need  int // oldest position the next step would read from the cache
	Have  int // oldest position still intact in the cache
}

func (e *RewindError) Error() string {
	return fmt.Sprintf("%v: layer %d would need positions %d..%d at position %d, but its ring cache only holds positions from %d on; reset the session and append the tokens again",
		ErrRewindRing, e.Layer, e.Need, e.Pos-1, e.Pos, e.Have)
}

func (e *RewindError) Unwrap() error { return ErrRewindRing }

// SessionInfo describes a session's state (see Session.Inspect).
type SessionInfo struct {
	Position int
	Poisoned bool
	Layers   []LayerInfo
	// Bytes is the memory of every I/O buffer the session holds (Runner.SessionBytes).
	Bytes int64
	// CacheBytesUsed is the K/V cache memory that holds valid positions.
	CacheBytesUsed int64
}

// LayerInfo describes one layer's cache: positions [Lo, Hi) are intact in Slots of its Rows
// cache rows.
type LayerInfo struct {
	Type   program.LayerType
	Lo, Hi int
	Slots  int
	Rows   int
}

// Inspect reports the session's position and, per layer, the range of absolute positions
// its cache holds.
func (s *Session) Inspect() SessionInfo {
	md := &s.r.man.Metadata
	info := SessionInfo{Position: s.pos, Poisoned: s.err != nil, Bytes: s.r.SessionBytes()}
	eb := int64(md.CacheDType.ElemBytes())
	for l, ly := range md.Layers {
		li := LayerInfo{Type: ly.Type, Lo: s.lo[l], Hi: s.pos, Slots: s.pos - s.lo[l], Rows: ly.CacheRows}
		info.Layers = append(info.Layers, li)
		info.CacheBytesUsed += int64(li.Slots*ly.KVHeads*(ly.KHeadDim+ly.VHeadDim)) * eb
	}
	return info
}

// window is the attention window of layer l in positions (0: unlimited).
func (s *Session) window(l int) int {
	md := &s.r.man.Metadata
	if md.Layers[l].Type == program.LayerSliding {
		return md.SlidingWindow
	}
	return 0
}

// checkRewind reports whether every layer still holds what a step at pos would read:
// positions [pos-W+1, pos) for sliding layers, [0, pos) for full ones.
func (s *Session) checkRewind(pos int) error {
	if pos < 0 || pos > s.pos {
		return fmt.Errorf("%w: %d is not in [0,%d]", ErrRewindRange, pos, s.pos)
	}
	for l := range s.lo {
		need := 0
		if w := s.window(l); w > 0 {
			need = max(0, pos-w+1)
		}
		if need < pos && need < s.lo[l] {
			return &RewindError{Layer: l, Pos: pos, Need: need, Have: s.lo[l]}
		}
	}
	return nil
}

// Rewind drops the tokens after the first pos, as if only they had been appended. Full
// caches just move their counters (the rows beyond are zeroed); a ring cache can be
// rewound only while it still holds the positions the next step reads, else Rewind
// returns a *RewindError (ErrRewindRing) and changes nothing. After Rewind the logits are
// stale until the next Append. Rewind clears no poison: use Reset.
func (s *Session) Rewind(pos int) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.checkRewind(pos); err != nil {
		return err
	}
	s.dropAfter(pos)
	return nil
}

// dropAfter rewinds to pos, which checkRewind accepted.
func (s *Session) dropAfter(pos int) {
	md := &s.r.man.Metadata
	eb := md.CacheDType.ElemBytes()
	for l, ly := range md.Layers {
		L := ly.CacheRows
		for a := pos; a < s.pos && a < pos+L; a++ {
			clearSlot(s.state[program.KCache(l)], ly.KVHeads, L, ly.KHeadDim*eb, a%L)
			clearSlot(s.state[program.VCache(l)], ly.KVHeads, L, ly.VHeadDim*eb, a%L)
		}
		s.lo[l] = min(s.lo[l], pos)
		s.counters[l][0] = int64(pos)
	}
	s.pos = pos
	s.history = s.history[:pos]
	s.clearLast()
}

// clearSlot zeroes one slot of a [1, heads, rows, rowBytes] cache.
func clearSlot(buf []byte, heads, rows, rowBytes, slot int) {
	for h := 0; h < heads; h++ {
		off := (h*rows + slot) * rowBytes
		clear(buf[off : off+rowBytes])
	}
}

// Fork returns an independent copy of the session: caches, counters, position, history and
// logits. Continuing either one does not affect the other. A poisoned or closed session
// cannot be forked.
func (s *Session) Fork() (*Session, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	f, err := s.r.NewSession()
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	f.copyFrom(s)
	return f, nil
}

// copyFrom makes s an exact copy of src, a session of the same runner.
func (s *Session) copyFrom(src *Session) {
	for i, b := range src.owned {
		copy(s.owned[i], b)
	}
	s.masksCopied(src)
	s.pos, s.err = src.pos, src.err
	copy(s.lo, src.lo)
	s.history = append(s.history[:0], src.history...)
	s.clearLast()
	if src.lastMIO != nil {
		mio := s.dec
		if src.lastMIO == src.pre {
			mio = s.pre
		}
		s.setLast(mio, src.lastRow)
	}
}
