package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/chat"
	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/server"
	"github.com/hfstatic/hfstatic/server/webui"
)

// newServeCmd is long because it wires every serve flag into the server; the server itself
// lives in package server.
func newServeCmd() *cobra.Command {
	var (
		addr, modelID, templateFile  string
		aliases                      []string
		sessions, maxBatch, chunk    int
		budget                       float64
		queue, threads               int
		memoryBudget, maxBody        int64
		timeout, queueTimeout, grace time.Duration
		logJSON, mlock, noUI         bool
		limits                       server.Limits
		maxInputs                    int
		ef                           exportFlags
	)
	cmd := &cobra.Command{
		Use:   "serve [PROGRAM] [--addr 127.0.0.1:8080] [--sessions N] [--memory-budget BYTES]",
		Short: "Serve a program over an OpenAI-compatible HTTP API",
		Long: `serve answers GET /v1/models, POST /v1/completions and POST /v1/chat/completions (JSON or,
with "stream": true, Server-Sent Events), GET /health and GET /metrics (Prometheus text), and
shows a chat page at / (embedded in the binary; it loads nothing from other hosts; --no-ui
turns it off). PROGRAM is a program file, a Hugging Face folder or a model name
(ORG/NAME[@REVISION], exported once as run does); without it, the embedded stories260K model. An
embedding program answers POST /v1/embeddings instead, a reranking one POST /v1/rerank (the
generation flags below and the chat page do not apply to them).

Up to --sessions generations run at once, each on a pooled session; a request whose prompt
starts with tokens a free session already holds (the earlier turns of a chat) reuses them.
Up to --max-batch of them step together, one read of the weights for all (continuous
batching): a request joins the running batch at its next step and leaves it when done, and
a long prompt is prefilled in chunks beside the others' decode rows: by default chunks sized
step by step so that a step with one takes at most --chunk-budget (1.5) times a step of decode
rows alone (the running streams' gaps between tokens stretch by at most that; larger budgets
prefill faster), or --prefill-chunk tokens.
Up to --queue more requests wait, each for at most --queue-timeout; beyond that requests get
429 or 503 with Retry-After. It listens on loopback unless --addr says otherwise. On SIGINT or
SIGTERM it stops accepting, lets running requests finish for --grace, then cancels them.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case sessions < 1:
				return usagef("--sessions %d must be ≥ 1", sessions)
			case cmd.Flags().Changed("max-batch") && (maxBatch < 1 || maxBatch > sessions):
				return usagef("--max-batch %d must be between 1 and --sessions (%d)", maxBatch, sessions)
			case !runner.ValidChunkBudget(budget):
				return usagef("--chunk-budget %v must be more than 1 (at most %d), or 0 for the default (%v)", budget, runner.MaxChunkBudget, runner.DefaultChunkBudget)
			case chunk < 0:
				return usagef("--prefill-chunk %d must be ≥ 0 (0: sized by time, step by step)", chunk)
			case queue < 0:
				return usagef("--queue %d must be ≥ 0", queue)
			case maxBody < 1:
				return usagef("--max-body %d must be ≥ 1", maxBody)
			case timeout < 0:
				return usagef("--timeout %v must be ≥ 0 (0: no limit)", timeout)
			case queueTimeout <= 0:
				return usagef("--queue-timeout %v must be > 0", queueTimeout)
			case grace < 0:
				return usagef("--grace %v must be ≥ 0", grace)
			}
			var handler slog.Handler = slog.NewTextHandler(cmd.ErrOrStderr(), nil)
			if logJSON {
				handler = slog.NewJSONHandler(cmd.ErrOrStderr(), nil)
			}
			log := slog.New(handler)

			path := argOr(args, 0)
			m, err := openAny(cmd, path, threads, &ef)
			if err != nil {
				return err
			}
			defer m.Close()
			if m.Encoder != nil {
				return serveEncoder(cmd, m, encodeServe{addr: addr, modelID: modelID, aliases: aliases, maxBody: maxBody,
					maxInputs: maxInputs, limits: limits, log: log, grace: grace, mlock: mlock, threads: threads, path: path})
			}
			if mlock && m.file != nil {
				// A server sits idle between requests; unlocked, the program's pages may be
				// reclaimed and come back from disk (in small pages) on the next request.
				if err := m.file.Lock(); err != nil {
					log.Info(notLocked+": idle pages may be paged out (raise `ulimit -l` or grant CAP_IPC_LOCK; --mlock=false skips this)", "err", err)
				}
			}
			if modelID == "" {
				modelID = defaultModelID(path)
			}
			tok, err := m.Tokenizer()
			if err != nil {
				return err
			}
			tmpl, err := serveTemplate(m, templateFile)
			if err != nil {
				return err
			}
			if tmpl == nil {
				log.Warn("no chat template: /v1/chat/completions will answer 400 (--template-file FILE gives the program one)")
			}
			if memoryBudget < m.Runner.SessionBytes() {
				return usagef("--memory-budget %d bytes is less than one session of this program (%d bytes)", memoryBudget, m.Runner.SessionBytes())
			}
			pool, err := runner.NewPool(m.Runner, runner.PoolOptions{MaxSessions: sessions, MemoryBudget: memoryBudget})
			if err != nil {
				return err
			}
			defer pool.Close()
			if pool.Limit() < sessions {
				log.Warn("--memory-budget holds fewer sessions than --sessions", "sessions", pool.Limit(),
					"session_bytes", m.Runner.SessionBytes(), "memory_budget", memoryBudget)
			}
			if p := m.Runner.Planner().Prefill; chunk > p {
				return usagef("--prefill-chunk %d is more than the program's prefill step (%d)", chunk, p)
			}
			if !cmd.Flags().Changed("max-batch") || maxBatch > pool.Limit() {
				maxBatch = pool.Limit() // --sessions, or fewer when --memory-budget holds fewer
			}
			opts := server.Options{
				Runner: m.Runner, Pool: server.RunnerPool(pool), Tokenizer: tok, Template: tmpl, ModelID: modelID, Aliases: aliases,
				MaxSessions: pool.Limit(), MaxBatch: maxBatch, PrefillChunk: chunk, ChunkBudget: budget, MaxQueue: queue, QueueTimeout: queueTimeout, RequestTimeout: timeout,
				MaxBodyBytes: maxBody, Logger: log, Limits: limits,
			}
			if !noUI {
				opts.UI = webui.Handler()
			}
			s, err := server.New(opts)
			if err != nil {
				return optionFlagError(err)
			}
			defer s.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			if host, _, _ := net.SplitHostPort(addr); !isLoopback(host) {
				log.Warn("listening beyond loopback: anyone who can reach this address can use the model", "addr", addr)
			}
			if !noUI {
				log.Info("chat page at http://" + ln.Addr().String() + "/")
			}
			log.Info("listening", "addr", ln.Addr().String(), "model", modelID, "context", m.Runner.Planner().Context,
				"sessions", pool.Limit(), "max_batch", maxBatch, "session_bytes", m.Runner.SessionBytes(), "queue", queue, "threads", threads)
			stopBudget.Add(int64(grace))
			return s.Serve(cmd.Context(), ln, grace)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	f.IntVar(&sessions, "sessions", 4, "generations that run at once (pooled sessions)")
	f.IntVar(&maxBatch, "max-batch", 0, "most generations that step together (default: --sessions)")
	f.IntVar(&chunk, "prefill-chunk", 0, "most prompt tokens of one request per batched step (0: sized step by step, see --chunk-budget)")
	f.Float64Var(&budget, "chunk-budget", 0, "with --prefill-chunk 0: how many times a decode-only step a step with a prompt chunk may take (> 1; 0: 1.5)")
	f.Int64Var(&memoryBudget, "memory-budget", 1<<30, "most bytes of session buffers the pool holds")
	f.IntVar(&queue, "queue", 32, "requests that may wait for a session")
	f.DurationVar(&queueTimeout, "queue-timeout", 30*time.Second, "longest wait for a session before 503")
	f.Int64Var(&maxBody, "max-body", 8<<20, "largest request body in bytes (larger: 413)")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "longest generation (0: no limit)")
	d := server.DefaultLimits
	f.IntVar(&limits.MaxConns, "max-conns", d.MaxConns, "most connections open at once (more wait to be accepted)")
	f.Int64Var(&limits.MaxBodyInFlight, "max-body-in-flight", d.MaxBodyInFlight, "most request-body bytes read or held at once across connections (more: 503)")
	f.DurationVar(&limits.HeaderTimeout, "header-timeout", d.HeaderTimeout, "longest time to read a request's headers")
	f.DurationVar(&limits.BodyTimeout, "body-timeout", d.BodyTimeout, "longest time to read a request's body")
	f.IntVar(&limits.Template.MaxSteps, "template-steps", d.Template.MaxSteps, "most chat-template steps (loop iterations, calls) per request")
	f.IntVar(&limits.Template.MaxOutput, "template-output", d.Template.MaxOutput, "most bytes a chat template may render per request")
	f.DurationVar(&limits.Template.Timeout, "template-timeout", d.Template.Timeout, "longest chat-template rendering per request")
	f.IntVar(&limits.Grammar.MaxDepth, "grammar-depth", d.Grammar.MaxDepth, "most nesting in one request's grammar (JSON Schema, regex, GBNF)")
	f.IntVar(&limits.Grammar.MaxStates, "grammar-states", d.Grammar.MaxStates, "most automaton states one request's grammar may build")
	f.DurationVar(&limits.Grammar.Timeout, "grammar-timeout", d.Grammar.Timeout, "longest compile of one request's grammar")
	f.Int64Var(&limits.GrammarMemory, "grammar-memory", d.GrammarMemory, "most bytes of grammars (compiling and being followed) across requests")
	f.DurationVar(&grace, "grace", 30*time.Second, "how long running requests may finish after SIGINT/SIGTERM")
	f.IntVar(&threads, "threads", defaultThreads(), "worker threads")
	f.StringVar(&modelID, "model-id", "", "model name in /v1/models (default: the program's file name)")
	f.StringArrayVar(&aliases, "model-alias", nil, "another name requests may use for the model (repeatable); other names get 404 model_not_found")
	f.StringVar(&templateFile, "template-file", "", "file with a Jinja chat template (Hugging Face's dialect) for /v1/chat/completions, instead of the program's")
	f.BoolVar(&noUI, "no-ui", false, "serve no chat page at / (the API only)")
	f.BoolVar(&logJSON, "log-json", false, "log JSON lines instead of text")
	f.BoolVar(&mlock, "mlock", true, "lock the program's pages in memory (mlock) so that idle time cannot page them out")
	f.IntVar(&maxInputs, "max-inputs", server.DefaultMaxEmbedInputs, "embedding and reranking programs: most inputs of one /v1/embeddings request, documents of one /v1/rerank request")
	ef.register(f)
	return cmd
}

// serveTemplate is the chat template serve renders conversations with: --template-file's,
// else the program's; nil when there is none.
func serveTemplate(m *loaded, templateFile string) (*chat.Template, error) {
	if templateFile != "" {
		src, err := os.ReadFile(templateFile)
		if err != nil {
			return nil, fmt.Errorf("--template-file: %w", err)
		}
		t, err := chat.Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("--template-file %s: %w", templateFile, err)
		}
		return t, nil
	}
	t, err := m.ChatTemplate("")
	if errors.Is(err, engine.ErrNoChatTemplate) {
		return nil, nil
	}
	return t, err
}

// notLocked starts the log line of a program serve could not lock in memory.
const notLocked = "the program is not locked in memory"

// defaultModelID names the model after its program file.
func defaultModelID(path string) string {
	if path == "" {
		return "stories260K"
	}
	if isModelName(path) {
		return path // ORG/NAME[@REVISION], as vLLM names a model
	}
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveFlags names the serve flag that sets each field of server.Options.
var serveFlags = map[string]string{
	"MaxSessions": "--sessions", "MaxBatch": "--max-batch", "PrefillChunk": "--prefill-chunk",
	"ChunkBudget": "--chunk-budget", "MaxQueue": "--queue", "QueueTimeout": "--queue-timeout",
	"RequestTimeout": "--timeout", "MaxBodyBytes": "--max-body", "MaxEmbedInputs": "--max-inputs",
	"Limits.MaxConns": "--max-conns", "Limits.MaxBodyInFlight": "--max-body-in-flight",
	"Limits.HeaderTimeout": "--header-timeout", "Limits.BodyTimeout": "--body-timeout",
	"Limits.GrammarMemory": "--grammar-memory", "Limits.Grammar": "--grammar-depth, --grammar-states or --grammar-timeout",
}

// optionFlagError turns a *server.OptionError about a field a flag sets into
// a usage error naming the flag; other errors pass unchanged.
func optionFlagError(err error) error {
	var oe *server.OptionError
	if errors.As(err, &oe) {
		if flag, ok := serveFlags[oe.Field]; ok {
			return usagef("%s %s", flag, strings.TrimPrefix(oe.Problem, "= "))
		}
	}
	return err
}
