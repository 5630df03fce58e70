package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hfstatic/hfstatic/encode"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/server"
)

// errEncoderProgram is what commands that generate say of an embedding or reranking program.
var errEncoderProgram = errors.New("this program embeds or scores text and does not generate: run it with hfstatic embed, rerank, serve or bench")

// encodeFlags are export's flags for embedding and reranking programs (hf_encode).
type encodeFlags struct {
	task, pooling string
	batch         int
	matryoshka    bool
}

func (e *encodeFlags) register(f *pflag.FlagSet) {
	f.StringVar(&e.task, "task", "", "what the program does: generate, embed or rerank (default: embed for sentence-transformers models and BERT/XLM-RoBERTa encoders, rerank for their ForSequenceClassification classes and Qwen3-Reranker, else generate)")
	f.IntVar(&e.batch, "batch", 0, "embed/rerank: sequences per call of the program (default "+fmt.Sprint(export.DefaultBatch)+"); --context is then the tokens per sequence (default: the model's max_seq_length or positions, capped at "+fmt.Sprint(export.MaxDefaultEncodeContext)+")")
	f.StringVar(&e.pooling, "pooling", "", "embed: cls, mean, max or last (default: the model's sentence-transformers Pooling module; mean for an encoder without one, last for a decoder)")
	f.BoolVar(&e.matryoshka, "matryoshka", false, "embed: the model was trained so that its embeddings may be truncated (Matryoshka), so requests may ask for fewer dimensions")
}

// apply checks the flags and sets them in opts.
func (e *encodeFlags) apply(opts *export.Options) error {
	switch e.task {
	case "", string(export.TaskGenerate), string(export.TaskEmbed), string(export.TaskRerank):
	default:
		return usagef("--task %q: want generate, embed or rerank", e.task)
	}
	switch e.pooling {
	case "", program.PoolCLS, program.PoolMean, program.PoolMax, program.PoolLast:
	default:
		return usagef("--pooling %q: want cls, mean, max or last", e.pooling)
	}
	if e.batch < 0 {
		return usagef("--batch %d must be ≥ 1", e.batch)
	}
	opts.Task, opts.Pooling, opts.Batch, opts.Matryoshka = export.Task(e.task), e.pooling, e.batch, e.matryoshka
	return nil
}

// encodes reports whether the export of ckpt with these flags writes an embedding or
// reranking program.
func (e *encodeFlags) encodes(ckpt *hf.Checkpoint) bool {
	task := export.Task(e.task)
	if task == "" {
		task = export.DefaultTask(ckpt)
	}
	return task != export.TaskGenerate
}

// folderTask is what the folder dir exports to by default (for run, which embeds or
// reranks instead of chatting); a folder that does not open is left to export to report.
func folderTask(dir string) export.Task {
	ckpt, err := hf.Open(mmap.DirFS(dir))
	if err != nil {
		return export.TaskGenerate
	}
	defer ckpt.Close()
	return export.DefaultTask(ckpt)
}

// encodeRun is the command run hands an embedding or reranking program to: embed the
// prompt (or standard input's lines), or rank standard input's lines against it.
func encodeRun(task export.Task, prog, prompt string) (*cobra.Command, []string, error) {
	if task == export.TaskRerank {
		if prompt == "" {
			return nil, nil, usagef("a reranking model ranks documents against a query: give the query with --prompt and the documents on standard input, one per line")
		}
		return newRerankCmd(), []string{prog, "--query", prompt}, nil
	}
	args := []string{prog}
	if prompt != "" {
		args = append(args, "--text", prompt)
	}
	return newEmbedCmd(), args, nil
}

// encoderOf returns the embedding and reranking side of an opened program.
func encoderOf(m *loaded) (*encode.Model, error) {
	enc, err := m.public.Encoder()
	if err != nil {
		return nil, fmt.Errorf("%s generates text and has no embedding or reranking head: embed and rerank run programs exported from embedding and reranking models (hfstatic export --task)", m.name)
	}
	return enc, nil
}

// openEncoder opens name as openAny does and returns it with its encoder;
// a program without one is closed and refused.
func openEncoder(cmd *cobra.Command, name string, threads int, ef *exportFlags) (*loaded, *encode.Model, error) {
	m, err := openAny(cmd, name, threads, ef)
	if err != nil {
		return nil, nil, err
	}
	enc, err := encoderOf(m)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, enc, nil
}

// readLines returns the non-empty lines of r.
func readLines(r io.Reader) ([]string, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if line := strings.TrimRight(sc.Text(), "\r"); line != "" {
			lines = append(lines, line)
		}
	}
	return lines, sc.Err()
}

func newEmbedCmd() *cobra.Command {
	var (
		texts, tokens       []string
		prompt, promptName  string
		truncate            bool
		dimensions, threads int
		ef                  exportFlags
	)
	cmd := &cobra.Command{
		Use:   "embed PROGRAM (--text TEXT... | --tokens IDS... | texts on standard input, one per line)",
		Short: "Print the embeddings of texts as JSON lines",
		Long: `embed runs an embedding program (exported from a sentence-transformers model, a BERT or
XLM-RoBERTa encoder, or Qwen3-Embedding) and prints one JSON object per input, in order:
{"index": I, "embedding": [...]}. Inputs are the --text flags, the --tokens flags (comma-separated
token ids, taken as they are), or else the lines of standard input. --prompt-name applies one of the
model's prompts (Qwen3-Embedding: "query" for queries; documents take none). Inputs longer than the
program takes are an error unless --truncate. PROGRAM is a program file, a Hugging Face folder or a
model name (ORG/NAME[@REVISION], exported once as run does).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(texts) > 0 && len(tokens) > 0 {
				return usagef("embed takes --text or --tokens, not both")
			}
			if dimensions < 0 {
				return usagef("--dimensions %d must be ≥ 0", dimensions)
			}
			var ids [][]int
			for _, t := range tokens {
				x, err := parseTokens(t)
				if err != nil {
					return err
				}
				ids = append(ids, x)
			}
			if len(texts) == 0 && len(ids) == 0 {
				var err error
				if texts, err = readLines(cmd.InOrStdin()); err != nil {
					return err
				}
				if len(texts) == 0 {
					return usagef("no input: give --text, --tokens, or lines on standard input")
				}
			}
			m, enc, err := openEncoder(cmd, args[0], threads, &ef)
			if err != nil {
				return err
			}
			defer m.Close()
			opts := encode.EmbedOptions{Prompt: prompt, PromptName: promptName, Truncate: truncate, Dimensions: dimensions}
			var res *encode.Embeddings
			if ids != nil {
				res, err = enc.EmbedTokens(cmd.Context(), ids, opts)
			} else {
				res, err = enc.Embed(cmd.Context(), texts, opts)
			}
			if err != nil {
				return err
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			enc2 := json.NewEncoder(w)
			for i, v := range res.Vectors {
				if err := enc2.Encode(struct {
					Index     int       `json:"index"`
					Embedding []float32 `json:"embedding"`
				}{i, v}); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&texts, "text", nil, "a text to embed (repeatable)")
	f.StringArrayVar(&tokens, "tokens", nil, "comma-separated token ids to embed as they are (repeatable)")
	f.StringVar(&prompt, "prompt", "", "text put before every input text")
	f.StringVar(&promptName, "prompt-name", "", "one of the model's prompts to put before every input text (e.g. query)")
	f.BoolVar(&truncate, "truncate", false, "cut inputs longer than the program takes instead of failing")
	ef.register(f)
	f.IntVar(&dimensions, "dimensions", 0, "keep the first N values of each embedding, renormalized (Matryoshka models only; 0: all)")
	f.IntVar(&threads, "threads", defaultThreads(), "worker threads")
	return cmd
}

func newRerankCmd() *cobra.Command {
	var (
		query, instruction string
		docs               []string
		topN, threads      int
		truncate           bool
		ef                 exportFlags
	)
	cmd := &cobra.Command{
		Use:   "rerank PROGRAM --query TEXT (--doc TEXT... | documents on standard input, one per line)",
		Short: "Rank documents by relevance to a query, as JSON lines",
		Long: `rerank runs a reranking program (a cross-encoder such as ms-marco-MiniLM or bge-reranker-v2-m3,
or Qwen3-Reranker) on the query and each document, and prints the documents most relevant first,
one JSON object per line: {"index": I, "relevance_score": S, "document": TEXT}. Documents are the
--doc flags, or else the lines of standard input. PROGRAM is a program file, a Hugging Face folder or a
model name (ORG/NAME[@REVISION], exported once as run does).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if query == "" {
				return usagef("rerank needs --query")
			}
			if topN < 0 {
				return usagef("--top-n %d must be ≥ 0", topN)
			}
			if len(docs) == 0 {
				var err error
				if docs, err = readLines(cmd.InOrStdin()); err != nil {
					return err
				}
				if len(docs) == 0 {
					return usagef("no documents: give --doc or lines on standard input")
				}
			}
			m, enc, err := openEncoder(cmd, args[0], threads, &ef)
			if err != nil {
				return err
			}
			defer m.Close()
			r, err := enc.Rerank(cmd.Context(), query, docs, encode.RerankOptions{Instruction: instruction, Truncate: truncate, TopN: topN})
			if err != nil {
				return err
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			je := json.NewEncoder(w)
			for _, res := range r.Results {
				if err := je.Encode(struct {
					Index     int     `json:"index"`
					Relevance float64 `json:"relevance_score"`
					Document  string  `json:"document"`
				}{res.Index, res.Relevance, docs[res.Index]}); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&query, "query", "", "the query")
	f.StringArrayVar(&docs, "doc", nil, "a document to rank (repeatable)")
	f.IntVar(&topN, "top-n", 0, "print only the N most relevant documents (0: all)")
	f.BoolVar(&truncate, "truncate", false, "cut query-document pairs longer than the program takes instead of failing")
	ef.register(f)
	f.StringVar(&instruction, "instruction", "", "the task instruction of rerankers that take one (Qwen3-Reranker; default: web search)")
	f.IntVar(&threads, "threads", defaultThreads(), "worker threads")
	return cmd
}

// encodeServe are the serve flags that apply to an embedding or reranking program.
type encodeServe struct {
	addr, modelID, path string
	aliases             []string
	maxBody             int64
	maxInputs, threads  int
	limits              server.Limits
	log                 *slog.Logger
	grace               time.Duration
	mlock               bool
}

// serveEncoder serves an embedding or reranking program: POST /v1/embeddings or
// POST /v1/rerank, with /v1/models, /health and /metrics.
func serveEncoder(cmd *cobra.Command, m *loaded, o encodeServe) error {
	if o.maxInputs < 1 {
		return usagef("--max-inputs %d must be ≥ 1", o.maxInputs)
	}
	enc, err := encoderOf(m)
	if err != nil {
		return err
	}
	if o.mlock && m.file != nil {
		if err := m.file.Lock(); err != nil {
			o.log.Info(notLocked+": idle pages may be paged out (raise `ulimit -l` or grant CAP_IPC_LOCK; --mlock=false skips this)", "err", err)
		}
	}
	if o.modelID == "" {
		o.modelID = defaultModelID(o.path)
	}
	s, err := server.New(server.Options{Encoder: enc, ModelID: o.modelID, Aliases: o.aliases, MaxBodyBytes: o.maxBody,
		MaxEmbedInputs: o.maxInputs, Logger: o.log, Limits: o.limits})
	if err != nil {
		return optionFlagError(err)
	}
	defer s.Close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	if host, _, _ := net.SplitHostPort(o.addr); !isLoopback(host) {
		o.log.Warn("listening beyond loopback: anyone who can reach this address can use the model", "addr", o.addr)
	}
	e := enc.Metadata()
	endpoint := "/v1/embeddings"
	if !enc.Embeds() {
		endpoint = "/v1/rerank"
	}
	o.log.Info("listening", "addr", ln.Addr().String(), "model", o.modelID, "endpoint", endpoint, "output", e.Output, "dim", e.Dim,
		"max_tokens", enc.MaxTokens(), "batch", e.Batch, "threads", o.threads)
	stopBudget.Add(int64(o.grace))
	return s.Serve(cmd.Context(), ln, o.grace)
}
