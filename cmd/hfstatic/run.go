package main

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/generate"
)

func newGenerateCmd() *cobra.Command {
	var (
		tokens, prompt string
		maxTokens      int
		temperature    float32
		threads        int
		ids            bool
	)
	cmd := &cobra.Command{
		Use:   "generate [PROGRAM] (--prompt TEXT | --tokens IDS)",
		Short: "Generate a continuation of a prompt",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("prompt") == cmd.Flags().Changed("tokens") {
				return usagef("generate needs exactly one of --prompt and --tokens")
			}
			if maxTokens < 1 {
				return usagef("-n %d must be ≥ 1", maxTokens)
			}
			m, err := openProgram(cmd.Context(), argOr(args, 0), threads)
			if err != nil {
				return err
			}
			defer m.Close()
			var toks []int
			if cmd.Flags().Changed("tokens") {
				if toks, err = parseTokens(tokens); err != nil {
					return err
				}
			} else {
				return fmt.Errorf("--prompt needs the tokenizer, which this build does not have yet; pass --tokens")
			}
			if temperature != 0 {
				return usagef("--temperature %g: only greedy decoding (0) is available in this build", temperature)
			}
			sess, err := m.Runner.NewSession()
			if err != nil {
				return err
			}
			defer sess.Close()
			md := m.Runner.Metadata()
			var eos []int
			for _, e := range md.Tokens.EOS {
				eos = append(eos, int(e))
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			first := true
			res, err := generate.Run(cmd.Context(), sess, toks, generate.Options{
				MaxTokens: maxTokens, EOS: eos,
				OnToken: func(tok int) error {
					if ids {
						if !first {
							out.WriteByte(',')
						}
						fmt.Fprint(out, tok)
						first = false
					}
					return nil
				},
			})
			if ids {
				out.WriteByte('\n')
			}
			out.Flush()
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
	f.StringVar(&prompt, "prompt", "", "prompt text")
	f.IntVarP(&maxTokens, "max-tokens", "n", 128, "most new tokens to generate")
	f.Float32Var(&temperature, "temperature", 0, "sampling temperature (0: greedy)")
	f.IntVar(&threads, "threads", defaultThreads(), "worker threads")
	f.BoolVar(&ids, "ids", false, "print the new token ids, comma-separated")
	return cmd
}
