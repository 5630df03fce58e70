//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"
)

//go:generate go run -tags asmgen ./asmgen -pkg kernels -out kernels_amd64.s -stubs kernels_amd64_stubs.go

// useAVX512, useAVX2, useVNNI and useAVXVNNI select the kernels of the
// route in use (routes_amd64.go sets them at start-up and in UseRoute):
// useAVX512 the AVX-512 assembly (kernels_amd64.s), useAVX2 the 8-lane
// AVX2+FMA+F16C assembly, useVNNI (with useAVX512) the int8 dot-product
// kernels (VPDPBUSD) of the q8/q4 matrix products, useAVXVNNI (with useAVX2)
// their ymm form (AVX-VNNI) in the AVX2 int8 kernels (i8_amd64.go).
var useAVX512, useAVX2, useVNNI, useAVXVNNI bool

// Streaming kernels: the assembly takes whole vectors (16 lanes with
// AVX-512, 8 with AVX2), Go the tail.

func dot(a, b []float32) float32 {
	b = b[:len(a)]
	switch n := len(a); {
	case useAVX512 && n >= 16:
		n16 := n &^ 15
		return dotAVX512(&a[0], &b[0], n16) + dotGeneric(a[n16:], b[n16:])
	case useAVX2 && n >= 8:
		n8 := n &^ 7
		return dotAVX2(&a[0], &b[0], n8) + dotGeneric(a[n8:], b[n8:])
	}
	return dotGeneric(a, b)
}

// The batched row kernels take the assembly when every row is whole vectors
// (attention head dimensions), else call the row kernels per row.
func dots(out, q, k []float32, ld int) {
	if n := len(q); useAVX512 && n > 0 && n%16 == 0 {
		dotsAVX512(&out[0], &q[0], &k[0], 4*ld, n, len(out))
		return
	}
	dotsGeneric(out, q, k, ld)
}

func dotsF16(out, q []float32, k []uint16, ld int) {
	dotsF16N(out, 0, len(out), q, 0, 1, len(q), k, ld)
}

func axpys(y, p, v []float32, ld int) {
	if n := len(y); useAVX512 && n%16 == 0 {
		axpysF32x1(&y[0], 0, &p[0], 0, &v[0], 4*ld, n, len(p))
		return
	}
	axpysGeneric(y, p, v, ld)
}

func axpysF16(y, p []float32, v []uint16, ld int) {
	axpysF16N(y, 0, len(y), p, 0, 1, len(p), v, ld)
}

// dotsF16X[c] and axpysF16X[c] take c query vectors (heads) at a time.
var (
	dotsF16X  = [...]func(out *float32, ldo int, q *float32, ldq int, k *uint16, ld int, n16 int, rows int){nil, dotsF16x1, dotsF16x2, dotsF16x3, dotsF16x4}
	axpysF16X = [...]func(y *float32, ldy int, p *float32, ldp int, v *uint16, ld int, n16 int, rows int){nil, axpysF16x1, axpysF16x2, axpysF16x3, axpysF16x4}
)

func dotsF16N(out []float32, ldo, rows int, q []float32, ldq, nq, d int, k []uint16, ld int) {
	if !useAVX512 || d == 0 || d%16 != 0 {
		dotsF16NGeneric(out, ldo, rows, q, ldq, nq, d, k, ld)
		return
	}
	for qi := 0; qi < nq; qi += 4 {
		c := min(4, nq-qi)
		dotsF16X[c](&out[qi*ldo], 4*ldo, &q[qi*ldq], 4*ldq, &k[0], 2*ld, d, rows)
	}
}

func axpysF16N(y []float32, ldy, d int, p []float32, ldp, nq, rows int, v []uint16, ld int) {
	if !useAVX512 || d%16 != 0 {
		axpysF16NGeneric(y, ldy, d, p, ldp, nq, rows, v, ld)
		return
	}
	for qi := 0; qi < nq; qi += 4 {
		c := min(4, nq-qi)
		axpysF16X[c](&y[qi*ldy], 4*ldy, &p[qi*ldp], 4*ldp, &v[0], 2*ld, d, rows)
	}
}

func axpy(alpha float32, x, y []float32) {
	y = y[:len(x)]
	n := 0
	switch {
	case useAVX512 && len(x) >= 16:
		n = len(x) &^ 15
		axpyAVX512(alpha, &x[0], &y[0], n)
	case useAVX2 && len(x) >= 8:
		n = len(x) &^ 7
		axpyAVX2(alpha, &x[0], &y[0], n)
	}
	axpyGeneric(alpha, x[n:], y[n:])
}

func dotF16(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	switch n := len(a); {
	case useAVX512 && n >= 16:
		n16 := n &^ 15
		if n16 == n { // attention head dims: no tail call
			return dotF16AVX512(&a[0], &b[0], n)
		}
		return dotF16AVX512(&a[0], &b[0], n16) + dotF16Generic(a[n16:], b[n16:])
	case useAVX2 && n >= 8:
		n8 := n &^ 7
		return dotF16AVX2(&a[0], &b[0], n8) + dotF16Generic(a[n8:], b[n8:])
	}
	return dotF16Generic(a, b)
}

func axpyF16(alpha float32, x []uint16, y []float32) {
	y = y[:len(x)]
	n := 0
	switch {
	case useAVX512 && len(x) >= 16:
		n = len(x) &^ 15
		axpyF16AVX512(alpha, &x[0], &y[0], n)
	case useAVX2 && len(x) >= 8:
		n = len(x) &^ 7
		axpyF16AVX2(alpha, &x[0], &y[0], n)
	}
	if n < len(x) {
		axpyF16Generic(alpha, x[n:], y[n:])
	}
}

func f32ToF16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	n := 0
	switch {
	case useAVX512 && len(src) >= 16:
		n = len(src) &^ 15
		f32ToF16AVX512(&dst[0], &src[0], n)
	case useAVX2 && len(src) >= 8:
		n = len(src) &^ 7
		f32ToF16AVX2(&dst[0], &src[0], n)
	}
	f32ToF16SliceGeneric(dst[n:], src[n:])
}

func f16ToF32Slice(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	n := 0
	switch {
	case useAVX512 && len(src) >= 16:
		n = len(src) &^ 15
		f16ToF32AVX512(&dst[0], &src[0], n)
	case useAVX2 && len(src) >= 8:
		n = len(src) &^ 7
		f16ToF32AVX2(&dst[0], &src[0], n)
	}
	f16ToF32SliceGeneric(dst[n:], src[n:])
}

func rmsNorm(dst, x, w []float32, eps float32) {
	n16 := len(x) &^ 15
	if !useAVX512 || n16 == 0 {
		rmsNormGeneric(dst, x, w, eps)
		return
	}
	ss := dot(x, x)
	inv := float32(1 / math.Sqrt(float64(ss/float32(len(x))+eps)))
	var wp *float32
	if w != nil {
		wp = &w[0]
	}
	mulScaleAVX512(&dst[0], &x[0], wp, n16, inv)
	for i := n16; i < len(x); i++ {
		v := x[i] * inv
		if w != nil {
			v *= w[i]
		}
		dst[i] = v
	}
}

func softmax(x []float32) {
	n16 := len(x) &^ 15
	if !useAVX512 || n16 == 0 {
		softmaxGeneric(x)
		return
	}
	mx := maxAVX512(&x[0], n16)
	for _, v := range x[n16:] {
		mx = max(mx, v)
	}
	if math.IsInf(float64(mx), -1) {
		clear(x)
		return
	}
	sum := expSumAVX512(&x[0], n16, mx)
	for i := n16; i < len(x); i++ {
		x[i] = expf(x[i] - mx)
		sum += x[i]
	}
	scale(x, 1/sum)
}

// vecLen is how many leading values the AVX-512 routines take: whole
// vectors, or none without AVX-512.
func vecLen(n int) int {
	if !useAVX512 {
		return 0
	}
	return n &^ 15
}

func siluMul(dst, gate, up []float32) {
	n16 := vecLen(len(gate))
	if n16 > 0 {
		siluMulAVX512(&dst[0], &gate[0], &up[0], n16)
	}
	siluMulGeneric(dst[n16:], gate[n16:], up[n16:])
}

func geluTanhMul(dst, gate, up []float32) {
	n16 := vecLen(len(gate))
	if n16 > 0 {
		geluTanhMulAVX512(&dst[0], &gate[0], &up[0], n16)
	}
	geluTanhMulGeneric(dst[n16:], gate[n16:], up[n16:])
}

func add(dst, a, b []float32) {
	n16 := vecLen(len(a))
	if n16 > 0 {
		addAVX512(&dst[0], &a[0], &b[0], n16)
	}
	addGeneric(dst[n16:], a[n16:], b[n16:])
}

func scale(x []float32, s float32) {
	n16 := vecLen(len(x))
	if n16 > 0 {
		mulScaleAVX512(&x[0], &x[0], nil, n16, s)
	}
	scaleGeneric(x[n16:], s)
}

func softCap(x []float32, cap float32) { softCapGeneric(x, cap) }

func rope(x1, x2, cos, sin []float32) {
	n16 := vecLen(len(x1))
	if n16 > 0 {
		ropeAVX512(&x1[0], &x2[0], &cos[0], &sin[0], n16)
	}
	ropeGeneric(x1[n16:], x2[n16:], cos[n16:], sin[n16:])
}

func dequantizeRow(t WeightType, row []byte, dst []float32) {
	if !useAVX512 && !useAVX2 {
		dequantizeRowGeneric(t, row, dst)
		return
	}
	switch t {
	case F32:
		copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(row))), len(dst)))
	case F16:
		f16ToF32Slice(dst, unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(row))), len(dst)))
	case BF16:
		src := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(row))), len(dst))
		n := vecLen(len(dst))
		if n > 0 {
			bf16ToF32AVX512(&dst[0], &src[0], n)
		}
		for i := n; i < len(dst); i++ {
			dst[i] = bf16ToF32(src[i])
		}
	case Q8, Q4:
		cols := len(dst)
		nb := (cols + BlockSize - 1) / BlockSize
		full := cols / BlockSize
		dequantHead(t, dst, row, nb, full)
		if full < nb {
			dequantTail(t, row, nb, dst)
		}
	default:
		dequantizeRowGeneric(t, row, dst)
	}
}

// dequantHead dequantizes the first full blocks of a row of nb blocks.
func dequantHead(t WeightType, dst []float32, row []byte, nb, full int) {
	if full == 0 {
		return
	}
	switch {
	case useAVX512 && t == Q8:
		dequantQ8(&dst[0], &row[0], &row[2*nb], full)
	case useAVX512:
		dequantQ4(&dst[0], &row[0], &row[2*nb], full)
	case t == Q8:
		dequantQ8AVX2(&dst[0], &row[0], &row[2*nb], full)
	default:
		dequantQ4AVX2(&dst[0], &row[0], &row[2*nb], full)
	}
}

// dequantTail dequantizes the last, partial block of a row.
func dequantTail(t WeightType, row []byte, nb int, dst []float32) {
	b := nb - 1
	var tmp [BlockSize]float32
	dequantBlock(t, row, nb, b, tmp[:])
	copy(dst[b*BlockSize:], tmp[:])
}

// dequantBlock dequantizes block b of a row of nb blocks into dst[:32].
func dequantBlock(t WeightType, row []byte, nb, b int, dst []float32) {
	d := f16ToF32(binary.LittleEndian.Uint16(row[2*b:]))
	if t == Q8 {
		q := row[2*nb+b*BlockSize : 2*nb+(b+1)*BlockSize]
		for i := range BlockSize {
			dst[i] = d * float32(int8(q[i]))
		}
		return
	}
	q := row[2*nb+b*BlockSize/2 : 2*nb+(b+1)*BlockSize/2]
	for i := range BlockSize / 2 {
		dst[i] = d * float32(int8(q[i]&0xf)-8)
		dst[i+16] = d * float32(int8(q[i]>>4)-8)
	}
}
