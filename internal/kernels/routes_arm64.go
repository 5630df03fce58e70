//go:build arm64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// The routes of arm64, best first. neon+dotprod needs Advanced SIMD and the
// ARMv8.2 dot-product instructions (SDOT; Apple M1 and later, Graviton 2
// and later, Ampere Altra); CPUs without them run pure Go. golang.org/x/sys/cpu
// reads the features from the kernel on Linux (HWCAP) and from sysctl
// (hw.optional.arm.FEAT_*) on macOS, without cgo.
var routeSpecs = []routeSpec{
	{"neon+dotprod", neonNeeds(), func() { setRoute(true) }},
	{"generic", nil, func() { setRoute(false) }},
}

func neonNeeds() []feature {
	return []feature{{"asimd", cpu.ARM64.HasASIMD}, {"dotprod", cpu.ARM64.HasASIMDDP}}
}

func setRoute(neon bool) { useNEON = neon }
