package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
)

// gptqDamping is added to the Gram matrix's diagonal, as a fraction of its mean,
// so that it is positive definite however few tokens it was measured on.
const gptqDamping = 0.01

// quantizeGPTQ quantizes src ([rows][cols]) into dst (Q8 or Q4) so as to
// minimise, for each row w, (w - ŵ)ᵀ G (w - ŵ): the mean squared error of
// the layer's output over the inputs whose Gram matrix (mean of x xᵀ) is G
// ([cols][cols], row-major). Columns are quantized in order; each one's
// rounding error is compensated by the columns after it (GPTQ, Frantar et
// al. 2022, with the inverse's Cholesky factor), and each block's scale is
// chosen, when the block is reached, for the compensated values weighted by
// G's diagonal.
func quantizeGPTQ(t WeightType, dst []byte, src []float32, rows, cols int, gram []float32) error {
	if len(gram) != cols*cols {
		return fmt.Errorf("quantize %s [%d][%d]: %w: Gram matrix of %d values, want %d", t, rows, cols, ErrShape, len(gram), cols*cols)
	}
	for i, v := range gram {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("quantize %s: Gram matrix [%d][%d] is %v: %w", t, i/cols, i%cols, v, ErrNotFinite)
		}
	}
	u, err := inverseCholeskyUpper(gram, cols)
	if err != nil {
		return fmt.Errorf("quantize %s [%d][%d]: %w", t, rows, cols, err)
	}
	lv, put := q8Levels, putQ8
	if t == Q4 {
		lv, put = q4Levels, putQ4
	}
	diag := make([]float32, cols)
	for c := range cols {
		diag[c] = float32(max(float64(gram[c*cols+c]), 0))
	}
	rb := t.RowBytes(cols)
	nb := (cols + BlockSize - 1) / BlockSize
	return forRows(rows, cols, func(r int) error {
		w := make([]float64, cols)
		for c, v := range src[r*cols : (r+1)*cols] {
			w[c] = float64(v)
		}
		blk := make([]float32, BlockSize)
		d := dst[r*rb : (r+1)*rb]
		for b := range nb {
			lo, hi := b*BlockSize, min(cols, (b+1)*BlockSize)
			for c := lo; c < hi; c++ {
				blk[c-lo] = float32(w[c])
				if math.IsInf(float64(blk[c-lo]), 0) {
					return fmt.Errorf("quantize %s: row %d: compensated column %d overflows float32: %w", t, r, c, ErrNotFinite)
				}
			}
			bw := diag[lo:hi]
			if sumF32(bw) == 0 {
				bw = nil
			}
			h, err := lv.searchScale(blk[:hi-lo], weightsOrOnes(bw, hi-lo))
			if err != nil {
				return fmt.Errorf("quantize %s: row %d block %d: %w", t, r, b, err)
			}
			binary.LittleEndian.PutUint16(d[2*b:], h)
			s := float64(f16ToF32(h))
			var inv float64
			if s != 0 {
				inv = 1 / s
			}
			for i := range BlockSize {
				c := lo + i
				if c >= hi {
					put(d, nb, b, i, 0)
					continue
				}
				q := lv.round(float64(float32(w[c])) * inv)
				put(d, nb, b, i, int8(q))
				e := (w[c] - s*q) / u[c*cols+c]
				row := u[c*cols : (c+1)*cols]
				for k := c + 1; k < cols; k++ {
					w[k] -= e * row[k]
				}
			}
		}
		return nil
	})
}

func sumF32(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s
}

// weightsOrOnes returns w, or n ones when w is nil.
func weightsOrOnes(w []float32, n int) []float32 {
	if w != nil {
		return w
	}
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	return ones
}

// inverseCholeskyUpper returns U ([n][n], upper triangular, row-major) with
// Uᵀ U = (G + λI)⁻¹, λ = gptqDamping × mean(diag G) (1 if that is 0).
func inverseCholeskyUpper(gram []float32, n int) ([]float64, error) {
	var mean float64
	for i := range n {
		mean += float64(gram[i*n+i])
	}
	mean /= float64(n)
	lambda := gptqDamping * mean
	if !(lambda > 0) {
		lambda = 1
	}
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			a[i*n+j] = float64(gram[i*n+j])
		}
		a[i*n+i] += lambda
	}
	if err := choleskyLower(a, n); err != nil {
		return nil, err
	}
	// inv = L⁻ᵀ L⁻¹, from L⁻¹ (lower triangular) by forward substitution.
	li := make([]float64, n*n)
	for j := range n {
		li[j*n+j] = 1 / a[j*n+j]
		for i := j + 1; i < n; i++ {
			var s float64
			for k := j; k < i; k++ {
				s += a[i*n+k] * li[k*n+j]
			}
			li[i*n+j] = -s / a[i*n+i]
		}
	}
	inv := make([]float64, n*n)
	for i := range n {
		for j := 0; j <= i; j++ {
			var s float64
			for k := i; k < n; k++ { // (L⁻ᵀ L⁻¹)[i][j] = sum_k L⁻¹[k][i] L⁻¹[k][j], k ≥ max(i, j)
				s += li[k*n+i] * li[k*n+j]
			}
			inv[i*n+j], inv[j*n+i] = s, s
		}
	}
	if err := choleskyLower(inv, n); err != nil {
		return nil, err
	}
	u := make([]float64, n*n) // U = Lᵀ
	for i := range n {
		for j := 0; j <= i; j++ {
			u[j*n+i] = inv[i*n+j]
		}
	}
	return u, nil
}

// choleskyLower factors the symmetric positive definite a ([n][n]) in place
// into L (lower triangle; the upper triangle is left as it was).
func choleskyLower(a []float64, n int) error {
	for j := range n {
		s := a[j*n+j]
		for k := range j {
			s -= a[j*n+k] * a[j*n+k]
		}
		if !(s > 0) {
			return fmt.Errorf("%w: Gram matrix not positive definite at column %d", ErrShape, j)
		}
		a[j*n+j] = math.Sqrt(s)
		for i := j + 1; i < n; i++ {
			t := a[i*n+j]
			for k := range j {
				t -= a[i*n+k] * a[j*n+k]
			}
			a[i*n+j] = t / a[j*n+j]
		}
	}
	return nil
}
