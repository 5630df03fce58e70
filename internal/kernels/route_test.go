package kernels

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
)

func TestRoutesEndWithGenericAndCanEachBeUsed(t *testing.T) {
	defer func(r string) {
		if err := UseRoute(r); err != nil {
			t.Fatal(err)
		}
	}(Route())
	rs := Routes()
	if len(rs) == 0 || rs[len(rs)-1] != "generic" {
		t.Fatalf("Routes() = %v, want a list ending in generic", rs)
	}
	for _, r := range rs {
		if err := UseRoute(r); err != nil {
			t.Fatalf("UseRoute(%q): %v", r, err)
		}
		if got := Route(); got != r {
			t.Errorf("after UseRoute(%q), Route() = %q", r, got)
		}
	}
	if err := UseRoute(""); err != nil || Route() != rs[0] {
		t.Errorf(`UseRoute("") = %v, Route() = %q; want the best route %q`, err, Route(), rs[0])
	}
}

func TestUnknownRouteIsATypedErrorAndChangesNothing(t *testing.T) {
	before := Route()
	err := UseRoute("sse9000")
	var re *RouteError
	if !errors.As(err, &re) || !errors.Is(err, ErrRoute) || re.Route != "sse9000" || !slices.Contains(re.Known, "generic") {
		t.Fatalf("UseRoute(unknown) = %v, want a *RouteError listing the known routes", err)
	}
	if Route() != before {
		t.Errorf("Route() = %q after a failed UseRoute, want %q", Route(), before)
	}
}

func TestRouteMissingAFeatureNamesIt(t *testing.T) {
	saved := routeSpecs
	defer func() { routeSpecs = saved }()
	used := false
	routeSpecs = []routeSpec{{"fancy", []feature{{"a", true}, {"b", false}}, func() { used = true }}, {"generic", nil, func() {}}}
	err := UseRoute("fancy")
	var re *RouteError
	if !errors.As(err, &re) || !slices.Equal(re.Missing, []string{"b"}) || used {
		t.Fatalf("UseRoute(fancy) = %v (switched: %v), want a *RouteError missing [b] and no switch", err, used)
	}
	if got := Routes(); !slices.Equal(got, []string{"generic"}) {
		t.Errorf("Routes() = %v, want [generic]", got)
	}
}

// TestForcedRoute reads HFSTATIC_KERNELS inside a test, which makes it part
// of go test's cache key for the package (TestMain's read is not), and checks
// that the tests run on it.
func TestForcedRoute(t *testing.T) {
	if r := os.Getenv("HFSTATIC_KERNELS"); r != "" && Route() != r {
		t.Fatalf("HFSTATIC_KERNELS=%s, but the kernels run on %s", r, Route())
	}
}

// TestMain runs the package's tests on the route HFSTATIC_KERNELS forces, if
// any (the hfstatic command honours it the same way), so each route's kernels
// can be tested in turn.
func TestMain(m *testing.M) {
	if r := os.Getenv("HFSTATIC_KERNELS"); r != "" {
		if err := UseRoute(r); err != nil {
			fmt.Fprintln(os.Stderr, "HFSTATIC_KERNELS:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
