package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/hub"
)

func newRunCmd() *cobra.Command {
	var (
		ef     exportFlags
		cf     chatFlags
		prompt string
		raw    bool
	)
	cmd := &cobra.Command{
		Use:   "run ORG/NAME[@REVISION] [--weights q8] [--prompt TEXT] [--system TEXT]",
		Short: "Download, export once and chat with a Hugging Face model (or a local folder)",
		Long: `Run resolves a model (a local folder, the Hugging Face cache, else the Hub), exports it once
into the program cache (HFSTATIC_HOME, default hfstatic/ under the user cache folder; keyed by the
checkpoint's fingerprint and the export options, so the next run starts at once), then starts a chat,
or answers --prompt: as one chat turn through the chat template (with --system) when the model has
one, as plain continuation of the prompt's text with --raw or without a template.

Defaults: weights q8; the model's context capped at 4096 and halved until one session's caches fit in
a quarter of the available memory; prefill 64. Each choice is printed.

` + chatHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ef.weights == "" {
				ef.weights = defaultNameWeights
			}
			opts, err := cf.options()
			if err != nil {
				return err
			}
			if raw && (cmd.Flags().Changed("system") || cmd.Flags().Changed("template") || cmd.Flags().Changed("template-file")) {
				return usagef("--raw continues the prompt's text as it is; --system, --template and --template-file go through a chat template: pass one or the other")
			}
			if raw && !cmd.Flags().Changed("prompt") {
				return usagef("--raw applies to --prompt")
			}
			prog, err := runProgram(cmd, args[0], ef)
			if err != nil {
				return err
			}
			m, err := openProgram(cmd, prog, cf.threads, nil)
			if err != nil {
				return err
			}
			defer m.Close()
			m.name = args[0]
			if !cmd.Flags().Changed("prompt") {
				return chatWith(cmd, m, cf, opts)
			}
			return answer(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), m, prompt, raw, cf, opts)
		},
	}
	f := cmd.Flags()
	ef.register(f)
	f.Lookup("weights").DefValue = defaultNameWeights
	f.StringVar(&prompt, "prompt", "", "answer this prompt (through the chat template when the model has one) instead of starting a chat")
	f.BoolVar(&raw, "raw", false, "with --prompt: continue the prompt's text as it is, without the chat template")
	f.BoolVarP(&ef.quiet, "quiet", "q", false, "no progress output")
	cf.register(f, 256)
	return cmd
}

// runProgram returns the program run opens for arg: a model name's, or a local folder's,
// from the program cache (exported once).
func runProgram(cmd *cobra.Command, arg string, ef exportFlags) (string, error) {
	if st, err := os.Stat(arg); err == nil && st.IsDir() {
		ref := hub.Ref{Repo: "local/" + filepath.Base(filepath.Clean(arg)), Revision: "main"}
		return cachedExport(cmd, ref, arg, ef)
	}
	if !hub.LooksLikeRef(arg) {
		return "", usageError{fmt.Errorf("%s: no such folder, and not a Hugging Face model name (ORG/NAME[@REVISION])", arg)}
	}
	return nameProgram(cmd, arg, ef)
}

// answer streams the reply to one prompt: a chat turn through the template (plain
// continuation of the system message and the prompt when there is none), or with raw a
// continuation of the prompt's text alone.
func answer(ctx context.Context, out, errw io.Writer, m *loaded, prompt string, raw bool, cf chatFlags, opts hfstatic.ChatOptions) error {
	gen := cf.generateOptions(0, func(s string) error { _, err := io.WriteString(out, s); return err })
	var res hfstatic.Result
	var err error
	if raw {
		res, err = m.public.Generate(ctx, prompt, gen)
	} else {
		c, cerr := m.public.NewChat(opts)
		if cerr != nil {
			return cerr
		}
		defer c.Close()
		if !c.Templated() {
			fmt.Fprintln(errw, "(this program has no chat template: the prompt is continued as plain text; --template-file FILE gives it one)")
		}
		res, err = c.Send(ctx, prompt, gen)
	}
	if res.Text != "" {
		fmt.Fprintln(out)
	}
	if err != nil {
		return err
	}
	if res.Reason == generate.StopContextFull {
		fmt.Fprintf(errw, "stopped after %d new tokens: the program's context of %d positions is full\n", len(res.Tokens), m.Runner.Metadata().MaxContext)
	}
	return nil
}
