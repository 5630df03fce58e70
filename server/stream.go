package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"
)

// sendTimeout bounds writing one event: a client that stops reading loses its stream
// instead of holding a session.
const sendTimeout = 30 * time.Second

// chunkFunc builds one streamed object of choice i: a text delta (finish == nil, u == nil),
// the choice's final chunk (finish != nil) or the usage chunk (u != nil, finish == nil).
type chunkFunc func(i int, text string, finish *string, u *usage) any

// stream answers with Server-Sent Events: an optional first event, one event per piece of
// text, the final event with the finish reason, the usage event when asked for, and
// "data: [DONE]". Errors before the first event are ordinary HTTP errors; later ones are
// sent as an error event.
//
// With set.tools, text is held back until the reply is complete, then sent as one content
// event or, when it holds calls, as toolDelta's events (delta.tool_calls).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, prompt []int, set settings, first func(i int) any, chunk chunkFunc,
	toolDelta func(i int, content string, calls []toolCallOut) any) {
	rc := http.NewResponseController(w)
	started := false
	var mu sync.Mutex // choices generate concurrently; events go out one at a time
	write := func(b []byte) error {
		rc.SetWriteDeadline(time.Now().Add(sendTimeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		return write(append(append([]byte("data: "), b...), '\n', '\n'))
	}
	begin := func() error {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		started = true
		if first != nil {
			for i := range max(set.n, 1) {
				if err := send(first(i)); err != nil {
					return err
				}
			}
			return nil
		}
		return rc.Flush()
	}
	g := generation{prompt: prompt, set: set, begin: begin,
		emit: func(i int, text string) error { return send(chunk(i, text, nil, nil)) }}
	n := max(set.n, 1)
	held := make([]strings.Builder, n)
	ids := make([][]int, n)
	if set.tools != nil && toolDelta != nil {
		g.emit = func(i int, text string) error { held[i].WriteString(text); return nil }
		g.raw = func(i, tok int) { ids[i] = append(ids[i], tok) }
	}
	out, err := s.run(r.Context(), g)
	for i := 0; err == nil && g.raw != nil && i < n; i++ {
		content, calls, perr := s.parseReply(set.tools, ids[i])
		switch {
		case perr != nil:
			err = perr
		case len(calls) > 0:
			out.finishReasons[i] = "tool_calls"
			err = send(toolDelta(i, content, calls))
		case held[i].Len() > 0:
			err = send(chunk(i, held[i].String(), nil, nil))
		}
	}
	if err != nil {
		if !started {
			s.fail(w, r, err)
			return
		}
		if r.Context().Err() != nil {
			s.log.Info("stream ended early: client gone or server shutting down", "path", r.URL.Path, "err", err)
			return
		}
		ae := s.generationError(r.Context(), err)
		s.log.Warn("stream failed", "path", r.URL.Path, "err", err)
		if send(ae.body()) == nil {
			write([]byte("data: [DONE]\n\n"))
		}
		return
	}
	for i := range out.finishReasons {
		if send(chunk(i, "", &out.finishReasons[i], nil)) != nil {
			return
		}
	}
	if set.includeUsage && send(chunk(0, "", nil, out.usage())) != nil {
		return
	}
	write([]byte("data: [DONE]\n\n"))
}
