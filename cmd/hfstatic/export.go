package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/internal/arch"
	"github.com/hfstatic/hfstatic/internal/calib"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// newExportCmd is long because it declares every export flag and reports progress; the
// export itself lives in internal/export.
func newExportCmd() *cobra.Command {
	var (
		out, cacheDType, weights, embedWeights, prefillLogits, layout string
		calibrate, delegate, rotate                                   string
		prefill, context                                              int
		keep, tensorWeights                                           []string
		quiet, noTokenizer                                            bool
	)
	cmd := &cobra.Command{
		Use:   "export [MODEL] -o PROGRAM",
		Short: "Export a Hugging Face model folder to an hfstatic program",
		Long: `Export reads config.json, model.safetensors (or a sharded index) and tokenizer files from
MODEL (a Hugging Face folder, or ORG/NAME[@REVISION]: from the Hugging Face cache, else downloaded
as "hfstatic pull" does; without MODEL, the embedded stories260K folder) and writes one program file with a decode method and a prefill method that runs
prompts P tokens at a time (--prefill, default ` + fmt.Sprint(hfstatic.DefaultPrefill) + `; 0 for decode only, which runs prompts token by
token, 4-9× slower here). Why ` + fmt.Sprint(hfstatic.DefaultPrefill) + `: measured with hfstatic bench (SmolLM2-135M, bf16, 2 threads; prompts of 20,
128 and 500 tokens; P = 16, 32, 64, 128, 256), 64 was as fast as the best size for every prompt
length within the machine's noise, while 16 and 32 were slower on long prompts and 128 and 256
run a mostly padded step whenever a prompt just overflows a multiple of P.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("export needs -o PROGRAM")
			}
			if err := checkOutput(out); err != nil {
				return err
			}
			if err := checkExportFlags(weights, embedWeights); err != nil {
				return err
			}
			var rules []export.TensorWeight
			for _, r := range tensorWeights {
				match, typ, ok := strings.Cut(r, "=")
				if !ok || match == "" || typ == "" {
					return usagef("--tensor-weights %q: want MATCH=TYPE, e.g. v_proj=q8", r)
				}
				rules = append(rules, export.TensorWeight{Match: match, Type: typ})
			}
			if !cmd.Flags().Changed("prefill") && context > 0 && context < hfstatic.DefaultPrefill {
				prefill = context // the default step, shortened to the whole context
				if context < 2 {
					prefill = 0
				}
			}
			ckpt, name, err := openCheckpoint(cmd, argOr(args, 0), quiet)
			if err != nil {
				return err
			}
			defer ckpt.Close()
			if ckpt.TokenizerJSON == nil && !noTokenizer {
				return fmt.Errorf("%s has no tokenizer.json: a program without one cannot turn text into tokens (generate, chat and serve need it); copy the model's tokenizer.json (and tokenizer_config.json) into the folder, or pass --no-tokenizer to export without it", argOr(args, 0))
			}
			if trained := trainedContext(ckpt.Config.Raw); context > trained && trained > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: --context %d is past the %d positions %s was trained on (max_position_embeddings): expect worse text beyond %d tokens\n", context, trained, name, trained)
			}
			opts := export.Options{
				Context: context, Prefill: prefill, CacheDType: program.DType(cacheDType), Weights: weights, EmbedWeights: embedWeights,
				Keep: keep, TensorWeights: rules, PrefillLogits: program.LogitsRows(prefillLogits), SlidingLayout: program.SlidingLayout(layout),
				Model: name, Writer: "hfstatic " + hfstatic.Version(), Delegate: delegate, Rotate: rotate,
			}
			if opts.Calibration, err = calibrationStats(cmd, ckpt, calibrate, weights, embedWeights, rotate); err != nil {
				return err
			}
			var bar *progressbar.ProgressBar
			errw := cmd.ErrOrStderr()
			errFile, _ := errw.(*os.File)
			switch {
			case quiet:
			case errFile == nil || !isTerminal(errFile):
				// Logs and pipes get a line per tenth of the tensors, not a redrawn bar.
				last := -1
				opts.Progress = func(p export.Progress) {
					if tenth := 10 * p.Done / max(p.Total, 1); tenth != last && p.Done > 0 {
						last = tenth
						fmt.Fprintf(errw, "exporting: %d/%d tensors\n", p.Done, p.Total)
					}
				}
			default:
				opts.Progress = func(p export.Progress) {
					if bar == nil {
						bar = progressbar.NewOptions(p.Total, progressbar.OptionSetWriter(errw),
							progressbar.OptionSetDescription("exporting"), progressbar.OptionShowCount(),
							progressbar.OptionClearOnFinish())
					}
					bar.Set(p.Done)
				}
			}
			tmp, err := os.CreateTemp(filepath.Dir(out), ".hfstatic-export-*")
			if err != nil {
				return fmt.Errorf("cannot write %s: %w", out, unwrapPath(err))
			}
			defer os.Remove(tmp.Name())
			if err := tmp.Chmod(0o644); err != nil { // CreateTemp's 0600 would keep the program from other users
				tmp.Close()
				return err
			}
			sum, err := export.Export(cmd.Context(), ckpt, tmp, opts)
			if bar != nil {
				bar.Finish()
			}
			if err != nil {
				tmp.Close()
				if errors.Is(err, export.ErrOptions) {
					return usageError{err}
				}
				return err
			}
			if err := tmp.Close(); err != nil {
				return err
			}
			if err := os.Rename(tmp.Name(), out); err != nil {
				return fmt.Errorf("cannot write %s: %w", out, unwrapPath(err))
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
			if delegate != "" {
				methods += " (and their " + strings.ToUpper(delegate) + " graphs)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s, %s; context %d; methods %s; tensors %s; %s bytes; fingerprint %s\n",
				out, sum.Architecture, sum.Spec, sum.Context, methods, strings.Join(tl, ", "), groupDigits(sum.Bytes), sum.Fingerprint)
			if len(sum.Ignored) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "ignored %d checkpoint tensors the program does not use: %s\n", len(sum.Ignored), ignoredGroups(sum.Ignored))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "program file to write")
	f.IntVar(&prefill, "prefill", hfstatic.DefaultPrefill, "prefill step P: prompts run P tokens at a time (0: decode method only)")
	f.IntVar(&context, "context", 0, "context capacity C (default: the model's max_position_embeddings capped at 4096)")
	f.StringVar(&cacheDType, "cache-dtype", "f16", "K/V cache dtype: f16 or f32")
	f.StringVar(&weights, "weights", "", "weight type: f32, f16, bf16, q8, q4 (default: the checkpoint's dtype)")
	f.StringVar(&embedWeights, "embed-weights", "", "type of the embedding and output matrices (default: q8 with --weights q4, else --weights)")
	f.StringSliceVar(&keep, "weights-keep", nil, "checkpoint tensors to keep in float when quantizing (comma-separated)")
	f.StringArrayVar(&tensorWeights, "tensor-weights", nil, "MATCH=TYPE: the weight type (f32, f16, bf16, q8, q4) of the matrices whose program tensor name contains MATCH, before --weights and --embed-weights (repeatable; the first match wins), like llama-quantize --tensor-type; e.g. v_proj=q8 in a q4 program")
	f.StringVar(&prefillLogits, "prefill-logits", "last", "rows of logits the prefill method returns: last or all")
	f.StringVar(&layout, "sliding-layout", "ring", "cache layout of sliding-window layers: ring or full")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	f.StringVar(&calibrate, "calibrate", "", "choose q8/q4 scales for how the float model uses its weights on a text FILE (paragraphs separated by blank lines), on the embedded text (\"default\"), on text the model writes itself (\"self\"), or not at all (\"none\"); unset: \"self\" when quantizing a model of hidden size ≤ "+fmt.Sprint(calib.DefaultMaxGram)+", else \"none\" (\"self\" runs the float model for 5,120 tokens: seconds for small models, minutes for large ones)")
	f.StringVar(&rotate, "rotate", export.RotateNone, "rotate the residual stream before converting the weights: none, or hadamard (norm gains fused into the matrices, a fixed signed Hadamard rotation; the float model is unchanged, a tied output matrix is written untied; Llama-like families only). On stories260K it lowers q8's error and raises q4's (docs/quantization.md)")
	f.StringVar(&delegate, "delegate", "", "also store each method as a graph for another engine: onnx (ONNX graphs over the same weights, for --executor ort and inspect --extract-onnx)")
	f.BoolVar(&noTokenizer, "no-tokenizer", false, "export a folder without tokenizer.json (the program then takes token ids only)")
	return cmd
}

// calibrationMaxLen caps calibration sequences (tokens); longer paragraphs are cut.
const calibrationMaxLen = 512

// calibrationMinTokens is the shortest calibration text accepted: statistics of fewer tokens
// single out channels by chance and make the program worse than no calibration (stories260K:
// 34 tokens raised the KL on other text from 0.053 to 0.073).
const calibrationMinTokens = 1000

// calibrationStats returns the statistics for export.Options.Calibration: nil for "none", the
// float model run on the calibration text for FILE or "default", on text the model writes for
// "self" (calib.DefaultSelf); and for "" (the flag unset), "self" when quantizing a model
// whose hidden size is at most calib.DefaultMaxGram, where its Gram matrices pay (stories260K
// q4: KL 0.064 to 0.048 on held-out text), else "none" (wider inputs get importances alone,
// which did not help there, and writing the text costs a float32 run of the model).
// The statistics are measured on the float model rotated as the program will be (rotate).
func calibrationStats(cmd *cobra.Command, ckpt *hf.Checkpoint, source, weights, embedWeights, rotate string) (map[string]kernels.Calibration, error) {
	quantized := strings.HasPrefix(weights, "q") || strings.HasPrefix(embedWeights, "q")
	if source == "" {
		source = "none"
		if h := hiddenSize(ckpt); quantized && h > 0 && h <= calib.DefaultMaxGram {
			source = "self"
		}
	}
	if source == "none" {
		return nil, nil
	}
	if !quantized {
		return nil, usagef("--calibrate chooses quantization scales: it needs --weights q8 or q4 (or --embed-weights)")
	}
	opts := calib.Options{Threads: defaultThreads(), MaxGram: calib.DefaultMaxGram, Rotate: rotate}
	if source == "self" {
		st, seqs, err := calib.RunSelf(cmd.Context(), ckpt, calib.DefaultSelf, opts)
		if err != nil {
			return nil, fmt.Errorf("--calibrate self: %w", err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "calibrated on %d tokens (%d sequences the model wrote; --calibrate none skips this)\n", st.Tokens, len(seqs))
		return st.Matrices, nil
	}
	text := calib.DefaultText()
	if source != "default" {
		b, err := os.ReadFile(source)
		if err != nil {
			return nil, fmt.Errorf("--calibrate: %w", err)
		}
		text = string(b)
	}
	if ckpt.TokenizerJSON == nil {
		return nil, usagef("--calibrate needs the model's tokenizer.json to encode the text")
	}
	tok, err := tokenizer.Load(ckpt.TokenizerJSON, ckpt.TokenizerConfigJSON)
	if err != nil {
		return nil, err
	}
	seqs, err := calib.Sequences(tok, text, calibrationMaxLen)
	if err != nil {
		return nil, fmt.Errorf("--calibrate %s: %w", source, err)
	}
	if n := tokenCount(seqs); n < calibrationMinTokens {
		return nil, usagef("--calibrate %s: %d tokens; calibration needs at least %d (several paragraphs of text like what the model will see), or use --calibrate default", source, n, calibrationMinTokens)
	}
	st, err := calib.Run(cmd.Context(), ckpt, seqs, opts)
	if err != nil {
		return nil, fmt.Errorf("--calibrate %s: %w", source, err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "calibrated on %d tokens (%d sequences of %s)\n", st.Tokens, len(seqs), source)
	return st.Matrices, nil
}

// hiddenSize is the most common width (columns) of the checkpoint's matrices: the model's
// hidden size, read by the q/k/v and gate/up projections of every layer (0 without matrices).
func hiddenSize(ckpt *hf.Checkpoint) int {
	count := map[int]int{}
	for _, name := range ckpt.Names() {
		if t, ok := ckpt.Tensor(name); ok && len(t.Shape) == 2 {
			count[t.Shape[1]]++
		}
	}
	width := 0
	for w, n := range count {
		if n > count[width] || n == count[width] && w < width {
			width = w
		}
	}
	return width
}

func tokenCount(seqs [][]int) int {
	n := 0
	for _, s := range seqs {
		n += len(s)
	}
	return n
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

// checkExportFlags rejects weight types export does not know, as usage errors.
func checkExportFlags(weights, embedWeights string) error {
	for _, f := range []struct{ flag, value string }{{"--weights", weights}, {"--embed-weights", embedWeights}} {
		if f.value == "" {
			continue
		}
		if _, err := kernels.ParseWeightType(f.value); err != nil {
			return usagef("%s %q: want f32, f16, bf16, q8 or q4", f.flag, f.value)
		}
	}
	return nil
}

// openCheckpoint opens the checkpoint export reads: a folder, ORG/NAME[@REVISION], or the
// embedded stories260K folder for "". name is what the program records as its model.
func openCheckpoint(cmd *cobra.Command, arg string, quiet bool) (ckpt *hf.Checkpoint, name string, err error) {
	if arg == "" {
		ckpt, err := hf.Open(models.Stories260K())
		return ckpt, "stories260K", err
	}
	dir, err := resolveModelDir(cmd, arg, quiet)
	if err != nil {
		return nil, "", err
	}
	if err := checkFolder(dir); err != nil {
		return nil, "", err
	}
	ckpt, err = hf.Open(mmap.DirFS(dir))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", arg, err)
	}
	return ckpt, modelName(arg), nil
}

// checkOutput says what is wrong with a program file path before any work is done: a
// folder that does not exist, or a path that is a folder.
func checkOutput(out string) error {
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return usagef("-o %s is a folder: give the program file's path, e.g. %s", out, filepath.Join(out, "model.hfs"))
	}
	dir := filepath.Dir(out)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot write %s: the folder %s does not exist (create it first: mkdir -p %s)", out, dir, dir)
	case err != nil:
		return fmt.Errorf("cannot write %s: %w", out, unwrapPath(err))
	case !st.IsDir():
		return fmt.Errorf("cannot write %s: %s is not a folder", out, dir)
	}
	return nil
}

// unwrapPath drops the *fs.PathError around err, whose path may be a temporary file the
// user never named.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// trainedContext is the number of positions a model was trained on (its
// max_position_embeddings, with the family's defaults), 0 when the config does not say.
func trainedContext(cfgRaw []byte) int {
	var head struct {
		Architectures []string `json:"architectures"`
	}
	if json.Unmarshal(cfgRaw, &head) != nil || len(head.Architectures) == 0 {
		return 0
	}
	a, err := arch.Lookup(head.Architectures[0])
	if err != nil {
		return 0
	}
	_, maxPos, err := a.Spec(cfgRaw)
	if err != nil {
		return 0
	}
	return maxPos
}

// checkFolder says what path is when it is not a Hugging Face folder.
func checkFolder(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return nil
	}
	magic := make([]byte, 8)
	if f, err := os.Open(path); err == nil {
		io.ReadFull(f, magic)
		f.Close()
	}
	switch {
	case string(magic[:4]) == "GGUF":
		return fmt.Errorf("%s: %w", path, errGGUF)
	case string(magic) == program.Magic:
		return fmt.Errorf("%s is already an hfstatic program: run it (hfstatic generate %s) or inspect it; export takes a Hugging Face folder", path, path)
	}
	return fmt.Errorf("%s is a file; export takes a Hugging Face model folder (config.json, *.safetensors, tokenizer.json)", path)
}

// modelName is what a program records as its model: a folder's name, or the ORG/NAME it was
// given.
func modelName(arg string) string {
	if _, err := os.Stat(arg); err == nil {
		if abs, err := filepath.Abs(arg); err == nil {
			return filepath.Base(abs)
		}
	}
	return arg
}

// ignoredGroups summarises tensor names by their first component, in order of first
// appearance: "vision_tower.* (439), multi_modal_projector.* (2)".
func ignoredGroups(names []string) string {
	var order []string
	count := map[string]int{}
	for _, n := range names {
		g, _, _ := strings.Cut(n, ".")
		if count[g] == 0 {
			order = append(order, g)
		}
		count[g]++
	}
	parts := make([]string, len(order))
	for i, g := range order {
		parts[i] = fmt.Sprintf("%s.* (%d)", g, count[g])
	}
	return strings.Join(parts, ", ")
}
