// Command hfstatic exports Hugging Face causal language models into fixed-shape
// static-cache programs and runs them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

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
	root := newRoot()
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hfstatic:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
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

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "hfstatic",
		Short: "Export Hugging Face causal LMs to fixed-shape static-cache programs and run them",
		Long: `hfstatic exports a Hugging Face model folder (config.json, *.safetensors, tokenizer.json)
into one program file with fixed-shape decode and prefill methods (the hf_static v1 contract),
and runs such programs on the CPU.

Commands that take a PROGRAM use the embedded default model (stories260K) when it is omitted,
and export a Hugging Face folder given in its place in memory first (hfstatic export saves the
program, which then opens at once).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			notes = cmd.ErrOrStderr()
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringVar(&loadMode, "load", "mmap",
		"how to bring a program into memory: mmap (zero-copy, in 2 MiB pages where the kernel can: a large file cached in small pages is read again once), mmap-plain (zero-copy, the page cache as it is) or copy (read into huge-page memory)")
	root.PersistentFlags().StringVar(&executorName, "executor", "go",
		"what runs the program: go (hfstatic's kernels) or ort (ONNX Runtime over the program's ONNX graphs: export with --delegate onnx)")
	root.PersistentFlags().StringVar(&ortLib, "ort-lib", os.Getenv("HFSTATIC_ORT_LIB"),
		"path of ONNX Runtime "+ort.Version+"'s libonnxruntime.so for --executor ort (default $HFSTATIC_ORT_LIB)")
	root.PersistentFlags().StringVar(&ortProvider, "ort-provider", string(ort.ProviderCPU),
		"ONNX Runtime execution provider for --executor ort: cpu (tested), or cuda, coreml, directml, qnn, xnnpack, openvino, webgpu (untested; the library must have it built in)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{suggestFlag(c, err)} })
	root.AddCommand(newExportCmd(), newInspectCmd(), newGenerateCmd(), newLogitsCmd(),
		newTokenizeCmd(), newDetokenizeCmd(), newChatCmd(), newAccuracyCmd(), newVersionCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newServeCmd())
	root.AddCommand(newPullCmd(), newRunCmd(), newListCmd(), newRmCmd())
	return root
}
