package kernels

import "math"

// This file holds the reference kernels: plain loops, float64 accumulation,
// no tricks. The fast kernels are tested against them.

// ReferenceMatMul is the obviously-right MatMul: each weight row is
// dequantized with the generic code and dotted with each input row in float64.
// Same contract as Pool.MatMul.
func ReferenceMatMul(y, x []float32, m int, w Matrix, bias []float32) {
	row := make([]float32, w.Cols)
	for r := range w.Rows {
		dequantizeRowGeneric(w.Type, w.row(r), row)
		for i := range m {
			var s float64
			for c, v := range row {
				s += float64(x[i*w.Cols+c]) * float64(v)
			}
			if bias != nil {
				s += float64(bias[r])
			}
			y[i*w.Rows+r] = float32(s)
		}
	}
}

func refDot(a, b []float32) float32 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return float32(s)
}

func refRMSNorm(dst, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	for i, v := range x {
		o := float64(v) * inv
		if w != nil {
			o *= float64(w[i])
		}
		dst[i] = float32(o)
	}
}

func refSoftmax(x []float32) {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, float64(v))
	}
	var s float64
	e := make([]float64, len(x))
	for i, v := range x {
		e[i] = math.Exp(float64(v) - mx)
		s += e[i]
	}
	for i := range x {
		x[i] = float32(e[i] / s)
	}
}

func refSiLU(g float64) float64 { return g / (1 + math.Exp(-g)) }

func refGELUTanh(g float64) float64 {
	return 0.5 * g * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(g+0.044715*g*g*g)))
}

func refRoPE(x, cos, sin []float32) {
	h := len(x) / 2
	for i := range h {
		a, b := float64(x[i]), float64(x[i+h])
		c, s := float64(cos[i]), float64(sin[i])
		x[i] = float32(a*c - b*s)
		x[i+h] = float32(b*c + a*s)
	}
}
