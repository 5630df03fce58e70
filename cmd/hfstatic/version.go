package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hfstatic/hfstatic/internal/kernels"
)

// commit may be set at build time (-ldflags "-X main.commit=$(git rev-parse HEAD)") where the
// Go toolchain records no VCS information (-buildvcs=false, go run, a tree without .git).
// releaseVersion is the release's version, set the same way by the release build
// (.goreleaser.yaml: -X main.releaseVersion=1.2.3); it replaces the module version.
var commit, releaseVersion string

// version describes this binary: module version, commit, Go version and the kernels this
// CPU runs.
func version() string {
	mod, rev := "(unknown)", commit
	if rev == "" {
		rev = "unknown (built without VCS information)"
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		mod = bi.Main.Version
		if releaseVersion != "" {
			mod = releaseVersion
		}
		var vcs, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcs = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if vcs != "" {
			rev = vcs
			if modified == "true" {
				rev += " (modified)"
			}
		}
	}
	return fmt.Sprintf("hfstatic %s\ncommit %s\n%s %s/%s, %d CPUs, kernels %s (this CPU runs: %s; HFSTATIC_KERNELS chooses)",
		mod, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), kernels.Route(), strings.Join(kernels.Routes(), ", "))
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version and the CPU kernels in use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), version())
			return nil
		},
	}
}

// suggestFlag adds "did you mean --prompt?" to an unknown-flag error when a flag of cmd is
// close to the one given.
func suggestFlag(cmd *cobra.Command, err error) error {
	var given string
	if _, e := fmt.Sscanf(err.Error(), "unknown flag: --%s", &given); e != nil || given == "" {
		return err
	}
	best, bestD := "", 3 // suggest within an edit distance of 2
	visit := func(name string) {
		if d := editDistance(given, name); d < bestD {
			best, bestD = name, d
		}
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) { visit(f.Name) })
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { visit(f.Name) })
	if best == "" {
		return err
	}
	return fmt.Errorf("%w (did you mean --%s?)", err, best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
