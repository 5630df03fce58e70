package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hfstatic/hfstatic/internal/chat"
)

// Limits bound what clients the server does not know can make it hold: open
// connections, request bytes being read, and the work of rendering chat
// templates. A zero field takes DefaultLimits' value.
type Limits struct {
	// MaxConns is how many connections are open at once; more wait in the
	// kernel's accept backlog.
	MaxConns int
	// MaxBodyInFlight bounds the request body bytes being read or held at
	// once, across all connections. A request whose body does not fit is
	// answered 503 before its body is read.
	MaxBodyInFlight int64
	// HeaderTimeout bounds reading a request's headers; BodyTimeout its body.
	HeaderTimeout, BodyTimeout time.Duration
	// Template bounds one rendering of the chat template.
	Template chat.Budget
}

// DefaultLimits: 256 connections, 64 MiB of bodies in flight, 10 s for
// headers, 30 s for a body, chat.DefaultBudget.
var DefaultLimits = Limits{MaxConns: 256, MaxBodyInFlight: 64 << 20,
	HeaderTimeout: 10 * time.Second, BodyTimeout: 30 * time.Second, Template: chat.DefaultBudget}

// withDefaults fills zero fields from DefaultLimits and refuses negative ones.
func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits
	switch {
	case l.MaxConns < 0:
		return l, fmt.Errorf("%w: Options.Limits.MaxConns = %d, must be ≥ 0 (0: %d)", ErrOptions, l.MaxConns, d.MaxConns)
	case l.MaxBodyInFlight < 0:
		return l, fmt.Errorf("%w: Options.Limits.MaxBodyInFlight = %d, must be ≥ 0 (0: %d)", ErrOptions, l.MaxBodyInFlight, d.MaxBodyInFlight)
	case l.HeaderTimeout < 0 || l.BodyTimeout < 0:
		return l, fmt.Errorf("%w: Options.Limits timeouts must be ≥ 0", ErrOptions)
	}
	if l.MaxConns == 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxBodyInFlight == 0 {
		l.MaxBodyInFlight = d.MaxBodyInFlight
	}
	if l.HeaderTimeout == 0 {
		l.HeaderTimeout = d.HeaderTimeout
	}
	if l.BodyTimeout == 0 {
		l.BodyTimeout = d.BodyTimeout
	}
	return l, nil
}

// guards holds the server's shared limits: bytes of bodies in flight and
// slots for template renderings.
type guards struct {
	limits Limits

	mu       sync.Mutex
	inFlight int64 // body bytes reserved

	renders chan struct{} // one token per running template rendering
}

func newGuards(l Limits, renders int) *guards {
	return &guards{limits: l, renders: make(chan struct{}, renders)}
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

// limitListener accepts at most n connections open at once.
type limitListener struct {
	net.Listener
	sem chan struct{}
}

func limitConns(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n)}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
