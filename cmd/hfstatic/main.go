// Command hfstatic exports Hugging Face causal language models into fixed-shape
// static-cache programs and runs them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/internal/ort"
)

// usageError marks errors in how the command was called (exit code 2).
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func main() {
	// Ctrl-C and SIGTERM cancel the command, unless it takes Ctrl-C itself (chat).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			if s == os.Interrupt && interrupt() {
				continue
			}
			cancel()
			return
		}
	}()
	go exitAfterSignal(ctx, func() { signal.Stop(sigs) })
	if err := useKernels(os.Getenv("HFSTATIC_KERNELS")); err != nil {
		fmt.Fprintln(os.Stderr, "hfstatic:", err)
		os.Exit(2)
	}
	err := execute(ctx, newRoot(), os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "hfstatic:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// useKernels forces the kernel route HFSTATIC_KERNELS names (generic, avx2, avx512, ...;
// "" keeps the best this CPU runs) before anything runs. A route this CPU cannot run is a
// usage error: nothing runs on a route other than the one asked for.
func useKernels(route string) error {
	if route == "" {
		return nil
	}
	if err := kernels.UseRoute(route); err != nil {
		return usagef("HFSTATIC_KERNELS=%s: %w (this CPU runs: %s)", route, err, strings.Join(kernels.Routes(), ", "))
	}
	return nil
}

// stopBudget is how long a command may take to return after SIGINT or
// SIGTERM cancelled its context; serve raises it by its --grace.
var stopBudget atomic.Int64

func init() { stopBudget.Store(int64(5 * time.Second)) }

// exitAfterSignal makes every command end promptly on SIGINT and SIGTERM:
// once the first signal has cancelled ctx, a second one kills the process at
// once, and a command still running after stopBudget is ended with exit
// code 1.
func exitAfterSignal(ctx context.Context, stop func()) {
	<-ctx.Done()
	stop() // the default action again: a second signal kills
	time.Sleep(time.Duration(stopBudget.Load()))
	fmt.Fprintf(os.Stderr, "hfstatic: still running %v after the signal; exiting\n", time.Duration(stopBudget.Load()))
	os.Exit(1)
}

// execute runs root with args as main does. An unknown command, a wrong number of
// arguments and a bad flag are usage errors (exit code 2).
func execute(ctx context.Context, root *cobra.Command, args []string) error {
	root.SetArgs(args)
	usageArgs(root)
	if _, _, err := root.Find(args); err != nil {
		// cobra's "unknown command" (Find fails for nothing else), said on one line
		var name string
		if _, e := fmt.Sscanf(err.Error(), "unknown command %q", &name); e != nil {
			return usageError{err}
		}
		hint := "hfstatic --help lists the commands"
		if s := root.SuggestionsFor(name); len(s) > 0 {
			hint = "did you mean " + strings.Join(s, " or ") + "? " + hint
		}
		return usagef("unknown command %q (%s)", name, hint)
	}
	return root.ExecuteContext(ctx)
}

// usageArgs makes cmd's and its subcommands' argument-count errors usage errors.
func usageArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return usageError{fmt.Errorf("%s: %w (usage: %s)", c.CommandPath(), err, c.UseLine())}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "hfstatic",
		Short: "Export Hugging Face causal LMs to fixed-shape static-cache programs and run them",
		Long: `hfstatic exports a Hugging Face model folder (config.json, *.safetensors, tokenizer.json)
into one program file with fixed-shape decode and prefill methods (the hf_static v1 contract),
and runs such programs on the CPU.

Commands that take a PROGRAM use the embedded default model (stories260K) when it is omitted;
given a model name (ORG/NAME[@REVISION]) they use its program in the program cache, exported once
as run does (--weights, --context and --prefill choose the export); given a Hugging Face folder,
they export it in memory first (hfstatic export saves a program, which then opens at once).
Usage errors exit with 2, other failures with 1.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			notes = cmd.ErrOrStderr()
			return checkRootFlags()
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringVar(&loadMode, "load", "mmap",
		"how to bring a program into memory: mmap (zero-copy, in 2 MiB pages where the kernel can: a large file cached in small pages is read again once), mmap-plain (zero-copy, the page cache as it is) or copy (read into huge-page memory)")
	root.PersistentFlags().StringVar(&executorName, "executor", "go",
		"what runs the program: go (hfstatic's kernels) or ort (ONNX Runtime over the program's ONNX graphs: export with --delegate onnx; needs a build with the ort tag)")
	root.PersistentFlags().StringVar(&ortLib, "ort-lib", os.Getenv("HFSTATIC_ORT_LIB"),
		"path of ONNX Runtime "+ort.Version+"'s library (libonnxruntime.so.1, libonnxruntime.1.dylib or onnxruntime.dll) for --executor ort, in a build with the ort tag (default $HFSTATIC_ORT_LIB)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{suggestFlag(c, err)} })
	root.AddCommand(newExportCmd(), newInspectCmd(), newGenerateCmd(), newLogitsCmd(),
		newTokenizeCmd(), newDetokenizeCmd(), newChatCmd(), newAccuracyCmd(), newVersionCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newServeCmd())
	root.AddCommand(newPullCmd(), newRunCmd(), newListCmd(), newRmCmd())
	return root
}
