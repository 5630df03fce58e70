//go:build amd64 && !purego

package kernels

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// withPaths runs the equivalence tests with the given assembly paths
// switched on or off, restoring the CPU-detected choice afterwards.
func withPaths(t *testing.T, avx512, avx2, vnni bool) {
	saved := [3]bool{useAVX512, useAVX2, useVNNI}
	useAVX512, useAVX2, useVNNI = avx512, avx2, vnni
	defer func() { useAVX512, useAVX2, useVNNI = saved[0], saved[1], saved[2] }()
	t.Run("rows", TestElementwiseKernelsMatchReference)
	t.Run("dot", TestDotAndAxpyMatchReference)
	t.Run("f16", TestF16SliceConversionsMatchScalar)
	t.Run("rmsnorm", TestRMSNormMatchesReference)
	t.Run("softmax", TestSoftmaxMatchesReference)
	t.Run("matmul", TestMatMulMatchesReference)
	t.Run("dequant", TestQuantizeDequantizeErrorWithinFormatBound)
	t.Run("gather", TestGatherRowsScalesSelectedRows)
}

// The pure-Go fallback must stay correct on amd64 machines without SIMD.
func TestPureGoPathOnAMD64(t *testing.T) { withPaths(t, false, false, false) }

func TestAVX2Path(t *testing.T) {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		t.Log("CPU lacks AVX2/FMA/F16C: the AVX2 path cannot run here")
		return
	}
	withPaths(t, false, true, false)
}

// Without VNNI the AVX-512 q8/q4 matrix-vector path dequantizes in float32.
func TestAVX512PathWithoutVNNI(t *testing.T) {
	if !useAVX512 {
		t.Log("CPU lacks AVX-512: the AVX-512 path cannot run here")
		return
	}
	withPaths(t, true, false, false)
}
