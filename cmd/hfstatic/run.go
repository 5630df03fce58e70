package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/hub"
)

func newRunCmd() *cobra.Command {
	var (
		o      runOptions
		prompt string
		n      int
		quiet  bool
	)
	cmd := &cobra.Command{
		Use:   "run ORG/NAME[@REVISION] [--weights q8] [--prompt TEXT]",
		Short: "Download, export once and chat with a Hugging Face model (or a local folder)",
		Long: `Run resolves a model (a local folder, the Hugging Face cache, else the Hub), exports it once
into the program cache (HFSTATIC_HOME, default hfstatic/ under the user cache folder; keyed by the
checkpoint's fingerprint and the export options, so the next run starts at once), then starts a chat,
or generates from --prompt.

Defaults: weights q8; the model's context capped at 4096 and halved until one session's caches fit in
a quarter of the available memory; prefill 64. Each choice is printed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch o.weights {
			case "f32", "f16", "bf16", "q8", "q4":
			default:
				return usagef("--weights %q: want f32, f16, bf16, q8 or q4", o.weights)
			}
			if o.context < 0 || o.prefill < 0 {
				return usagef("--context and --prefill must be ≥ 0")
			}
			ref, err := hub.ParseRef(args[0])
			local := false
			if st, serr := os.Stat(args[0]); serr == nil && st.IsDir() {
				ref, err, local = hub.Ref{Repo: "local/" + filepath.Base(filepath.Clean(args[0])), Revision: "main"}, nil, true
			}
			if err != nil {
				return usageError{fmt.Errorf("%s: no such folder, and not a Hugging Face model name (ORG/NAME[@REVISION])", args[0])}
			}
			dir := args[0]
			if !local {
				if dir, err = resolveModelDir(cmd, args[0], quiet); err != nil {
					return err
				}
			}
			if o.context == 0 {
				raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
				if err != nil {
					return fmt.Errorf("%s: %w", ref, err)
				}
				var cache int64
				o.context, cache = chooseContext(raw, memAvailable())
				if !quiet {
					fmt.Fprintf(cmd.ErrOrStderr(), "context %d (K/V caches %.1f MB per session); weights %s; prefill %d\n",
						o.context, float64(cache)/1e6, o.weights, o.prefill)
				}
			}
			prog, err := ensureProgram(cmd, ref, dir, o, quiet)
			if err != nil {
				return err
			}
			var sub *cobra.Command
			var subArgs []string
			if prompt != "" {
				sub = newGenerateCmd()
				subArgs = []string{prog, "--prompt", prompt, "-n", strconv.Itoa(n)}
			} else {
				sub = newChatCmd()
				subArgs = []string{prog, "-n", strconv.Itoa(n)}
			}
			sub.SetContext(cmd.Context())
			sub.SetIn(cmd.InOrStdin())
			sub.SetOut(cmd.OutOrStdout())
			sub.SetErr(cmd.ErrOrStderr())
			sub.SetArgs(subArgs)
			return sub.Execute()
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.weights, "weights", "q8", "weight type of the program: f32, f16, bf16, q8, q4")
	f.IntVar(&o.context, "context", 0, "context capacity (default: chosen for this machine's memory)")
	f.IntVar(&o.prefill, "prefill", 64, "prefill step of the program")
	f.StringVar(&prompt, "prompt", "", "generate from this prompt instead of starting a chat")
	f.IntVarP(&n, "max-tokens", "n", 256, "most new tokens per reply")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	return cmd
}
