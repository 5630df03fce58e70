package kernels

import "math"

// Row kernels: pure functions on caller-owned slices, no allocation. Lengths
// are taken from the first input slice; other slices must be at least as
// long (like slice indexing, a short slice panics: a programming error).

// Dot returns sum a[i]*b[i] for i < len(a).
func Dot(a, b []float32) float32 { return dot(a, b[:len(a)]) }

// Axpy computes y[i] += alpha*x[i] for i < len(x).
func Axpy(alpha float32, x, y []float32) { axpy(alpha, x, y[:len(x)]) }

// DotF16 returns sum a[i]*b[i] where b holds IEEE binary16 bits.
func DotF16(a []float32, b []uint16) float32 { return dotF16(a, b[:len(a)]) }

// AxpyF16 computes y[i] += alpha*x[i] where x holds IEEE binary16 bits.
func AxpyF16(alpha float32, x []uint16, y []float32) { axpyF16(alpha, x, y[:len(x)]) }

// Dots sets out[r] = Dot(q, k[r*ld:]) for r < len(out): the dot products of q
// with len(out) rows of k spaced ld values apart, each equal bit for bit to
// its Dot call.
func Dots(out, q, k []float32, ld int) {
	if len(q) == 0 {
		clear(out)
		return
	}
	if len(out) > 0 {
		_ = k[(len(out)-1)*ld+len(q)-1]
		dots(out, q, k, ld)
	}
}

// DotsF16 is Dots for binary16 rows: out[r] = DotF16(q, k[r*ld:]).
func DotsF16(out, q []float32, k []uint16, ld int) {
	if len(q) == 0 {
		clear(out)
		return
	}
	if len(out) > 0 {
		_ = k[(len(out)-1)*ld+len(q)-1]
		dotsF16(out, q, k, ld)
	}
}

// Axpys adds p[r]*v[r*ld : r*ld+len(y)] to y for r < len(p), in order of r:
// bit for bit the same as calling Axpy for each r.
func Axpys(y, p, v []float32, ld int) {
	if len(p) > 0 && len(y) > 0 {
		_ = v[(len(p)-1)*ld+len(y)-1]
		axpys(y, p, v, ld)
	}
}

// AxpysF16 is Axpys for binary16 rows (AxpyF16 for each r).
func AxpysF16(y, p []float32, v []uint16, ld int) {
	if len(p) > 0 && len(y) > 0 {
		_ = v[(len(p)-1)*ld+len(y)-1]
		axpysF16(y, p, v, ld)
	}
}

// DotsF16N scores nq query vectors against the same binary16 rows: for qi < nq
// and r < rows, out[qi*ldo+r] = DotF16(q[qi*ldq:qi*ldq+d], k[r*ld:]), bit for bit.
// Grouped-query attention uses it for the heads that share a key head, which
// then read and convert each key once.
func DotsF16N(out []float32, ldo, rows int, q []float32, ldq, nq, d int, k []uint16, ld int) {
	if rows <= 0 || nq <= 0 {
		return
	}
	_ = out[(nq-1)*ldo+rows-1]
	if d == 0 {
		for qi := range nq {
			clear(out[qi*ldo : qi*ldo+rows])
		}
		return
	}
	_ = q[(nq-1)*ldq+d-1]
	_ = k[(rows-1)*ld+d-1]
	dotsF16N(out, ldo, rows, q, ldq, nq, d, k, ld)
}

// AxpysF16N adds, for qi < nq, sum_r p[qi*ldp+r]*v[r*ld : r*ld+d] to
// y[qi*ldy : qi*ldy+d], in order of r: bit for bit AxpyF16 for each qi and r.
func AxpysF16N(y []float32, ldy, d int, p []float32, ldp, nq, rows int, v []uint16, ld int) {
	if rows <= 0 || nq <= 0 || d <= 0 {
		return
	}
	_ = y[(nq-1)*ldy+d-1]
	_ = p[(nq-1)*ldp+rows-1]
	_ = v[(rows-1)*ld+d-1]
	axpysF16N(y, ldy, d, p, ldp, nq, rows, v, ld)
}

func dotsF16NGeneric(out []float32, ldo, rows int, q []float32, ldq, nq, d int, k []uint16, ld int) {
	for qi := range nq {
		dotsF16Generic(out[qi*ldo:qi*ldo+rows], q[qi*ldq:qi*ldq+d], k, ld)
	}
}

func axpysF16NGeneric(y []float32, ldy, d int, p []float32, ldp, nq, rows int, v []uint16, ld int) {
	for qi := range nq {
		axpysF16Generic(y[qi*ldy:qi*ldy+d], p[qi*ldp:qi*ldp+rows], v, ld)
	}
}

// dotsGeneric and the others below are the per-row forms of the batched
// kernels, used where no batched assembly applies.
func dotsGeneric(out, q, k []float32, ld int) {
	for r := range out {
		out[r] = dot(q, k[r*ld:r*ld+len(q)])
	}
}

func dotsF16Generic(out, q []float32, k []uint16, ld int) {
	for r := range out {
		out[r] = dotF16(q, k[r*ld:r*ld+len(q)])
	}
}

func axpysGeneric(y, p, v []float32, ld int) {
	for r, a := range p {
		axpy(a, v[r*ld:r*ld+len(y)], y)
	}
}

func axpysF16Generic(y, p []float32, v []uint16, ld int) {
	for r, a := range p {
		axpyF16(a, v[r*ld:r*ld+len(y)], y)
	}
}

// F32ToF16 converts src to binary16 bits in dst, rounding to nearest even.
func F32ToF16(dst []uint16, src []float32) { f32ToF16Slice(dst[:len(src)], src) }

// F16ToF32 converts binary16 bits in src to float32 in dst (exact).
func F16ToF32(dst []float32, src []uint16) { f16ToF32Slice(dst[:len(src)], src) }

// RMSNorm computes dst = x / sqrt(mean(x²)+eps) * w over len(x) values.
// A nil w means no weight. dst may alias x.
func RMSNorm(dst, x, w []float32, eps float32) {
	if w != nil {
		w = w[:len(x)]
	}
	rmsNorm(dst[:len(x)], x, w, eps)
}

// Softmax replaces x with exp(x-max)/sum in place. Entries equal to -Inf
// (masked positions) get probability 0; if every entry is -Inf the result is
// all zeros. Leading -Inf entries do not change the others' results: a row
// padded at the front (a ring cache's scores, whose first slot depends on how
// the steps were chunked) gives what the unpadded row gives, bit for bit,
// whatever vector kernel runs.
func Softmax(x []float32) {
	f := 0
	for f < len(x) && math.IsInf(float64(x[f]), -1) {
		f++
	}
	clear(x[:f])
	softmax(x[f:])
}

// SiLUMul computes dst = gate*sigmoid(gate)*up (the SwiGLU activation).
// dst may alias gate or up.
func SiLUMul(dst, gate, up []float32) { siluMul(dst[:len(gate)], gate, up[:len(gate)]) }

// GELUTanhMul computes dst = gelu_tanh(gate)*up, the tanh approximation of
// GELU (HF "gelu_pytorch_tanh"). dst may alias gate or up.
func GELUTanhMul(dst, gate, up []float32) { geluTanhMul(dst[:len(gate)], gate, up[:len(gate)]) }

// Add computes dst = a + b over len(a). dst may alias a or b.
func Add(dst, a, b []float32) { add(dst[:len(a)], a, b[:len(a)]) }

// Scale computes x *= s.
func Scale(x []float32, s float32) { scale(x, s) }

// SoftCap computes x = cap*tanh(x/cap) (Gemma-style logit soft-capping).
func SoftCap(x []float32, cap float32) { softCap(x, cap) }

// RoPE rotates one head in place with the rotate-half (HF/NeoX) layout:
// for i < d/2, (x[i], x[i+d/2]) becomes (x[i]*cos[i] - x[i+d/2]*sin[i],
// x[i+d/2]*cos[i] + x[i]*sin[i]). cos and sin hold d/2 values.
func RoPE(x []float32, cos, sin []float32) {
	h := len(x) / 2
	rope(x[:h], x[h:2*h], cos[:h], sin[:h])
}
