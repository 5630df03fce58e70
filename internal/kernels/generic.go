package kernels

import "math"

// Pure-Go implementations of the row kernels. They are the fallback on every
// platform and the tail handlers of the assembly kernels.

func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpyGeneric(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

func dotF16Generic(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	var s float32
	for i, v := range a {
		s += v * f16ToF32(b[i])
	}
	return s
}

func axpyF16Generic(alpha float32, x []uint16, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * f16ToF32(v)
	}
}

func f32ToF16SliceGeneric(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = f32ToF16(v)
	}
}

func f16ToF32SliceGeneric(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = f16ToF32(v)
	}
}

func rmsNormGeneric(dst, x, w []float32, eps float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	inv := float32(1 / math.Sqrt(float64(ss/float32(len(x))+eps)))
	dst = dst[:len(x)]
	if w == nil {
		for i, v := range x {
			dst[i] = v * inv
		}
		return
	}
	w = w[:len(x)]
	for i, v := range x {
		dst[i] = v * inv * w[i]
	}
}

func softmaxGeneric(x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	if math.IsInf(float64(mx), -1) {
		clear(x)
		return
	}
	var s float32
	for i, v := range x {
		e := expf(v - mx)
		x[i] = e
		s += e
	}
	scaleGeneric(x, 1/s)
}

func siluMulGeneric(dst, gate, up []float32) {
	dst, up = dst[:len(gate)], up[:len(gate)]
	for i, g := range gate {
		dst[i] = g / (1 + expf(-g)) * up[i]
	}
}

func geluTanhMulGeneric(dst, gate, up []float32) {
	dst, up = dst[:len(gate)], up[:len(gate)]
	const c = 0.7978845608028654 // sqrt(2/pi)
	for i, g := range gate {
		dst[i] = 0.5 * g * (1 + tanhf(c*(g+0.044715*g*g*g))) * up[i]
	}
}

func addGeneric(dst, a, b []float32) {
	dst, b = dst[:len(a)], b[:len(a)]
	for i := range a {
		dst[i] = a[i] + b[i]
	}
}

func scaleGeneric(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

func softCapGeneric(x []float32, cap float32) {
	inv := 1 / cap
	for i, v := range x {
		x[i] = cap * tanhf(v*inv)
	}
}

func ropeGeneric(x1, x2, cos, sin []float32) {
	x2, cos, sin = x2[:len(x1)], cos[:len(x1)], sin[:len(x1)]
	for i, a := range x1 {
		b := x2[i]
		// The conversions round each product (no fused multiply-add), as ropeAVX512 does.
		x1[i] = float32(a*cos[i]) - float32(b*sin[i])
		x2[i] = float32(b*cos[i]) + float32(a*sin[i])
	}
}

func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

func tanhf(x float32) float32 { return float32(math.Tanh(float64(x))) }
