//go:build arm64 && !purego

package kernels

import (
	"math"
	"unsafe"
)

// useNEON selects the NEON kernels of kernels_arm64.s (routes neon+dotprod
// and neon+i8mm), useI8MM the SMMLA prefill products of neon+i8mm;
// routes_arm64.go sets them at start-up and in UseRoute.
var useNEON, useI8MM bool

// The row kernels: the assembly takes whole vectors (8 values for the dot
// products, 16 for the axpys, 4 for the rest), Go the tails. A single Dot or Axpy
// is the batched kernel with one row, so the batched forms equal them bit
// for bit.

func dot(a, b []float32) float32 {
	b = b[:len(a)]
	n8 := len(a) &^ 7
	if !useNEON || n8 == 0 {
		return dotGeneric(a, b)
	}
	var s float32
	dotsNEON_1(&s, 0, &a[0], 0, &b[0], 0, n8, 1)
	if n8 == len(a) {
		return s
	}
	return s + dotGeneric(a[n8:], b[n8:])
}

func dotF16(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	n8 := len(a) &^ 7
	if !useNEON || n8 == 0 {
		return dotF16Generic(a, b)
	}
	var s float32
	dotsF16NEON_1(&s, 0, &a[0], 0, &b[0], 0, n8, 1)
	if n8 == len(a) {
		return s
	}
	return s + dotF16Generic(a[n8:], b[n8:])
}

// dots and the other batched kernels take the assembly when every row is
// whole vectors (attention head dimensions), else call the row kernels per
// row.
func dots(out, q, k []float32, ld int) {
	if n := len(q); useNEON && n%8 == 0 {
		dotsNEON_1(&out[0], 0, &q[0], 0, &k[0], 4*ld, n, len(out))
		return
	}
	dotsGeneric(out, q, k, ld)
}

func dotsF16(out, q []float32, k []uint16, ld int) {
	dotsF16N(out, 0, len(out), q, 0, 1, len(q), k, ld)
}

// dotsF16X[c] and axpysF16X[c] take c query vectors (heads) at a time.
var (
	dotsF16X  = [...]func(out *float32, ldo int, q *float32, ldq int, k *uint16, ld int, n8 int, rows int){nil, dotsF16NEON_1, dotsF16NEON_2, dotsF16NEON_3, dotsF16NEON_4}
	axpysF16X = [...]func(y *float32, ldy int, p *float32, ldp int, v *uint16, ld int, n16 int, rows int){nil, axpysF16NEON_1, axpysF16NEON_2, axpysF16NEON_3, axpysF16NEON_4}
)

func dotsF16N(out []float32, ldo, rows int, q []float32, ldq, nq, d int, k []uint16, ld int) {
	if !useNEON || d == 0 || d%8 != 0 {
		dotsF16NGeneric(out, ldo, rows, q, ldq, nq, d, k, ld)
		return
	}
	for qi := 0; qi < nq; qi += 4 {
		c := min(4, nq-qi)
		dotsF16X[c](&out[qi*ldo], 4*ldo, &q[qi*ldq], 4*ldq, &k[0], 2*ld, d, rows)
	}
}

func axpy(alpha float32, x, y []float32) {
	y = y[:len(x)]
	n := 0
	if useNEON && len(x) >= 16 {
		n = len(x) &^ 15
		axpysNEON_1(&y[0], 0, &alpha, 0, &x[0], 0, n, 1)
	}
	axpyGeneric(alpha, x[n:], y[n:])
}

func axpyF16(alpha float32, x []uint16, y []float32) {
	y = y[:len(x)]
	n := 0
	if useNEON && len(x) >= 16 {
		n = len(x) &^ 15
		axpysF16NEON_1(&y[0], 0, &alpha, 0, &x[0], 0, n, 1)
	}
	axpyF16Generic(alpha, x[n:], y[n:])
}

func axpys(y, p, v []float32, ld int) {
	if n := len(y); useNEON && n%16 == 0 {
		axpysNEON_1(&y[0], 0, &p[0], 0, &v[0], 4*ld, n, len(p))
		return
	}
	axpysGeneric(y, p, v, ld)
}

func axpysF16(y, p []float32, v []uint16, ld int) {
	axpysF16N(y, 0, len(y), p, 0, 1, len(p), v, ld)
}

func axpysF16N(y []float32, ldy, d int, p []float32, ldp, nq, rows int, v []uint16, ld int) {
	if !useNEON || d%16 != 0 {
		axpysF16NGeneric(y, ldy, d, p, ldp, nq, rows, v, ld)
		return
	}
	for qi := 0; qi < nq; qi += 4 {
		c := min(4, nq-qi)
		axpysF16X[c](&y[qi*ldy], 4*ldy, &p[qi*ldp], 4*ldp, &v[0], 2*ld, d, rows)
	}
}

// vecLen is how many leading values the element-wise assembly takes: whole
// vectors of 4, or none without NEON.
func vecLen(n int) int {
	if !useNEON {
		return 0
	}
	return n &^ 3
}

func f32ToF16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	n := vecLen(len(src))
	if n > 0 {
		f32ToF16NEON(&dst[0], &src[0], n)
	}
	f32ToF16SliceGeneric(dst[n:], src[n:])
}

func f16ToF32Slice(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	n := vecLen(len(src))
	if n > 0 {
		f16ToF32NEON(&dst[0], &src[0], n)
	}
	f16ToF32SliceGeneric(dst[n:], src[n:])
}

func rmsNorm(dst, x, w []float32, eps float32) {
	n := vecLen(len(x))
	if n == 0 {
		rmsNormGeneric(dst, x, w, eps)
		return
	}
	inv := float32(1 / math.Sqrt(float64(dot(x, x)/float32(len(x))+eps)))
	var wp *float32
	if w != nil {
		wp = &w[0]
	}
	mulScaleNEON(&dst[0], &x[0], wp, n, inv)
	for i := n; i < len(x); i++ {
		v := x[i] * inv
		if w != nil {
			v *= w[i]
		}
		dst[i] = v
	}
}

func softmax(x []float32) {
	// Leading -Inf entries (the positions before a sliding window) vary with
	// how a sequence was split into passes: the vector sum starts after them,
	// so that it, and every probability, does not depend on their number.
	f := 0
	for f < len(x) && math.IsInf(float64(x[f]), -1) {
		f++
	}
	clear(x[:f])
	if x = x[f:]; len(x) == 0 {
		return
	}
	n := vecLen(len(x))
	if n == 0 {
		softmaxGeneric(x)
		return
	}
	mx := maxNEON(&x[0], n)
	for _, v := range x[n:] {
		mx = max(mx, v)
	}
	if math.IsInf(float64(mx), -1) {
		clear(x)
		return
	}
	sum := expSumNEON(&x[0], n, mx)
	for i := n; i < len(x); i++ {
		x[i] = expf(x[i] - mx)
		sum += x[i]
	}
	scale(x, 1/sum)
}

func siluMul(dst, gate, up []float32) {
	n := vecLen(len(gate))
	if n > 0 {
		siluMulNEON(&dst[0], &gate[0], &up[0], n)
	}
	siluMulGeneric(dst[n:], gate[n:], up[n:])
}

func geluTanhMul(dst, gate, up []float32) {
	n := vecLen(len(gate))
	if n > 0 {
		geluTanhMulNEON(&dst[0], &gate[0], &up[0], n)
	}
	geluTanhMulGeneric(dst[n:], gate[n:], up[n:])
}

func add(dst, a, b []float32) {
	n := vecLen(len(a))
	if n > 0 {
		addNEON(&dst[0], &a[0], &b[0], n)
	}
	addGeneric(dst[n:], a[n:], b[n:])
}

func scale(x []float32, s float32) {
	n := vecLen(len(x))
	if n > 0 {
		mulScaleNEON(&x[0], &x[0], nil, n, s)
	}
	scaleGeneric(x[n:], s)
}

func softCap(x []float32, cap float32) { softCapGeneric(x, cap) }

func rope(x1, x2, cos, sin []float32) {
	n := vecLen(len(x1))
	if n > 0 {
		ropeNEON(&x1[0], &x2[0], &cos[0], &sin[0], n)
	}
	ropeGeneric(x1[n:], x2[n:], cos[n:], sin[n:])
}

func dequantizeRow(t WeightType, row []byte, dst []float32) {
	switch {
	case !useNEON || len(dst) == 0:
		dequantizeRowGeneric(t, row, dst)
	case t == F32:
		copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(row))), len(dst)))
	case t == F16:
		f16ToF32Slice(dst, unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(row))), len(dst)))
	case t == BF16:
		src := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(row))), len(dst))
		n := vecLen(len(dst))
		if n > 0 {
			bf16ToF32NEON(&dst[0], &src[0], n)
		}
		for i := n; i < len(dst); i++ {
			dst[i] = bf16ToF32(src[i])
		}
	default:
		dequantizeRowGeneric(t, row, dst)
	}
}
