package exec

import (
	"math"
)

// Row kernels of the encoder ops (op set 3), in pure Go: LayerNorm with a bias, the
// activations applied on their own (exact GELU, tanh, ReLU) and L2 normalization. Each
// computes a row from that row alone, so a row's result does not depend on the rows
// beside it. rowkernels_test.go checks them against float64 references.

// layerNorm computes dst = (x - mean(x)) / sqrt(var(x) + eps) * w + b over len(x) values,
// with the mean and the (biased) variance accumulated in float64. dst may alias x.
func layerNorm(dst, x, w, b []float32, eps float32) {
	n := len(x)
	w, b, dst = w[:n], b[:n], dst[:n]
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := sum / float64(n)
	var sq float64
	for _, v := range x {
		d := float64(v) - mean
		sq += d * d
	}
	inv := float32(1 / math.Sqrt(sq/float64(n)+float64(eps)))
	m := float32(mean)
	for i, v := range x {
		dst[i] = (v-m)*inv*w[i] + b[i]
	}
}

// geluErf computes dst = ½·x·(1 + erf(x/√2)), the exact GELU (BERT's "gelu"), with erf
// from erfRational. dst may alias x.
func geluErf(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = float32(0.5 * float64(v) * (1 + erfRational(float64(v)*(1/math.Sqrt2))))
	}
}

// Coefficients of erfRational: erf(z) ≈ z·P(z²)/Q(z²) on |z| ≤ 4, fitted to math.Erf on 20,000
// points of [0, 4] (a linear least-squares fit of z·P − erf·Q, reweighted towards the largest
// errors); the largest error is 2.1e-8 (rowkernels_test.go checks it against math.Erf).
const (
	erfP0, erfP1, erfP2, erfP3, erfP4, erfP5 = 1.1283789773828943, 0.19624466499609103, 0.05346658663948832,
		0.004003345839600861, 0.00028801524336891787, 1.974629179335441e-06
	erfQ1, erfQ2, erfQ3, erfQ4, erfQ5 = 0.5072484737756335, 0.11647434016067043, 0.015443874106664588,
		0.0012162485342544303, 3.747735996210283e-05
)

// erfRational is erf(z) to within 2.1e-8, in a tenth of math.Erf's time: eleven
// multiply-adds and a division, no branch but the clamp (beyond |z| = 4, erf is ±1 to
// within 1.6e-8).
func erfRational(z float64) float64 {
	if z > 4 {
		z = 4
	} else if z < -4 {
		z = -4
	}
	u := z * z
	p := ((((erfP5*u+erfP4)*u+erfP3)*u+erfP2)*u+erfP1)*u + erfP0
	q := ((((erfQ5*u+erfQ4)*u+erfQ3)*u+erfQ2)*u+erfQ1)*u + 1
	return z * p / q
}

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
