package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/program"
)

func newExportCmd() *cobra.Command {
	var (
		out, cacheDType, weights, embedWeights, prefillLogits, layout string
		prefill, context                                              int
		keep                                                          []string
		quiet                                                         bool
	)
	cmd := &cobra.Command{
		Use:   "export MODEL -o PROGRAM",
		Short: "Export a Hugging Face model folder to an hfstatic program",
		Long: `Export reads config.json, model.safetensors (or a sharded index) and tokenizer files from
MODEL (a Hugging Face folder, or ORG/NAME[@REVISION]: from the Hugging Face cache, else downloaded
as "hfstatic pull" does) and writes one program file with a decode method and, with --prefill P > 0, a prefill
method of P tokens.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("export needs -o PROGRAM")
			}
			dir, err := resolveModelDir(cmd, args[0], quiet)
			if err != nil {
				return err
			}
			ckpt, err := hf.Open(mmap.DirFS(dir))
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			defer ckpt.Close()
			opts := export.Options{
				Context: context, Prefill: prefill, CacheDType: program.DType(cacheDType), Weights: weights, EmbedWeights: embedWeights,
				Keep: keep, PrefillLogits: program.LogitsRows(prefillLogits), SlidingLayout: program.SlidingLayout(layout),
			}
			var bar *progressbar.ProgressBar
			switch {
			case quiet:
			case !isTerminal(os.Stderr):
				// Logs and pipes get a line per tenth of the tensors, not a redrawn bar.
				last := -1
				opts.Progress = func(p export.Progress) {
					if tenth := 10 * p.Done / max(p.Total, 1); tenth != last && p.Done > 0 {
						last = tenth
						fmt.Fprintf(os.Stderr, "exporting: %d/%d tensors\n", p.Done, p.Total)
					}
				}
			default:
				opts.Progress = func(p export.Progress) {
					if bar == nil {
						bar = progressbar.NewOptions(p.Total, progressbar.OptionSetWriter(os.Stderr),
							progressbar.OptionSetDescription("exporting"), progressbar.OptionShowCount(),
							progressbar.OptionClearOnFinish())
					}
					bar.Set(p.Done)
				}
			}
			tmp, err := os.CreateTemp(filepath.Dir(out), ".hfstatic-export-*")
			if err != nil {
				return err
			}
			defer os.Remove(tmp.Name())
			sum, err := export.Export(cmd.Context(), ckpt, tmp, opts)
			if bar != nil {
				bar.Finish()
			}
			if err != nil {
				tmp.Close()
				return err
			}
			if err := tmp.Close(); err != nil {
				return err
			}
			if err := os.Rename(tmp.Name(), out); err != nil {
				return err
			}
			types := map[program.DType]int{}
			for _, t := range sum.Tensors {
				types[t.DType]++
			}
			var tl []string
			for _, d := range []program.DType{program.F32, program.F16, program.BF16, program.Q8, program.Q4} {
				if types[d] > 0 {
					tl = append(tl, fmt.Sprintf("%d %s", types[d], d))
				}
			}
			methods := "decode"
			if sum.Prefill > 0 {
				methods = fmt.Sprintf("decode, prefill(%d)", sum.Prefill)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s, %s; context %d; methods %s; tensors %s; %s bytes; fingerprint %s\n",
				out, sum.Architecture, sum.Spec, sum.Context, methods, strings.Join(tl, ", "), groupDigits(sum.Bytes), sum.Fingerprint)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "program file to write")
	f.IntVar(&prefill, "prefill", 0, "prefill step P (0: decode method only)")
	f.IntVar(&context, "context", 0, "context capacity C (default: the model's max_position_embeddings capped at 4096)")
	f.StringVar(&cacheDType, "cache-dtype", "f16", "K/V cache dtype: f16 or f32")
	f.StringVar(&weights, "weights", "", "weight type: f32, f16, bf16, q8, q4 (default: the checkpoint's dtype)")
	f.StringVar(&embedWeights, "embed-weights", "", "type of the embedding and output matrices (default: q8 with --weights q4, else --weights)")
	f.StringSliceVar(&keep, "weights-keep", nil, "checkpoint tensors to keep in float when quantizing (comma-separated)")
	f.StringVar(&prefillLogits, "prefill-logits", "last", "rows of logits the prefill method returns: last or all")
	f.StringVar(&layout, "sliding-layout", "ring", "cache layout of sliding-window layers: ring or full")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	return cmd
}

// groupDigits formats n with thousands separators.
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// isTerminal reports whether f is a character device (a terminal, for progress bars).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
