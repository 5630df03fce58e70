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
	best := ""
	for _, r := range routeSpecs {
		if len(r.missing()) == 0 && !r.optIn {
			best = r.name
			break
		}
	}
	if err := UseRoute(""); err != nil || Route() != best {
		t.Errorf(`UseRoute("") = %v, Route() = %q; want the best route that is not opt-in, %q`, err, Route(), best)
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
	routeSpecs = []routeSpec{{"fancy", []feature{{"a", true}, {"b", false}}, func() { used = true }, false}, {"generic", nil, func() {}, false}}
	err := UseRoute("fancy")
	var re *RouteError
	if !errors.As(err, &re) || !slices.Equal(re.Missing, []string{"b"}) || used {
		t.Fatalf("UseRoute(fancy) = %v (switched: %v), want a *RouteError missing [b] and no switch", err, used)
	}
	if got := Routes(); !slices.Equal(got, []string{"generic"}) {
		t.Errorf("Routes() = %v, want [generic]", got)
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

// An opt-in route is listed and can be forced, but the start-up choice
// passes over it.
func TestOptInRouteIsNotChosenByItself(t *testing.T) {
	saved, savedCurrent := routeSpecs, current
	defer func() { routeSpecs, current = saved, savedCurrent; UseRoute(savedCurrent) }()
	var used string
	routeSpecs = []routeSpec{
		{"new", nil, func() { used = "new" }, true},
		{"old", nil, func() { used = "old" }, false},
		{"generic", nil, func() { used = "generic" }, false},
	}
	if got := bestRoute(); got != "old" || used != "old" {
		t.Fatalf("bestRoute() = %q (switched to %q), want old", got, used)
	}
	if got := Routes(); !slices.Equal(got, []string{"new", "old", "generic"}) {
		t.Errorf("Routes() = %v, want [new old generic]", got)
	}
	if err := UseRoute("new"); err != nil || used != "new" || Route() != "new" {
		t.Errorf("UseRoute(new) = %v, switched to %q, Route() %q", err, used, Route())
	}
}
