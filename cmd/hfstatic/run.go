package main

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/sample"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// samplingFlags are the sampling options shared by generate and chat.
type samplingFlags struct {
	opts sample.Options
	seed int64
	stop []string
}

func (s *samplingFlags) register(f *pflag.FlagSet) {
	f.Float32Var(&s.opts.Temperature, "temperature", 0.8, "sampling temperature (0: greedy)")
	f.IntVar(&s.opts.TopK, "top-k", 40, "keep the k most likely tokens (0: off)")
	f.Float32Var(&s.opts.TopP, "top-p", 0.95, "nucleus sampling mass (1: off)")
	f.Float32Var(&s.opts.MinP, "min-p", 0.05, "drop tokens below min-p × the top probability (0: off)")
	f.Float32Var(&s.opts.RepetitionPenalty, "repeat-penalty", 1, "repetition penalty (1: off)")
	f.Float32Var(&s.opts.PresencePenalty, "presence-penalty", 0, "presence penalty")
	f.Float32Var(&s.opts.FrequencyPenalty, "frequency-penalty", 0, "frequency penalty")
	f.Int64Var(&s.seed, "seed", -1, "random seed (-1: from the clock)")
	f.StringArrayVar(&s.stop, "stop", nil, "stop when this text is generated (repeatable)")
}

func (s *samplingFlags) sampler() (*sample.Sampler, error) {
	o := s.opts
	o.Seed = uint64(s.seed)
	if s.seed < 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	sm, err := sample.New(o)
	if err != nil {
		return nil, usageError{err}
	}
	return sm, nil
}

// textEmitter streams generated tokens as text, holding back text that may start a stop
// string, and ends generation when a stop string appears.
type textEmitter struct {
	w      *bufio.Writer
	stream *tokenizer.Stream
	stops  *sample.StopMatcher
	eos    map[int]bool
}

// newTextEmitter starts a text stream that continues after prompt: the prompt's last token
// primes the detokenizer, so the first new token keeps its leading space.
func newTextEmitter(w io.Writer, tok *tokenizer.Tokenizer, prompt []int, stops []string, eos []int) (*textEmitter, error) {
	m, err := sample.NewStopMatcher(stops)
	if err != nil {
		return nil, usageError{err}
	}
	stream := tok.NewStream(true)
	if len(prompt) > 0 {
		stream.Prime(prompt[len(prompt)-1]) // its text was the user's, not ours to print
	}
	e := &textEmitter{w: bufio.NewWriter(w), stream: stream, stops: m, eos: map[int]bool{}}
	for _, id := range eos {
		e.eos[id] = true
	}
	return e, nil
}

func (e *textEmitter) token(tok int) error {
	if e.eos[tok] {
		return nil
	}
	piece, err := e.stream.Add(tok)
	if err != nil {
		return err
	}
	text, stopped := e.stops.Push(piece)
	e.w.WriteString(text)
	e.w.Flush()
	if stopped {
		return generate.ErrStop
	}
	return nil
}

// finish writes what is still held back (unless a stop string ended generation).
func (e *textEmitter) finish(stopped bool) {
	if !stopped {
		text, _ := e.stops.Push(e.stream.Flush())
		e.w.WriteString(text)
		e.w.WriteString(e.stops.Flush())
	}
	e.w.Flush()
}

// newGenerateCmd is long because generate takes text or ids and prints text or ids; the
// loop itself is package generate.
func newGenerateCmd() *cobra.Command {
	var (
		tokens, prompt string
		maxTokens      int
		threads        int
		ids            bool
		sf             samplingFlags
	)
	cmd := &cobra.Command{
		Use:   "generate [PROGRAM] (--prompt TEXT | --tokens IDS)",
		Short: "Generate a continuation of a prompt, streaming text",
		Long: `generate appends the prompt and generates up to -n tokens, streaming the text (or, with --ids,
printing the new token ids comma-separated). --prompt "" starts from the tokenizer's BOS alone.
Without PROGRAM it runs the embedded stories260K model.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("prompt") && cmd.Flags().Changed("tokens") {
				return usagef("generate takes --prompt or --tokens, not both")
			}
			if maxTokens < 1 {
				return usagef("-n %d must be ≥ 1", maxTokens)
			}
			sampler, err := sf.sampler()
			if err != nil {
				return err
			}
			m, err := openProgram(cmd.Context(), argOr(args, 0), threads)
			if err != nil {
				return err
			}
			defer m.Close()
			md := m.Runner.Metadata()
			eos := md.Tokens.EOSIDs()
			var tok *tokenizer.Tokenizer
			if !ids || !cmd.Flags().Changed("tokens") {
				if tok, err = m.Tokenizer(); err != nil {
					return err
				}
			}
			var toks []int
			if cmd.Flags().Changed("tokens") {
				if toks, err = parseTokens(tokens); err != nil {
					return err
				}
			} else if toks, err = tok.Encode(prompt, true); err != nil {
				return err
			}
			if len(toks) == 0 {
				return fmt.Errorf("the prompt has no tokens and the tokenizer adds no BOS; give a non-empty prompt")
			}
			sess, err := m.Runner.NewSession()
			if err != nil {
				return err
			}
			defer sess.Close()
			out := cmd.OutOrStdout()
			var onToken func(int) error
			var emit *textEmitter
			first := true
			if ids {
				bw := bufio.NewWriter(out)
				defer bw.Flush()
				onToken = func(t int) error {
					if !first {
						bw.WriteByte(',')
					}
					fmt.Fprint(bw, t)
					first = false
					return nil
				}
				defer bw.WriteByte('\n')
			} else {
				if emit, err = newTextEmitter(out, tok, toks, sf.stop, eos); err != nil {
					return err
				}
				onToken = emit.token
			}
			res, err := generate.Run(cmd.Context(), sess, toks, generate.Options{
				MaxTokens: maxTokens, Sampler: sampler, EOS: eos, OnToken: onToken, Vocab: vocabOf(tok)})
			if emit != nil {
				emit.finish(res.Reason == generate.StopCondition)
				if len(res.Tokens) > 0 {
					fmt.Fprintln(out)
				}
			}
			if err != nil {
				return err
			}
			if res.Reason == generate.StopContextFull {
				fmt.Fprintf(cmd.ErrOrStderr(), "stopped after %d new tokens: the program's context of %d positions is full (prompt %d tokens)\n",
					len(res.Tokens), md.MaxContext, res.PromptTokens)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&tokens, "tokens", "", "comma-separated prompt token ids")
	f.StringVar(&prompt, "prompt", "", "prompt text (\"\": just the tokenizer's BOS)")
	f.IntVarP(&maxTokens, "max-tokens", "n", 256, "most new tokens to generate")
	f.IntVar(&threads, "threads", defaultThreads(), "worker threads")
	f.BoolVar(&ids, "ids", false, "print the new token ids, comma-separated, instead of text")
	sf.register(f)
	return cmd
}
