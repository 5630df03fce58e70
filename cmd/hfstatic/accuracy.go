package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/internal/accuracy"
)

// defaultAccuracyPrompt starts the compared sequence when neither --tokens nor --prompt is
// given: some tokenizers add no BOS, so an empty prompt has no tokens.
const defaultAccuracyPrompt = "Once upon a time, in a small town by the sea,"

func newAccuracyCmd() *cobra.Command {
	var (
		tokens, prompt  string
		textFile        string
		extend, threads int
		ef              exportFlags
	)
	cmd := &cobra.Command{
		Use:   "accuracy [REFERENCE] CANDIDATE [--text FILE | --tokens IDS | --prompt TEXT] [--generate N]",
		Short: "Compare a candidate program's logits (e.g. quantized) with a reference program's",
		Long: `accuracy runs one token sequence through both programs and prints the argmax agreement and the
mean KL divergence KL(reference ‖ candidate) over every position, and the bits per weight of the
candidate's weight matrices (what its linear and embedding ops read). The sequence is the text of
--text FILE encoded with the reference's tokenizer (BOS first; cut at the context), or --tokens, or
--prompt encoded likewise (default: "` + defaultAccuracyPrompt + `"; --prompt "" is just BOS)
extended by --generate N greedy tokens of the reference (--text is not extended unless --generate
is given).

With CANDIDATE alone, the reference is the embedded stories260K model (float32 weights): e.g.
hfstatic export -o q4.hfs --weights q4 && hfstatic accuracy q4.hfs.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				// The embedded model alone would be compared with itself.
				return errors.New("give the CANDIDATE program to compare (with the embedded stories260K model as the reference unless REFERENCE comes first), e.g. hfstatic export -o q4.hfs --weights q4 && hfstatic accuracy q4.hfs")
			}
			return cobra.RangeArgs(1, 2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) == 1 {
				args = []string{"", args[0]} // the embedded model is the reference
			}
			ref, err := openProgram(cmd, args[0], threads, &ef)
			if err != nil {
				return err
			}
			defer ref.Close()
			cand, err := openProgram(cmd, args[1], threads, &ef)
			if err != nil {
				return err
			}
			defer cand.Close()
			if rv, cv := ref.Runner.Metadata().VocabSize, cand.Runner.Metadata().VocabSize; rv != cv {
				return fmt.Errorf("%s has %d tokens and %s %d: accuracy compares two programs of one model (e.g. its f32 and q4 exports)", ref.name, rv, cand.name, cv)
			}
			var seq []int
			if textFile != "" {
				if cmd.Flags().Changed("tokens") || cmd.Flags().Changed("prompt") {
					return usagef("--text, --tokens and --prompt each give the sequence: pass one")
				}
				b, err := os.ReadFile(textFile)
				if err != nil {
					return err
				}
				prompt = string(b)
				if !cmd.Flags().Changed("generate") {
					extend = 0
				}
			}
			if cmd.Flags().Changed("tokens") {
				if seq, err = parseTokens(tokens); err != nil {
					return err
				}
			} else {
				tok, err := ref.Tokenizer()
				if err != nil {
					return err
				}
				if seq, err = tok.Encode(prompt, true); err != nil {
					return err
				}
			}
			if len(seq) == 0 {
				return usagef("the token sequence is empty")
			}
			if extend > 0 {
				if seq, err = extendGreedy(ctx, ref, seq, extend); err != nil {
					return err
				}
			}
			seq = seq[:min(len(seq), ref.Runner.Planner().Context, cand.Runner.Planner().Context)]
			rep, err := compareLogits(ctx, ref, cand, seq)
			if err != nil {
				return err
			}
			bits, n := accuracy.BitsPerWeight(&cand.File.Manifest)
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%s) vs %s (%s, %.3f bits per weight over %s weights): %s\n", ref.name, ref.Runner.Metadata().Source.Weights,
				cand.name, cand.Runner.Metadata().Source.Weights, bits, groupDigits(n), rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&tokens, "tokens", "", "comma-separated token ids")
	f.StringVar(&prompt, "prompt", defaultAccuracyPrompt, "prompt text")
	f.StringVar(&textFile, "text", "", "file whose text is the sequence (held-out text, not the calibration text)")
	f.IntVar(&extend, "generate", 200, "extend the sequence with N greedy tokens of the reference")
	f.IntVar(&threads, "threads", defaultThreads(), "worker threads")
	ef.register(f)
	return cmd
}

func extendGreedy(ctx context.Context, m *loaded, seq []int, n int) ([]int, error) {
	s, err := m.Runner.NewSession()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	res, err := generate.Run(ctx, s, seq, generate.Options{MaxTokens: n})
	if err != nil {
		return nil, err
	}
	out := append(append([]int(nil), seq...), res.Tokens...)
	return out[:min(len(out), m.Runner.Planner().Context)], nil
}

// compareLogits runs seq through both programs and compares the logits after every token.
func compareLogits(ctx context.Context, ref, cand *loaded, seq []int) (accuracy.Report, error) {
	rows := make([][]float32, 0, len(seq))
	rs, err := ref.Runner.NewSession()
	if err != nil {
		return accuracy.Report{}, err
	}
	defer rs.Close()
	err = rs.AppendEach(ctx, seq, func(i int, row []float32) error {
		rows = append(rows, append([]float32(nil), row...))
		return nil
	})
	if err != nil {
		return accuracy.Report{}, fmt.Errorf("reference: %w", err)
	}
	cs, err := cand.Runner.NewSession()
	if err != nil {
		return accuracy.Report{}, err
	}
	defer cs.Close()
	var acc accuracy.Accumulator
	err = cs.AppendEach(ctx, seq, func(i int, row []float32) error { return acc.Add(rows[i], row) })
	if err != nil {
		return accuracy.Report{}, fmt.Errorf("candidate: %w", err)
	}
	return acc.Report(), nil
}
