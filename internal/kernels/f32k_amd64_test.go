//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fmaChainRef is the arithmetic of the k-order f32 kernels: y[i][r] =
// fma(w_r[c], x_i[c], ...) over c in order from bias (or zero). The float64
// FMA rounded to float32 can differ from a float32 FMA by double rounding,
// which these random values do not hit (a failure here names the output).
func fmaChainRef(x []float32, m int, w Matrix, bias []float32) []float32 {
	y := make([]float32, m*w.Rows)
	row := make([]float32, w.Cols)
	for r := range w.Rows {
		dequantizeRowGeneric(w.Type, w.row(r), row)
		for i := range m {
			var s float32
			if bias != nil {
				s = bias[r]
			}
			for c, v := range row {
				s = float32(math.FMA(float64(v), float64(x[i*w.Cols+c]), float64(s)))
			}
			y[i*w.Rows+r] = s
		}
	}
	return y
}

// TestF32KMatchesFMAChain checks the k-order f32 kernels of the AVX2
// routes (packed GEMM, its tails, and the decode stream) against the FMA
// chain, bit for bit, and so every number of input rows against one row
// alone; and against ReferenceMatMul within float tolerance.
func TestF32KMatchesFMAChain(t *testing.T) {
	if !hasAVX2 {
		t.Fatal("needs AVX2")
	}
	defer func(v bool) { useF32K = v }(useF32K)
	useF32K = true
	onRoute(t, "avx2", func() {
		if !f32K(F32, 64) {
			t.Fatal("the avx2 route does not take the k-order f32 kernels")
		}
		rng := rand.New(rand.NewPCG(3, 4))
		p := NewPool(2)
		defer p.Close()
		defer func(g, kc int) { f32KRowGroups, f32KC = g, kc }(f32KRowGroups, f32KC)
		for _, set := range []struct{ g, kc int }{{1, 512}, {2, 64}, {4, 256}} {
			f32KRowGroups, f32KC = set.g, set.kc
			for _, sh := range []struct{ rows, cols int }{{16, 8}, {48, 64}, {33, 24}, {100, 1032}, {7, 16}, {256, 1024}, {61, 2056}} {
				w := Matrix{Type: F32, Rows: sh.rows, Cols: sh.cols, Data: make([]byte, sh.rows*F32.RowBytes(sh.cols))}
				Quantize(F32, w.Data, randVec(rng, sh.rows*sh.cols), sh.rows, sh.cols)
				bias := randVec(rng, sh.rows)
				for _, m := range []int{1, 2, 3, 5, 6, 7, 13, 16, 21, 37, 128} {
					for _, b := range [][]float32{nil, bias} {
						x := randVec(rng, m*sh.cols)
						y := make([]float32, m*sh.rows)
						p.MatMul(y, x, m, w, b)
						want := fmaChainRef(x, m, w, b)
						ref := make([]float32, m*sh.rows)
						ReferenceMatMul(ref, x, m, w, b)
						for i := range y {
							if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%dx%d m=%d bias=%v: y[%d] = %v, the FMA chain %v", sh.rows, sh.cols, m, b != nil, i, y[i], want[i])
							}
							if d := math.Abs(float64(y[i] - ref[i])); d > 1e-3*math.Sqrt(float64(sh.cols)) {
								t.Fatalf("%dx%d m=%d: y[%d] = %v, reference %v", sh.rows, sh.cols, m, i, y[i], ref[i])
							}
						}
					}
				}
			}
		}
	})
}
