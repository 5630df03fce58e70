package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
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
// G's diagonal. Then refineRow improves each row's codes and scales for the
// same error.
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
	h := dampedGram(gram, cols)
	return forRows(rows, cols, func(r int) error {
		src := src[r*cols : (r+1)*cols]
		w := make([]float64, cols)
		for c, v := range src {
			w[c] = float64(v)
		}
		blk := make([]float32, BlockSize)
		q := make([]float64, cols)  // the codes
		scale := make([]uint16, nb) // binary16 block scales
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
			hs, err := lv.searchScale(blk[:hi-lo], weightsOrOnes(bw, hi-lo))
			if err != nil {
				return fmt.Errorf("quantize %s: row %d block %d: %w", t, r, b, err)
			}
			scale[b] = hs
			s := float64(f16ToF32(hs))
			var inv float64
			if s != 0 {
				inv = 1 / s
			}
			for c := lo; c < hi; c++ {
				q[c] = lv.round(float64(float32(w[c])) * inv)
				e := (w[c] - s*q[c]) / u[c*cols+c]
				row := u[c*cols : (c+1)*cols]
				for k := c + 1; k < cols; k++ {
					w[k] -= e * row[k]
				}
			}
		}
		refineRow(src, q, scale, h, lv)
		d := dst[r*rb : (r+1)*rb]
		for b := range nb {
			binary.LittleEndian.PutUint16(d[2*b:], scale[b])
			for i := range BlockSize {
				var v int8
				if c := b*BlockSize + i; c < cols {
					v = int8(q[c])
				}
				put(d, nb, b, i, v)
			}
		}
		return nil
	})
}

// refineRounds bounds refineRow's alternations of code and scale moves.
const refineRounds = 3

// dampedGram returns H = G + λI in float64 ([n][n]), λ as in inverseCholeskyUpper:
// the matrix GPTQ compensates along, and refineRow's measure of a row's error.
func dampedGram(gram []float32, n int) []float64 {
	var mean float64
	for i := range n {
		mean += float64(gram[i*n+i])
	}
	lambda := gptqDamping * mean / float64(n)
	if !(lambda > 0) {
		lambda = 1
	}
	h := make([]float64, n*n)
	for i, v := range gram {
		h[i] = float64(v)
	}
	for i := range n {
		h[i*n+i] += lambda
	}
	return h
}

// refineRow lowers a row's output error eᵀ H e (e = ŵ − w, ŵ[c] = scale[c/32]·q[c],
// w = src) from where GPTQ left it, which is greedy: each column's rounding was final
// when it was reached. By turns, every code moves by ±1 where that lowers the error
// (coordinate descent over the roundings, up to four passes), then the block scales
// are re-fitted jointly by least squares for the codes, kept if their binary16 values
// lower the error. It never raises the error. q holds the codes as float64 levels.
func refineRow(src []float32, q []float64, scale []uint16, h []float64, lv levels) {
	n, nb := len(q), len(scale)
	e := make([]float64, n)  // ŵ − w
	he := make([]float64, n) // H e
	setError := func() float64 {
		for c := range n {
			e[c] = float64(f16ToF32(scale[c/BlockSize]))*q[c] - float64(src[c])
		}
		var obj float64
		for i := range n {
			var s float64
			for j, v := range h[i*n : (i+1)*n] {
				s += v * e[j]
			}
			he[i] = s
			obj += e[i] * s
		}
		return obj
	}
	obj := setError()
	hw := make([]float64, n) // H w
	for i := range n {
		for j, v := range h[i*n : (i+1)*n] {
			hw[i] += v * float64(src[j])
		}
	}
	for range refineRounds {
		moved := false
		for range 4 {
			pass := false
			for c := range n {
				d := float64(f16ToF32(scale[c/BlockSize]))
				if d == 0 {
					continue
				}
				for _, step := range [2]float64{-1, 1} {
					nq := q[c] + step
					if nq < float64(lv.lo) || nq > float64(lv.hi) {
						continue
					}
					// Moving ŵ[c] by δ changes eᵀHe by 2δ(He)[c] + δ²H[c][c].
					delta := d * step
					if change := 2*delta*he[c] + delta*delta*h[c*n+c]; change < -1e-12*delta*delta*h[c*n+c] {
						q[c] = nq
						e[c] += delta
						for k, v := range h[c*n : (c+1)*n] {
							he[k] += delta * v
						}
						pass = true
						break
					}
				}
			}
			if !pass {
				break
			}
			moved = true
		}
		if moved {
			obj = setError()
		}
		if !refitScales(scale, q, h, hw, nb) {
			if !moved {
				break
			}
			continue
		}
		old := slices.Clone(scale)
		if got := setError(); got < obj {
			obj = got
			continue
		}
		copy(scale, old)
		obj = setError()
		if !moved {
			break
		}
	}
}

// refitScales sets the scales of the blocks holding a nonzero code to the joint
// least-squares solution for the codes q: minimising (Σ_b s_b Q_b − w)ᵀ H (Σ_b s_b Q_b
// − w) over s gives A s = y, A[a][b] = Q_aᵀ H Q_b, y[a] = Q_aᵀ H w. It returns false,
// leaving scale as it was, when nothing changes.
func refitScales(scale []uint16, q, h, hw []float64, nb int) bool {
	n := len(q)
	active := make([]int, nb) // block → its index in the system, or -1
	m := 0
	for b := range nb {
		active[b] = -1
		for _, v := range q[b*BlockSize : min(n, (b+1)*BlockSize)] {
			if v != 0 {
				active[b] = m
				m++
				break
			}
		}
	}
	if m == 0 {
		return false
	}
	a := make([]float64, m*m)
	y := make([]float64, m)
	for i := range n {
		bi := active[i/BlockSize]
		if bi < 0 || q[i] == 0 {
			continue
		}
		y[bi] += q[i] * hw[i]
		for j, v := range h[i*n : (i+1)*n] {
			if bj := active[j/BlockSize]; bj >= 0 {
				a[bi*m+bj] += q[i] * v * q[j]
			}
		}
	}
	sol, ok := solveLinear(a, y, m)
	if !ok {
		return false
	}
	changed := false
	for b, k := range active {
		if k < 0 {
			continue
		}
		hb := f32ToF16(float32(sol[k]))
		if hb&0x7c00 == 0x7c00 || hb&0x7fff == 0 || hb == scale[b] {
			continue
		}
		scale[b] = hb
		changed = true
	}
	return changed
}

// solveLinear solves a x = y (a [n][n]) by Gaussian elimination with partial
// pivoting; ok is false when a is singular. a and y are left as they were.
func solveLinear(a, y []float64, n int) (x []float64, ok bool) {
	a, x = slices.Clone(a), slices.Clone(y)
	for col := range n {
		p := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r*n+col]) > math.Abs(a[p*n+col]) {
				p = r
			}
		}
		if a[p*n+col] == 0 {
			return nil, false
		}
		if p != col {
			for k := range n {
				a[p*n+k], a[col*n+k] = a[col*n+k], a[p*n+k]
			}
			x[p], x[col] = x[col], x[p]
		}
		for r := col + 1; r < n; r++ {
			f := a[r*n+col] / a[col*n+col]
			for k := col; k < n; k++ {
				a[r*n+k] -= f * a[col*n+k]
			}
			x[r] -= f * x[col]
		}
	}
	for r := n - 1; r >= 0; r-- {
		s := x[r]
		for k := r + 1; k < n; k++ {
			s -= a[r*n+k] * x[k]
		}
		x[r] = s / a[r*n+r]
	}
	return x, true
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
