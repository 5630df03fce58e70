package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrPoolClosed is returned by Acquire after Close.
var ErrPoolClosed = errors.New("session pool closed")

// PoolOptions configure a Pool. Both limits apply: the pool holds at most MaxSessions
// sessions and at most MemoryBudget bytes of session buffers (Runner.SessionBytes each).
type PoolOptions struct {
	MaxSessions  int   // ≥ 1
	MemoryBudget int64 // bytes, ≥ one session's SessionBytes
}

// PoolStats counts what a pool did.
type PoolStats struct {
	Hits         int64 // acquisitions that reused a cached prefix
	Misses       int64 // acquisitions that started from an empty session
	ReusedTokens int64 // tokens not recomputed thanks to hits
	Evictions    int64 // free sessions reset to make room
	Recomputes   int64 // adoptions whose ring cache could not be rewound (reset instead)
	Sessions     int64 // sessions the pool holds now
	Leased       int64 // sessions leased now
}

// Pool keeps sessions of one runner for reuse: Acquire adopts the free session whose
// tokens share the longest prefix with the request. It is safe for concurrent use.
type Pool struct {
	r     *Runner
	limit int // sessions allowed by both limits

	mu      sync.Mutex
	free    []*pooled
	total   int
	tick    uint64
	changed chan struct{} // closed and replaced whenever a session is released
	closed  bool
	stats   PoolStats
}

type pooled struct {
	s        *Session
	lastUsed uint64
}

// Lease is a session handed out by a Pool. Reused is how many of the requested tokens the
// session already holds: append tokens[Reused:] to it.
type Lease struct {
	Session *Session
	Reused  int

	p    *Pool
	once sync.Once
}

// NewPool returns a pool of r's sessions.
func NewPool(r *Runner, opts PoolOptions) (*Pool, error) {
	per := r.SessionBytes()
	if opts.MaxSessions < 1 {
		return nil, fmt.Errorf("pool: MaxSessions %d must be ≥ 1", opts.MaxSessions)
	}
	if opts.MemoryBudget < per {
		return nil, fmt.Errorf("pool: MemoryBudget %d bytes is less than one session (%d bytes)", opts.MemoryBudget, per)
	}
	limit := opts.MaxSessions
	if per > 0 {
		limit = int(min(int64(limit), opts.MemoryBudget/per))
	}
	return &Pool{r: r, limit: limit, changed: make(chan struct{})}, nil
}

// Limit is the most sessions the pool will hold.
func (p *Pool) Limit() int { return p.limit }

// Acquire leases a session prepared for tokens: the free session with the longest common
// prefix, rewound to it (at most len(tokens)-1 tokens, so the caller always appends at
// least one and gets fresh logits). A session whose ring cache cannot rewind that far is
// adopted only when no other shares a prefix, and is then reset (recomputed). Without a
// prefix, Acquire creates a session while under the limits, else resets the least
// recently used free one. It blocks while every session is
// leased, until one is released or ctx is done.
func (p *Pool) Acquire(ctx context.Context, tokens []int) (*Lease, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("pool: acquire: %w", ErrEmpty)
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrPoolClosed
		}
		l, err := p.tryAcquire(tokens)
		wait := p.changed
		p.mu.Unlock()
		if l != nil || err != nil {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wait:
		}
	}
}

// tryAcquire leases a session or returns nil when all are leased. p.mu is held.
func (p *Pool) tryAcquire(tokens []int) (*Lease, error) {
	// The longest prefix wins, preferring sessions that can rewind to it (a ring cache may
	// not), then the most recently used.
	best, bestK, rewindable := -1, 0, false
	for i, e := range p.free {
		k := commonPrefix(e.s.Tokens(), tokens[:len(tokens)-1])
		if k == 0 {
			continue
		}
		ok := e.s.checkRewind(k) == nil
		if best < 0 || (ok && !rewindable) ||
			(ok == rewindable && (k > bestK || (k == bestK && e.lastUsed > p.free[best].lastUsed))) {
			best, bestK, rewindable = i, k, ok
		}
	}
	if bestK > 0 {
		s := p.take(best)
		if err := s.Rewind(bestK); err != nil {
			if !errors.Is(err, ErrRewindRing) {
				return nil, p.discard(s, err)
			}
			if err := s.Reset(); err != nil {
				return nil, p.discard(s, err)
			}
			p.stats.Recomputes++
			p.stats.Misses++
			return p.lease(s, 0), nil
		}
		p.stats.Hits++
		p.stats.ReusedTokens += int64(bestK)
		return p.lease(s, bestK), nil
	}
	if p.total < p.limit {
		s, err := p.r.NewSession()
		if err != nil {
			return nil, fmt.Errorf("pool: new session: %w", err)
		}
		p.total++
		p.stats.Misses++
		return p.lease(s, 0), nil
	}
	if len(p.free) == 0 {
		return nil, nil
	}
	lru := 0
	for i, e := range p.free {
		if e.lastUsed < p.free[lru].lastUsed {
			lru = i
		}
	}
	s := p.take(lru)
	if err := s.Reset(); err != nil {
		return nil, p.discard(s, err)
	}
	p.stats.Evictions++
	p.stats.Misses++
	return p.lease(s, 0), nil
}

func (p *Pool) take(i int) *Session {
	s := p.free[i].s
	p.free = append(p.free[:i], p.free[i+1:]...)
	return s
}

// discard drops a session the pool can no longer use. p.mu is held.
func (p *Pool) discard(s *Session, err error) error {
	s.Close()
	p.total--
	p.notify()
	return fmt.Errorf("pool: %w", err)
}

// notify wakes every Acquire waiting for a change. p.mu is held.
func (p *Pool) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Pool) lease(s *Session, reused int) *Lease {
	return &Lease{Session: s, Reused: reused, p: p}
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Release returns the session to the pool. It is idempotent; the session must not be used
// afterwards. A poisoned session is reset; a closed one is dropped.
func (l *Lease) Release() {
	l.once.Do(func() { l.p.release(l.Session) })
}

func (p *Pool) release(s *Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case s.closed:
		p.total--
	case p.closed:
		s.Close()
		p.total--
	default:
		if s.err != nil {
			s.Reset()
		}
		p.tick++
		p.free = append(p.free, &pooled{s: s, lastUsed: p.tick})
	}
	p.notify()
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Sessions = int64(p.total)
	st.Leased = int64(p.total - len(p.free))
	return st
}

// Close closes the free sessions and makes Acquire fail; leased sessions are closed when
// released.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	for _, e := range p.free {
		e.s.Close()
		p.total--
	}
	p.free = nil
	p.notify()
	return nil
}
