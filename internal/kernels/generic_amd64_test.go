//go:build amd64 && !purego

package kernels

import "testing"

// Every route this CPU runs (pure Go included) passes the kernels'
// comparisons with their references: one table of tests, each run on each
// route, whatever route the package starts on.
func TestEveryRoute(t *testing.T) {
	for _, r := range Routes() {
		t.Run(r, func(t *testing.T) {
			onRoute(t, r, func() {
				t.Run("rows", TestElementwiseKernelsMatchReference)
				t.Run("dot", TestDotAndAxpyMatchReference)
				t.Run("f16", TestF16SliceConversionsMatchScalar)
				t.Run("rmsnorm", TestRMSNormMatchesReference)
				t.Run("softmax", TestSoftmaxMatchesReference)
				t.Run("softmax-padding", TestSoftmaxIgnoresLeadingMaskedEntries)
				t.Run("rope", TestRoPEMatchesReference)
				t.Run("batched", TestBatchedRowKernels)
				t.Run("multiquery", TestMultiQueryKernels)
				t.Run("matmul", TestMatMulMatchesReference)
				t.Run("dequant", TestQuantizeDequantizeErrorWithinFormatBound)
				t.Run("gather", TestGatherRowsScalesSelectedRows)
			})
		})
	}
}
