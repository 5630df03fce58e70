package kernels

import "math"

// GELU sets dst = ½·x·(1 + erf(x/√2)), the exact GELU, 16 values at a time from
// polynomials of degree 5 on 32 steps of [-6, 0] (geluPoly: Taylor at each step's
// middle, within 1e-8 of GELU there) and GELU(x) = x + GELU(-x) for x > 0: x at or
// above 6, 0 at or below -6, NaN for NaN. It returns false, doing nothing, where this
// build or CPU has no SIMD kernel for it. dst may alias x.
func GELU(dst, x []float32) bool {
	if len(dst) < len(x) {
		panic("kernels: GELU into a shorter dst")
	}
	if len(x) == 0 {
		return true
	}
	return gelu(dst, x)
}

// geluPoly holds coefficient j of step k's polynomial in t = a - mid_k at [j][k]:
// GELU's j-th derivative at mid_k = -6 + 3/16·(k + ½) over j!, for a in [-6, 0].
var geluPoly = func() (tab [6][32]float32) {
	for k := range 32 {
		x := -6 + 3.0/16*(float64(k)+0.5)
		phi := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
		x2 := x * x
		d := [6]float64{
			0.5 * x * (1 + math.Erf(x/math.Sqrt2)),
			0.5*(1+math.Erf(x/math.Sqrt2)) + x*phi,
			phi * (2 - x2),
			phi * (x2*x - 4*x),
			phi * (-x2*x2 + 7*x2 - 4),
			phi * (x2*x2*x - 11*x2*x + 18*x),
		}
		fact := 1.0
		for j := range d {
			if j > 0 {
				fact *= float64(j)
			}
			tab[j][k] = float32(d[j] / fact)
		}
	}
	return tab
}()

// LayerNorm sets dst = (x - m)·inv·w + b, m the mean of x and inv = 1/√(var + eps),
// both statistics accumulated in float64 and rounded to float32, the last step as
// float32 multiplies and an add: internal/exec's layerNorm but for the order of the
// float64 sums. It returns false, doing nothing, where this build or CPU has no SIMD
// kernel for len(x) (AVX-512, multiples of 16). dst may alias x.
func LayerNorm(dst, x, w, b []float32, eps float32) bool {
	n := len(x)
	if len(dst) < n || len(w) < n || len(b) < n {
		panic("kernels: LayerNorm with short dst, weight or bias")
	}
	return n > 0 && n%16 == 0 && layerNorm(dst, x, w, b, eps)
}
