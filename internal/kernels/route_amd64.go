//go:build amd64 && !purego

package kernels

// Route names the kernels this CPU runs, for version reports: "avx512+vnni", "avx512",
// "avx2" (with FMA and F16C) or "generic" (pure Go).
func Route() string {
	switch {
	case useVNNI:
		return "avx512+vnni"
	case useAVX512:
		return "avx512"
	case useAVX2:
		return "avx2"
	}
	return "generic"
}
