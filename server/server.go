// Package server is hfstatic's OpenAI-compatible HTTP API: GET /v1/models,
// POST /v1/completions and POST /v1/chat/completions (JSON or Server-Sent Events),
// POST /v1/embeddings and POST /v1/rerank for embedding and reranking models
// (embeddings.go), GET /health and GET /metrics (Prometheus text format); with Options.UI,
// GET / and /ui/... answer with that handler (hfstatic serve's chat page, package
// server/webui).
//
// It owns request validation (OpenAI-style error objects), admission (at most
// MaxSessions generations at once, a bounded queue behind them, 429/503 with
// Retry-After beyond), cancellation (a client that goes away stops its generation and
// frees its session), streaming and metrics (the hfstatic_* series and the vllm:* ones an
// inference router reads). Sessions come from a SessionPool that reuses the longest cached
// prompt prefix; each generation's session joins a runner.Batcher, so that running
// generations step together (continuous batching).
//
// It does not know programs, kernels or files: it drives runner sessions through
// package generate, samples with package sample, and tokenizes with package tokenizer.
// Tool calls are passed to the chat template; the model's reply is returned as text and
// is not parsed back into tool_calls.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hfstatic/hfstatic/encode"
	"github.com/hfstatic/hfstatic/internal/chat"
	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// Options configure a Server. Every field without a stated default is required.
type Options struct {
	// Runner is the program's runner: its shape (context) and end-of-sequence ids.
	Runner *runner.Runner
	// Pool lends sessions of Runner.
	Pool SessionPool
	// Tokenizer encodes prompts and decodes generated tokens.
	Tokenizer *tokenizer.Tokenizer
	// Template renders chat conversations; nil makes /v1/chat/completions answer 400.
	Template *chat.Template
	// ModelID is the name /v1/models lists and responses carry.
	ModelID string
	// Aliases are other names requests may use for the model ("model" must be ModelID, an
	// alias or absent; anything else is 404 model_not_found).
	Aliases []string
	// MaxSessions is how many generations run at once (≥ 1); the pool should hold as many
	// sessions.
	MaxSessions int
	// MaxBatch is the most generations whose steps run together as one batched step
	// (1 ≤ MaxBatch ≤ MaxSessions): a request joins the running batch at its next step and
	// leaves it when done; a long prompt is prefilled in chunks between decode steps.
	MaxBatch int
	// PrefillChunk is the most prompt tokens of one request a batched step runs beside the
	// others' decode rows, from 0 to the program's prefill step. Smaller chunks keep the
	// gaps between the running streams' tokens short while a long prompt is prefilled;
	// larger ones prefill faster. 0 sizes them step by step (runner.BatchOptions): a step
	// with a chunk takes at most ChunkBudget times a step of the decode rows alone, and a
	// prompt with no stream running beside it is prefilled in whole prefill steps.
	PrefillChunk int
	// ChunkBudget is, with PrefillChunk 0, how many times a step of the decode rows alone a
	// step with a prompt chunk may take (> 1; 0: runner.DefaultChunkBudget, 1.5): larger
	// budgets prefill (and serve prompt-heavy traffic) faster, smaller ones keep the running
	// streams' gaps between tokens shorter.
	ChunkBudget float64
	// MaxQueue is how many requests may wait for a session (≥ 0); more get 429.
	MaxQueue int
	// QueueTimeout is how long a request waits for a session before it gets 503 (> 0).
	QueueTimeout time.Duration
	// RequestTimeout bounds one generation (0: no limit).
	RequestTimeout time.Duration
	// MaxBodyBytes bounds a request body (> 0); larger bodies get 413.
	MaxBodyBytes int64
	// Limits bound connections, bodies in flight, read times and template
	// rendering (limits.go); zero fields take DefaultLimits'.
	Limits Limits
	// Logger receives one record per request and every recovered panic; nil discards.
	Logger *slog.Logger

	// Encoder, if set, answers POST /v1/embeddings (a model that embeds) or POST /v1/rerank
	// (one that scores pairs). A server with an Encoder and no Runner serves no generation
	// and needs only ModelID, MaxBodyBytes and the limits (embeddings.go).
	Encoder *encode.Model
	// MaxEmbedInputs bounds the inputs of an embeddings request and the documents of a
	// rerank request (0: DefaultMaxEmbedInputs).
	MaxEmbedInputs int
	// UI, if set, answers GET / and GET /ui/... (the browser page of package
	// server/webui); nil leaves / a 404 like any unknown path.
	UI http.Handler
}

// ErrOptions is wrapped by every error about invalid Options.
var ErrOptions = errors.New("server: invalid options")

// OptionError is an invalid field of Options: Field is its path below
// Options ("MaxSessions", "Limits.GrammarMemory"), Problem what is wrong with
// its value. It wraps ErrOptions; a command line maps Field to its flag.
type OptionError struct {
	Field, Problem string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("%v: Options.%s %s", ErrOptions, e.Field, e.Problem)
}

func (e *OptionError) Unwrap() error { return ErrOptions }

// badOption is the *OptionError of field, its problem formatted.
func badOption(field, format string, args ...any) error {
	return &OptionError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

func (o *Options) validate() error {
	if o.Runner == nil && o.Encoder != nil {
		return o.validateEncoderOnly()
	}
	bad := badOption
	switch {
	case o.Runner == nil:
		return bad("Runner", "is nil")
	case o.Pool == nil:
		return bad("Pool", "is nil")
	case o.Tokenizer == nil:
		return bad("Tokenizer", "is nil")
	case o.ModelID == "":
		return bad("ModelID", "is empty")
	case o.MaxSessions < 1:
		return bad("MaxSessions", "= %d, must be ≥ 1", o.MaxSessions)
	case o.MaxBatch < 1 || o.MaxBatch > o.MaxSessions:
		return bad("MaxBatch", "= %d, must be between 1 and MaxSessions (%d)", o.MaxBatch, o.MaxSessions)
	case o.PrefillChunk < 0 || o.PrefillChunk > o.Runner.Planner().Prefill:
		return bad("PrefillChunk", "= %d, must be between 0 (sized step by step) and the program's prefill step (%d)", o.PrefillChunk, o.Runner.Planner().Prefill)
	case !runner.ValidChunkBudget(o.ChunkBudget):
		return bad("ChunkBudget", "= %v, must be 0 (the default, %v) or more than 1 (at most %d)", o.ChunkBudget, runner.DefaultChunkBudget, runner.MaxChunkBudget)
	case o.MaxQueue < 0:
		return bad("MaxQueue", "= %d, must be ≥ 0", o.MaxQueue)
	case o.QueueTimeout <= 0:
		return bad("QueueTimeout", "= %v, must be > 0", o.QueueTimeout)
	case o.RequestTimeout < 0:
		return bad("RequestTimeout", "= %v, must be ≥ 0 (0: no limit)", o.RequestTimeout)
	case o.MaxBodyBytes <= 0:
		return bad("MaxBodyBytes", "= %d, must be > 0", o.MaxBodyBytes)
	}
	return nil
}

// Server serves one model. It is safe for concurrent use.
type Server struct {
	o       Options
	log     *slog.Logger
	eos     []int
	created int64
	slots   chan struct{} // one token per running generation
	guards  *guards       // connection, body and rendering limits
	metrics *metrics
	batch   batcher // the generations' sessions step through it
	mux     *http.ServeMux
	gv      grammarVocab // for structured outputs, built on first use
	formats grammarCache

	// tokenHook, when set (by tests only), runs after each generated token.
	tokenHook atomic.Pointer[func(ctx context.Context)]
}

// New validates opts and returns a server. Close releases it.
func New(opts Options) (*Server, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	limits, err := opts.Limits.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{o: opts, log: opts.Logger, created: time.Now().Unix(),
		slots: make(chan struct{}, max(opts.MaxSessions, 1)), metrics: newMetrics(), guards: newGuards(limits, max(opts.MaxSessions, 1))}
	if opts.Runner != nil {
		if s.batch, err = newBatcher(opts.Runner, runner.BatchOptions{MaxBatch: opts.MaxBatch, PrefillChunk: opts.PrefillChunk, ChunkBudget: opts.ChunkBudget}, s.metrics.step); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		s.eos = opts.Runner.Metadata().Tokens.EOSIDs()
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.mux = http.NewServeMux()
	s.route("/v1/models", http.MethodGet, s.handleModels)
	s.route("/v1/models/{id}", http.MethodGet, s.handleModel)
	s.route("/v1/completions", http.MethodPost, s.generative(s.handleCompletions))
	s.route("/v1/chat/completions", http.MethodPost, s.generative(s.handleChat))
	s.routeEncoders()
	s.route("/health", http.MethodGet, s.handleHealth)
	s.route("/metrics", http.MethodGet, s.handleMetrics)
	if opts.UI != nil {
		s.mux.Handle("GET /{$}", opts.UI)
		s.mux.Handle("GET /ui/", opts.UI)
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: typeNotFound, Code: "unknown_url",
			Message: fmt.Sprintf("no endpoint %s %s; see /v1/models, /v1/completions, /v1/chat/completions, /v1/embeddings, /v1/rerank, /health, /metrics", r.Method, r.URL.Path)})
	})
	return s, nil
}

// Close stops the batcher behind the generations; call it once Serve has returned (or the
// Handler is no longer used).
func (s *Server) Close() error {
	if s.batch == nil {
		return nil
	}
	return s.batch.Close()
}

// Handler returns the HTTP handler of every endpoint.
func (s *Server) Handler() http.Handler { return s.mux }

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// route registers h for path, answering other methods with 405, recovering panics and
// counting and logging each request.
func (s *Server) route(path, method string, h func(w http.ResponseWriter, r *http.Request)) {
	s.mux.HandleFunc(path, func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w := &statusWriter{ResponseWriter: rw}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if w.status == 0 {
					writeError(w, &apiError{Status: http.StatusInternalServerError, Type: typeServer, Message: "internal error; the server logged it"})
				}
			}
			s.metrics.request(path, w.status, time.Since(start))
			s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", w.status, "duration", time.Since(start))
		}()
		if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			w.Header().Set("Allow", method)
			writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: typeInvalidRequest, Code: "method_not_allowed",
				Message: fmt.Sprintf("%s takes %s, not %s", path, method, r.Method)})
			return
		}
		if r.Body != nil {
			if r.ContentLength > s.o.MaxBodyBytes {
				writeError(w, jsonError(&http.MaxBytesError{Limit: s.o.MaxBodyBytes}))
				return
			}
			release, err := s.readBodyLimited(w, r)
			if err != nil {
				writeError(w, err)
				return
			}
			defer release()
		}
		h(w, r)
	})
}

// errQueueFull and errQueueTimeout are admission failures.
var (
	errQueueFull    = errors.New("queue full")
	errQueueTimeout = errors.New("queue timeout")
)

// admit waits for a generation slot: immediately if one is free, else in the bounded
// queue for at most QueueTimeout. The returned func frees the slot.
func (s *Server) admit(ctx context.Context) (func(), error) {
	var once sync.Once
	release := func() { once.Do(func() { <-s.slots }) }
	select {
	case s.slots <- struct{}{}:
		return release, nil
	default:
	}
	if !s.metrics.enqueue(s.o.MaxQueue) {
		return nil, s.overloaded(errQueueFull)
	}
	defer s.metrics.dequeue()
	t := time.NewTimer(s.o.QueueTimeout)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return release, nil
	case <-t.C:
		return nil, s.overloaded(errQueueTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// overloaded turns an admission failure into a 429 (queue full) or 503 (waited too long)
// with a Retry-After estimated from recent request durations.
func (s *Server) overloaded(why error) *apiError {
	s.metrics.reject(why)
	retry := s.metrics.retryAfter(s.o.MaxSessions, s.o.MaxQueue)
	if why == errQueueFull {
		return &apiError{Status: http.StatusTooManyRequests, Type: typeOverloaded, Code: "queue_full", RetryAfter: retry,
			Message: fmt.Sprintf("all %d sessions are busy and %d requests are already waiting; retry later", s.o.MaxSessions, s.o.MaxQueue)}
	}
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeOverloaded, Code: "queue_timeout", RetryAfter: retry,
		Message: fmt.Sprintf("no session became free within %v; retry later", s.o.QueueTimeout)}
}

// Serve serves on ln until ctx is done, then shuts down gracefully: it stops accepting,
// lets in-flight requests finish for up to grace, then cancels the ones still running
// and waits for their handlers to return.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	hs := &http.Server{
		Handler:           s.Handler(),
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: s.guards.limits.HeaderTimeout,
		IdleTimeout:       s.guards.limits.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	conns := newConnLimiter(ln, s.guards.limits.MaxConns, s.guards.limits.ShortIdleTimeout)
	var handlers sync.WaitGroup
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		conns.setState(c, st)
		switch st {
		case http.StateNew:
			handlers.Add(1)
		case http.StateHijacked, http.StateClosed:
			handlers.Done()
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(conns) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "grace", grace)
	sctx, scancel := context.WithTimeout(context.Background(), grace)
	defer scancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		s.log.Warn("grace period over: cancelling in-flight requests")
		cancel()
		hs.Close()
		err = nil
	}
	handlers.Wait()
	if e := <-errc; e != nil && !errors.Is(e, http.ErrServerClosed) {
		return e
	}
	return err
}
