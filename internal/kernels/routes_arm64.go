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
//
// neon+i8mm is opt-in (HFSTATIC_KERNELS=neon+i8mm) until a rare hang is
// understood: under qemu-aarch64, about one run in ten of the engine's
// batched-sessions test on this route ends with the pool's caller and worker
// both parked (Go reports "all goroutines are asleep"), in steps that do not
// run the SMMLA kernels themselves; neon+dotprod and generic never did in the
// same number of runs. Its kernels pass their tests, bit for bit.
var routeSpecs = []routeSpec{
	{name: "neon+i8mm", needs: append(neonNeeds(), feature{"i8mm", cpu.ARM64.HasI8MM}), use: func() { setRoute(true, true) }, optIn: true},
	{name: "neon+dotprod", needs: neonNeeds(), use: func() { setRoute(true, false) }},
	{name: "generic", use: func() { setRoute(false, false) }},
}

func neonNeeds() []feature {
	return []feature{{"asimd", cpu.ARM64.HasASIMD}, {"dotprod", cpu.ARM64.HasASIMDDP}}
}

func setRoute(neon, i8mm bool) { useNEON, useI8MM = neon, i8mm }
