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
// silently fell back would test the wrong kernels. The package's tests should
// include CheckRoute, which reads the variable again inside a test: go test's
// result cache keys on the variables tests read, not on those TestMain reads
// before the test log starts (without it, `HFSTATIC_KERNELS=avx2 go test`
// after a plain run reported the plain run's cached result).
func Main(m *testing.M) {
	if r := os.Getenv("HFSTATIC_KERNELS"); r != "" {
		if err := kernels.UseRoute(r); err != nil {
			fmt.Fprintln(os.Stderr, "HFSTATIC_KERNELS:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// CheckRoute fails t unless the kernels run on the route HFSTATIC_KERNELS
// names (when set). Reading the variable here, in a test, makes it part of
// go test's cache key for the package.
func CheckRoute(t *testing.T) {
	t.Helper()
	if r := os.Getenv("HFSTATIC_KERNELS"); r != "" && kernels.Route() != r {
		t.Fatalf("HFSTATIC_KERNELS=%s, but the kernels run on %s", r, kernels.Route())
	}
}
