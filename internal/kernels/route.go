package kernels

import (
	"errors"
	"fmt"
	"strings"
)

// A route is one set of kernels for one instruction-set level: "avx512+vnni",
// "avx512", "avx2+vnni", "avx2" on amd64, "generic" (pure Go) everywhere. The package picks
// the best route this CPU supports when it starts; UseRoute forces another
// (tests and benchmarks compare routes, and `HFSTATIC_KERNELS` lets users do
// the same). The names are the same in `hfstatic version`, HFSTATIC_KERNELS,
// benchmarks and docs.

// ErrRoute reports a route that is unknown or that this CPU cannot run; the
// *RouteError that wraps it says which and why.
var ErrRoute = errors.New("kernels: route unavailable")

// RouteError says why a route cannot be used.
type RouteError struct {
	Route string
	// Missing are the CPU features the route needs that this CPU lacks (none
	// when the route is unknown on this architecture).
	Missing []string
	// Known are this architecture's routes, for an unknown name.
	Known []string
}

func (e *RouteError) Error() string {
	if len(e.Missing) > 0 {
		return fmt.Sprintf("kernels route %q needs %s, which this CPU lacks", e.Route, strings.Join(e.Missing, ", "))
	}
	return fmt.Sprintf("kernels route %q is not known on this architecture: want one of %s", e.Route, strings.Join(e.Known, ", "))
}

func (e *RouteError) Unwrap() error { return ErrRoute }

// routeSpec is one route of this architecture: the CPU features it needs and
// how to switch the package's kernels to it. routeSpecs (one list per
// architecture, best first, "generic" last) holds them.
type routeSpec struct {
	name  string
	needs []feature
	use   func()
}

// feature is a CPU feature by its usual lower-case name, and whether this CPU has it.
type feature struct {
	name string
	has  bool
}

func (r routeSpec) missing() []string {
	var m []string
	for _, f := range r.needs {
		if !f.has {
			m = append(m, f.name)
		}
	}
	return m
}

// current is the route in use.
var current = bestRoute()

// bestRoute switches to the first route this CPU supports and returns its name.
func bestRoute() string {
	for _, r := range routeSpecs {
		if len(r.missing()) == 0 {
			r.use()
			return r.name
		}
	}
	return "generic"
}

// Route names the kernels in use ("avx512+vnni", "avx2", "generic", ...).
func Route() string { return current }

// Routes lists the routes this CPU can run, best first; "generic" is always
// last.
func Routes() []string {
	var names []string
	for _, r := range routeSpecs {
		if len(r.missing()) == 0 {
			names = append(names, r.name)
		}
	}
	return names
}

// UseRoute switches every kernel to the named route ("" is the best this CPU
// supports). A route this CPU cannot run, or that this architecture does not
// have, is a *RouteError and changes nothing. It must not be called while
// kernels are running: call it at start-up, before any Pool works.
func UseRoute(name string) error {
	if name == "" {
		current = bestRoute()
		return nil
	}
	var known []string
	for _, r := range routeSpecs {
		known = append(known, r.name)
		if r.name != name {
			continue
		}
		if m := r.missing(); len(m) > 0 {
			return &RouteError{Route: name, Missing: m}
		}
		r.use()
		current = name
		return nil
	}
	return &RouteError{Route: name, Known: known}
}
