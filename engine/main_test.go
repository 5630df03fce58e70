package engine

import (
	"testing"

	"github.com/hfstatic/hfstatic/internal/kernels/kernelstest"
)

// TestMain runs the tests on the kernel route HFSTATIC_KERNELS forces, if any.
func TestMain(m *testing.M) { kernelstest.Main(m) }

// TestKernelRoute: the tests run on the forced route, and go test's cache
// tells the routes apart.
func TestKernelRoute(t *testing.T) { kernelstest.CheckRoute(t) }
