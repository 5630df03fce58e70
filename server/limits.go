package server

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hfstatic/hfstatic/grammar"
	"github.com/hfstatic/hfstatic/internal/chat"
)

// Limits bound what clients the server does not know can make it hold: open
// connections, request bytes being read, the work of rendering chat templates
// and of compiling and following grammars. A zero field takes DefaultLimits'
// value.
type Limits struct {
	// MaxConns is how many connections are open at once. A connection that
	// arrives at the limit closes the one idle longest (a keep-alive waiting
	// for its next request, or a new one that has sent nothing); only when
	// every connection is busy does it wait in the kernel's accept backlog.
	MaxConns int
	// IdleTimeout closes a keep-alive connection that sends no request for
	// this long; ShortIdleTimeout does once more than 3/4 of MaxConns are open.
	IdleTimeout, ShortIdleTimeout time.Duration
	// MaxBodyInFlight bounds the request body bytes being read or held at
	// once, across all connections. A request whose body does not fit is
	// answered 503 before its body is read.
	MaxBodyInFlight int64
	// HeaderTimeout bounds reading a request's headers; BodyTimeout its body.
	HeaderTimeout, BodyTimeout time.Duration
	// Template bounds one rendering of the chat template.
	Template chat.Budget
	// Grammar bounds compiling one request's grammar (response_format, grammar,
	// or a forced tool call with all its tools) and the grammar's caches while
	// it is followed; zero fields take grammar.DefaultLimits'.
	Grammar grammar.Limits
	// GrammarMemory bounds the grammars' memory across requests: a compile
	// holds Grammar.CompileBytes() of it while it runs, and a generation its
	// grammar's MaxBytes until it ends. A request waits at most QueueTimeout
	// for its share, then gets 503. It must hold at least one compile.
	GrammarMemory int64
}

// DefaultLimits: 256 connections, idle ones closed after 2 min (5 s when
// more than 3/4 of them are open), 64 MiB of bodies in flight, 10 s for
// headers, 30 s for a body, chat.DefaultBudget, grammar.DefaultLimits and
// 1 GiB of grammars.
var DefaultLimits = Limits{MaxConns: 256, IdleTimeout: 2 * time.Minute, ShortIdleTimeout: 5 * time.Second,
	MaxBodyInFlight: 64 << 20, HeaderTimeout: 10 * time.Second, BodyTimeout: 30 * time.Second,
	Template: chat.DefaultBudget, Grammar: grammar.DefaultLimits, GrammarMemory: 1 << 30}

// withDefaults fills zero fields from DefaultLimits and refuses negative ones.
func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits
	switch {
	case l.MaxConns < 0:
		return l, badOption("Limits.MaxConns", "= %d, must be ≥ 0 (0: %d)", l.MaxConns, d.MaxConns)
	case l.MaxBodyInFlight < 0:
		return l, badOption("Limits.MaxBodyInFlight", "= %d, must be ≥ 0 (0: %d)", l.MaxBodyInFlight, d.MaxBodyInFlight)
	case l.HeaderTimeout < 0:
		return l, badOption("Limits.HeaderTimeout", "= %v, must be ≥ 0", l.HeaderTimeout)
	case l.BodyTimeout < 0:
		return l, badOption("Limits.BodyTimeout", "= %v, must be ≥ 0", l.BodyTimeout)
	case l.IdleTimeout < 0 || l.ShortIdleTimeout < 0:
		return l, badOption("Limits.IdleTimeout", "and ShortIdleTimeout must be ≥ 0")
	case l.GrammarMemory < 0:
		return l, badOption("Limits.GrammarMemory", "= %d, must be ≥ 0 (0: %d)", l.GrammarMemory, d.GrammarMemory)
	}
	l.MaxConns = cmp.Or(l.MaxConns, d.MaxConns)
	l.IdleTimeout = cmp.Or(l.IdleTimeout, d.IdleTimeout)
	l.ShortIdleTimeout = cmp.Or(l.ShortIdleTimeout, d.ShortIdleTimeout)
	l.MaxBodyInFlight = cmp.Or(l.MaxBodyInFlight, d.MaxBodyInFlight)
	l.HeaderTimeout = cmp.Or(l.HeaderTimeout, d.HeaderTimeout)
	l.BodyTimeout = cmp.Or(l.BodyTimeout, d.BodyTimeout)
	l.GrammarMemory = cmp.Or(l.GrammarMemory, d.GrammarMemory)
	if err := l.Grammar.Validate(); err != nil {
		return l, badOption("Limits.Grammar", "is invalid: %v", err)
	}
	if need := l.Grammar.CompileBytes() + l.Grammar.CacheBytes(); l.GrammarMemory < need {
		return l, badOption("Limits.GrammarMemory", "= %d, must hold one grammar's compile and caches (%d with these Grammar limits)", l.GrammarMemory, need)
	}
	return l, nil
}

// guards holds the server's shared limits: bytes of bodies in flight, slots
// for template renderings and the grammars' memory.
type guards struct {
	limits Limits

	mu       sync.Mutex
	inFlight int64 // body bytes reserved

	renders       chan struct{} // one token per running template rendering
	grammarMemory *memoryPool
}

func newGuards(l Limits, renders int) *guards {
	return &guards{limits: l, renders: make(chan struct{}, renders), grammarMemory: newMemoryPool(l.GrammarMemory)}
}

// errGrammarMemory is a wait for grammar memory that timed out.
var errGrammarMemory = errors.New("grammar memory exhausted")

// memoryPool is a budget of bytes that requests reserve and release, waiting
// for their share.
type memoryPool struct {
	mu    sync.Mutex
	used  int64
	max   int64
	freed chan struct{} // closed, and replaced, whenever bytes are released
}

func newMemoryPool(max int64) *memoryPool {
	return &memoryPool{max: max, freed: make(chan struct{})}
}

// reserve takes n bytes, waiting at most timeout (errGrammarMemory) or until
// ctx is done.
func (p *memoryPool) reserve(ctx context.Context, n int64, timeout time.Duration) error {
	var expired <-chan time.Time
	for {
		p.mu.Lock()
		if p.used+n <= p.max {
			p.used += n
			p.mu.Unlock()
			return nil
		}
		freed := p.freed
		p.mu.Unlock()
		if expired == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-freed:
		case <-expired:
			return errGrammarMemory
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *memoryPool) release(n int64) {
	p.mu.Lock()
	p.used -= n
	close(p.freed)
	p.freed = make(chan struct{})
	p.mu.Unlock()
}

// inUse reports the bytes reserved now.
func (p *memoryPool) inUse() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// reserveBody reserves n bytes of body; false when they do not fit.
func (g *guards) reserveBody(n int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight+n > g.limits.MaxBodyInFlight {
		return false
	}
	g.inFlight += n
	return true
}

func (g *guards) releaseBody(n int64) {
	g.mu.Lock()
	g.inFlight -= n
	g.mu.Unlock()
}

// errBodiesInFlight answers a request whose body does not fit in MaxBodyInFlight.
func (s *Server) errBodiesInFlight() *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeOverloaded, Code: "bodies_in_flight", RetryAfter: 1,
		Message: fmt.Sprintf("the server is already reading %d bytes of request bodies; retry later", s.guards.limits.MaxBodyInFlight)}
}

// readBodyLimited reads the request body under the shared limits: it
// reserves the body's size (Content-Length, or the largest allowed body
// when the length is unknown) before reading a byte, reads within
// BodyTimeout into a buffer of that size, and releases the reservation
// when the handler returns.
func (s *Server) readBodyLimited(w http.ResponseWriter, r *http.Request) (release func(), err error) {
	limit := s.o.MaxBodyBytes
	reserve := limit
	if r.ContentLength >= 0 {
		reserve = r.ContentLength
	}
	if !s.guards.reserveBody(reserve) {
		return nil, s.errBodiesInFlight()
	}
	release = func() { s.guards.releaseBody(reserve) }
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(s.guards.limits.BodyTimeout))
	defer rc.SetReadDeadline(time.Time{})
	buf := bytes.NewBuffer(make([]byte, 0, min(reserve, 1<<20)+1))
	_, err = buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		release()
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, jsonError(err)
		}
		return nil, badRequest("", "invalid_body", "cannot read the request body within %v: %v", s.guards.limits.BodyTimeout, err)
	}
	r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
	return release, nil
}

// render renders a conversation with the model's template, at most
// MaxSessions renderings at once (waiting at most QueueTimeout for a
// slot), within the template budget and the request's context.
func (s *Server) render(ctx context.Context, in chat.Input) (string, error) {
	t := time.NewTimer(s.o.QueueTimeout)
	defer t.Stop()
	select {
	case s.guards.renders <- struct{}{}:
	case <-t.C:
		return "", s.overloaded(errQueueTimeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-s.guards.renders }()
	in.Budget = s.guards.limits.Template
	return s.o.Template.RenderContext(ctx, in)
}

// connLimiter admits at most max connections at once, and keeps idle ones
// from holding that admission: a connection that arrives at the limit closes
// the connection idle longest (a keep-alive waiting for its next request, or a
// new one that has not sent a byte), as Go's http.Server does on shutdown and
// nginx when it runs out of connections; and while more than 3/4 of max are
// open, connections idle for shortIdle are closed, the longest idle first. Only when every connection is busy
// does a new one wait, as before, in the kernel's accept backlog. A client that
// does nothing thus cannot lock out one that has work.
type connLimiter struct {
	net.Listener
	max       int
	shortIdle time.Duration

	mu      sync.Mutex
	open    int // admitted and not yet closed
	conns   map[*trackedConn]struct{}
	changed chan struct{} // closed, and replaced, when a connection closes or goes idle
	done    chan struct{} // closed by Close
	close   sync.Once
}

func newConnLimiter(ln net.Listener, max int, shortIdle time.Duration) *connLimiter {
	l := &connLimiter{Listener: ln, max: max, shortIdle: shortIdle, conns: map[*trackedConn]struct{}{},
		changed: make(chan struct{}), done: make(chan struct{})}
	go l.sweep()
	return l
}

// trackedConn is an admitted connection.
type trackedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
	// idle: waiting for a request (new, or a keep-alive after a response) with
	// no byte read since; set under l.mu, cleared by Read without it.
	idle  atomic.Bool
	since time.Time // when it became idle (under l.mu)
	shut  bool      // chosen to be closed (under l.mu)
}

func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := l.admit(); err != nil {
		c.Close()
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l, since: time.Now()}
	tc.idle.Store(true)
	l.mu.Lock()
	l.conns[tc] = struct{}{}
	l.mu.Unlock()
	return tc, nil
}

// admit waits for room for one more connection, closing the connection idle
// longest when there is none.
func (l *connLimiter) admit() error {
	for {
		l.mu.Lock()
		if l.open < l.max {
			l.open++
			l.mu.Unlock()
			return nil
		}
		var victim *trackedConn
		for c := range l.conns {
			if c.idle.Load() && !c.shut && (victim == nil || c.since.Before(victim.since)) {
				victim = c
			}
		}
		if victim != nil {
			victim.shut = true
		}
		changed := l.changed
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
			continue
		}
		select {
		case <-changed:
		case <-l.done:
			return net.ErrClosed
		}
	}
}

// setState follows http.Server's view of a connection (its ConnState hook).
func (l *connLimiter) setState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*trackedConn)
	if !ok {
		return
	}
	switch st {
	case http.StateActive:
		c.idle.Store(false)
	case http.StateIdle:
		l.mu.Lock()
		c.since = time.Now()
		c.idle.Store(true)
		l.signal()
		l.mu.Unlock()
	}
}

// signal wakes the waiters of l.changed; l.mu is held.
func (l *connLimiter) signal() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// sweep closes connections idle for shortIdle, the longest idle first, while
// more than 3/4 of max are open, until Close.
func (l *connLimiter) sweep() {
	t := time.NewTicker(max(l.shortIdle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case now := <-t.C:
			var idle []*trackedConn
			l.mu.Lock()
			if excess := l.open - 3*l.max/4; excess > 0 {
				for c := range l.conns {
					if c.idle.Load() && !c.shut && now.Sub(c.since) >= l.shortIdle {
						idle = append(idle, c)
					}
				}
				slices.SortFunc(idle, func(a, b *trackedConn) int { return a.since.Compare(b.since) })
				idle = idle[:min(len(idle), excess)]
				for _, c := range idle {
					c.shut = true
				}
			}
			l.mu.Unlock()
			for _, c := range idle {
				c.Close()
			}
		}
	}
}

func (l *connLimiter) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.idle.Load() {
		c.idle.Store(false) // a request is arriving
	}
	return n, err
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		l := c.l
		l.mu.Lock()
		delete(l.conns, c)
		l.open--
		l.signal()
		l.mu.Unlock()
	})
	return err
}
