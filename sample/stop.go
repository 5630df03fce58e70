package sample

import (
	"errors"
	"fmt"
	"strings"
)

// ErrEmptyStop is returned by NewStopMatcher for an empty stop string,
// which would match before any text.
var ErrEmptyStop = errors.New("sample: empty stop string")

// StopMatcher finds stop strings in text that arrives in pieces, as a
// detokenizer streams it. Text that could still turn out to be the start of
// a stop string is held back until the next piece resolves it, so nothing
// of a stop string is ever emitted.
type StopMatcher struct {
	stops   []string
	pending string // held-back text: a suffix that is a prefix of some stop
	stopped bool
	matched string
}

// NewStopMatcher returns a matcher for the given stop strings (none is
// allowed: then every piece passes straight through).
func NewStopMatcher(stops []string) (*StopMatcher, error) {
	for i, s := range stops {
		if s == "" {
			return nil, fmt.Errorf("%w: stop string %d is empty; drop it", ErrEmptyStop, i)
		}
	}
	return &StopMatcher{stops: append([]string(nil), stops...)}, nil
}

// Push consumes the next piece of text. It returns the text that is now
// safe to emit and whether a stop string has occurred; once stopped, the
// text after the stop string is discarded and every later Push returns
// "", true.
func (m *StopMatcher) Push(piece string) (emit string, stopped bool) {
	if m.stopped {
		return "", true
	}
	text := m.pending + piece
	if at, stop := m.firstStop(text); at >= 0 {
		m.stopped, m.matched, m.pending = true, stop, ""
		return text[:at], true
	}
	hold := m.heldSuffix(text)
	m.pending = text[len(text)-hold:]
	return text[:len(text)-hold], false
}

// Flush returns the text still held back, for when generation ends without
// a stop string (for example at EOS or a length limit).
func (m *StopMatcher) Flush() string {
	out := m.pending
	m.pending = ""
	return out
}

// Stopped reports whether a stop string has occurred, and which.
func (m *StopMatcher) Stopped() (stop string, ok bool) { return m.matched, m.stopped }

// Reset forgets all state so the matcher can serve a new generation.
func (m *StopMatcher) Reset() { m.pending, m.stopped, m.matched = "", false, "" }

// firstStop returns the earliest position of any stop string in text and
// that stop string (the longest, if several start there), or -1.
func (m *StopMatcher) firstStop(text string) (int, string) {
	at, which := -1, ""
	for _, s := range m.stops {
		i := strings.Index(text, s)
		if i < 0 {
			continue
		}
		if at < 0 || i < at || (i == at && len(s) > len(which)) {
			at, which = i, s
		}
	}
	return at, which
}

// heldSuffix returns the length of the longest suffix of text that is a
// proper prefix of some stop string.
func (m *StopMatcher) heldSuffix(text string) int {
	best := 0
	for _, s := range m.stops {
		for n := min(len(s)-1, len(text)); n > best; n-- {
			if strings.HasSuffix(text, s[:n]) {
				best = n
				break
			}
		}
	}
	return best
}
