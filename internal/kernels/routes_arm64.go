//go:build arm64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// The routes of arm64, best first. neon+dotprod needs Advanced SIMD and the
// ARMv8.2 dot-product instructions (SDOT; Apple M1 and later, Graviton 2
// and later, Ampere Altra); CPUs without them run pure Go. neon+i8mm adds
// the int8 matrix multiply (SMMLA; Graviton 3 and later, Apple M2 and
// later) for the q8/q4 prefill products. golang.org/x/sys/cpu
// reads the features from the kernel on Linux (HWCAP) and from sysctl
// (hw.optional.arm.FEAT_*) on macOS, without cgo.
var routeSpecs = []routeSpec{
	{"neon+i8mm", append(neonNeeds(), feature{"i8mm", cpu.ARM64.HasI8MM}), func() { setRoute(true, true) }},
	{"neon+dotprod", neonNeeds(), func() { setRoute(true, false) }},
	{"generic", nil, func() { setRoute(false, false) }},
}

func neonNeeds() []feature {
	return []feature{{"asimd", cpu.ARM64.HasASIMD}, {"dotprod", cpu.ARM64.HasASIMDDP}}
}

func setRoute(neon, i8mm bool) { useNEON, useI8MM = neon, i8mm }
