// Package kernelstest lets a package's tests run on a forced kernel route:
// its Main, called from TestMain, applies HFSTATIC_KERNELS as the hfstatic
// command does, so that `HFSTATIC_KERNELS=avx2 go test ./engine` runs the
// engine's tests on the AVX2 kernels. It is for tests only.
package kernelstest

import (
	"fmt"
	"os"
	"testing"

	"github.com/hfstatic/hfstatic/internal/kernels"
)

// Main switches to the route HFSTATIC_KERNELS names (if set), then runs the
// tests. A route this CPU cannot run fails the whole run: a forced route that
// silently fell back would test the wrong kernels. go test's result cache
// does not see the variable (it is read before the test log starts), so run
// with -count=1: else a cached result of another route is reported.
func Main(m *testing.M) {
	if r := os.Getenv("HFSTATIC_KERNELS"); r != "" {
		if err := kernels.UseRoute(r); err != nil {
			fmt.Fprintln(os.Stderr, "HFSTATIC_KERNELS:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
