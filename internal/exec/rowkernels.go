package exec

import (
	"math"

	"github.com/hfstatic/hfstatic/internal/kernels"
)

// Row kernels of the encoder ops (op set 3), in pure Go: LayerNorm with a bias, the
// activations applied on their own (exact GELU, tanh, ReLU) and L2 normalization. Each
// computes a row from that row alone, so a row's result does not depend on the rows
// beside it. rowkernels_test.go checks them against float64 references.

// layerNorm computes dst = (x - mean(x)) / sqrt(var(x) + eps) * w + b over len(x) values,
// with the mean and the (biased) variance accumulated in float64: by kernels.LayerNorm where
// it has a SIMD kernel (widths of multiples of 16 on AVX-512), else layerNormGo. dst may
// alias x.
func layerNorm(dst, x, w, b []float32, eps float32) {
	if kernels.LayerNorm(dst, x, w, b, eps) {
		return
	}
	layerNormGo(dst, x, w, b, eps)
}

// layerNormGo is layerNorm in Go, its float64 sums in four running sums (one chain of
// dependent additions would take four times as long).
func layerNormGo(dst, x, w, b []float32, eps float32) {
	n := len(x)
	w, b, dst = w[:n], b[:n], dst[:n]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += float64(x[i])
		s1 += float64(x[i+1])
		s2 += float64(x[i+2])
		s3 += float64(x[i+3])
	}
	for ; i < n; i++ {
		s0 += float64(x[i])
	}
	mean := ((s0 + s1) + (s2 + s3)) / float64(n)
	s0, s1, s2, s3 = 0, 0, 0, 0
	i = 0
	for ; i+4 <= n; i += 4 {
		d0, d1, d2, d3 := float64(x[i])-mean, float64(x[i+1])-mean, float64(x[i+2])-mean, float64(x[i+3])-mean
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < n; i++ {
		d := float64(x[i]) - mean
		s0 += d * d
	}
	inv := float32(1 / math.Sqrt(((s0+s1)+(s2+s3))/float64(n)+float64(eps)))
	m := float32(mean)
	for i, v := range x {
		dst[i] = (v-m)*inv*w[i] + b[i]
	}
}

// geluErf computes dst = ½·x·(1 + erf(x/√2)), the exact GELU (BERT's "gelu"): with
// kernels.GELU where there is a SIMD kernel (polynomials of degree 5 on 32 steps of
// [-6, 0] in registers, about 7× geluErfGo per value), else geluErfGo, from geluTable: a
// cubic on each sixteenth of [-6, 6] (0 below, x above: GELU is within 6e-9 of them
// there), in half the time of a rational erf (eleven multiply-adds and a division) per
// value. Both are within 2e-7 of the float64 GELU (relative beyond 1; rowkernels_test.go
// checks them on a fine grid). dst may alias x.
func geluErf(dst, x []float32) {
	if kernels.GELU(dst, x) { // SIMD: polynomials on steps of [-6, 0] in registers
		return
	}
	geluErfGo(dst, x)
}

// geluErfGo is geluErf in Go, where there is no SIMD kernel.
func geluErfGo(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		if !(v > -geluSpan && v < geluSpan) {
			if v <= -geluSpan {
				dst[i] = 0
			} else {
				dst[i] = v // and NaN
			}
			continue
		}
		k := min(int((v+geluSpan)*geluSteps), len(geluTable)-1)
		// t from v itself: v + geluSpan would round v's low bits away
		t := (v - (float32(k)*(1.0/geluSteps) - geluSpan)) * geluSteps
		c := &geluTable[k]
		dst[i] = c[0] + t*(c[1]+t*(c[2]+t*c[3]))
	}
}

// geluSpan and geluSteps: geluTable covers [-geluSpan, geluSpan) in steps of 1/geluSteps.
const geluSpan, geluSteps = 6, 16

// geluTable holds, per step [x0, x0+h), the cubic c0 + t·(c1 + t·(c2 + t·c3)) in t = (x-x0)/h
// that matches GELU and its derivative at both ends (Hermite), from math.Erf: its error is
// at most h⁴/384 times GELU's largest fourth derivative (about 2), 8e-8.
var geluTable = func() (tab [2 * geluSpan * geluSteps][4]float32) {
	f := func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }
	df := func(x float64) float64 {
		return 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi)
	}
	const h = 1.0 / geluSteps
	for k := range tab {
		x0 := -geluSpan + float64(k)*h
		f0, f1, d0, d1 := f(x0), f(x0+h), df(x0)*h, df(x0+h)*h
		tab[k] = [4]float32{float32(f0), float32(d0), float32(3*(f1-f0) - 2*d0 - d1), float32(2*(f0-f1) + d0 + d1)}
	}
	return tab
}()

// geluTanh computes dst = ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). dst may alias x.
func geluTanh(dst, x []float32) {
	dst = dst[:len(x)]
	const c = 0.7978845608028654 // √(2/π)
	for i, v := range x {
		dst[i] = 0.5 * v * (1 + float32(math.Tanh(float64(c*(v+0.044715*v*v*v)))))
	}
}

// silu computes dst = x / (1 + e^-x). dst may alias x.
func silu(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = v / (1 + float32(math.Exp(float64(-v))))
	}
}

// tanh32 computes dst = tanh(x). dst may alias x.
func tanh32(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = float32(math.Tanh(float64(v)))
	}
}

// relu computes dst = max(x, 0). dst may alias x.
func relu(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = max(v, 0)
	}
}

// l2Normalize computes dst = x / max(‖x‖₂, eps), the norm accumulated in float64. dst may
// alias x.
func l2Normalize(dst, x []float32, eps float32) {
	var sq float64
	for _, v := range x {
		sq += float64(v) * float64(v)
	}
	norm := float32(max(math.Sqrt(sq), float64(eps)))
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = v / norm
	}
}
