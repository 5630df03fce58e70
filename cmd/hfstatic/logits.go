package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/sample"
)

// parseTokens parses comma-separated token ids.
func parseTokens(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, usagef("--tokens: %q is not an integer token id", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func newLogitsCmd() *cobra.Command {
	var (
		tokens, out string
		threads     int
		ef          exportFlags
	)
	cmd := &cobra.Command{
		Use:   "logits [PROGRAM] --tokens IDS [-o FILE]",
		Short: "Write the logits after each token (float32 little-endian [n][vocab])",
		Long: `logits runs the comma-separated token ids through the program and writes, for each token i,
the logits after consuming it: float32 little-endian, row-major [n][vocab]. Without -o it prints
each row's argmax and maximum instead. The prefill method is used when it returns every row's
logits (export with --prefill-logits all); otherwise decode steps are used.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			toks, err := parseTokens(tokens)
			if err != nil {
				return err
			}
			if len(toks) == 0 {
				return usagef("logits needs --tokens")
			}
			m, err := openProgram(cmd, argOr(args, 0), threads, &ef)
			if err != nil {
				return err
			}
			defer m.Close()
			sess, err := m.Runner.NewSession()
			if err != nil {
				return err
			}
			defer sess.Close()
			var w *bufio.Writer
			if out != "" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = bufio.NewWriter(f)
			}
			stdout := cmd.OutOrStdout()
			buf := make([]byte, 4)
			err = sess.AppendEach(cmd.Context(), toks, func(i int, row []float32) error {
				if w == nil {
					best := max(sample.Argmax(row), 0)
					_, err := fmt.Fprintf(stdout, "%d\ttoken %d\targmax %d\tmax %.6f\n", i, toks[i], best, row[best])
					return err
				}
				for _, x := range row {
					binary.LittleEndian.PutUint32(buf, math.Float32bits(x))
					if _, err := w.Write(buf); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if w != nil {
				if err := w.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d rows × %d logits\n", out, len(toks), m.Runner.Metadata().VocabSize)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&tokens, "tokens", "", "comma-separated token ids")
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write the logits to")
	cmd.Flags().IntVar(&threads, "threads", defaultThreads(), "worker threads")
	ef.register(cmd.Flags())
	return cmd
}
