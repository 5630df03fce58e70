package main

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// newGenerateCmd is long because generate takes text or ids and prints text or ids; the
// loop itself is package generate.
func newGenerateCmd() *cobra.Command {
	var (
		tokens, prompt string
		maxTokens      int
		threads        int
		ids            bool
		sf             samplingFlags
		ef             exportFlags
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
			m, err := openProgram(cmd, argOr(args, 0), threads, &ef)
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
	ef.register(f)
	return cmd
}
