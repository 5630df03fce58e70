//go:build amd64 && !purego

package kernels

import "testing"

// The pure-Go fallback must stay correct on amd64 machines without AVX-512:
// run the equivalence tests with the assembly switched off.
func TestFallbackWithoutAVX512(t *testing.T) {
	avx, vnni := useAVX512, useVNNI
	useAVX512, useVNNI = false, false
	defer func() { useAVX512, useVNNI = avx, vnni }()
	t.Run("rows", TestElementwiseKernelsMatchReference)
	t.Run("dot", TestDotAndAxpyMatchReference)
	t.Run("f16", TestF16SliceConversionsMatchScalar)
	t.Run("rmsnorm", TestRMSNormMatchesReference)
	t.Run("softmax", TestSoftmaxMatchesReference)
	t.Run("matmul", TestMatMulMatchesReference)
	t.Run("dequant", TestQuantizeDequantizeErrorWithinFormatBound)
}

// Without VNNI the q8/q4 matrix-vector path dequantizes in float32.
func TestFloatQuantPathWithoutVNNI(t *testing.T) {
	vnni := useVNNI
	useVNNI = false
	defer func() { useVNNI = vnni }()
	t.Run("matmul", TestMatMulMatchesReference)
}
