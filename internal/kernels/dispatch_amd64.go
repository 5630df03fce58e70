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

// rowSet is the row kernels of one vector ISA: attention's batched dots
// and axpys, and the element-wise kernels of a decoder step, each taking
// whole vectors (lanes values).
type rowSet struct {
	lanes       int
	dots        func(out *float32, q *float32, k *float32, ld int, n int, rows int)
	dotsF16X    [5]func(out *float32, ldo int, q *float32, ldq int, k *uint16, ld int, n int, rows int) // [c]: c query vectors
	axpysF32    func(y *float32, ldy int, p *float32, ldp int, v *float32, ld int, n int, rows int)
	axpysF16X   [5]func(y *float32, ldy int, p *float32, ldp int, v *uint16, ld int, n int, rows int)
	max         func(x *float32, n int) float32
	expSum      func(x *float32, n int, sub float32) float32
	siluMul     func(dst, gate, up *float32, n int)
	geluTanhMul func(dst, gate, up *float32, n int)
	mulScale    func(dst, x, w *float32, n int, s float32)
	add         func(dst, a, b *float32, n int)
	rope        func(x1, x2, cos, sin *float32, n int)
	bf16ToF32   func(dst *float32, src *uint16, n int)
}

var (
	rowsAVX512 = rowSet{lanes: 16, dots: dotsAVX512, axpysF32: axpysF32x1,
		dotsF16X:  [5]func(out *float32, ldo int, q *float32, ldq int, k *uint16, ld int, n int, rows int){nil, dotsF16x1, dotsF16x2, dotsF16x3, dotsF16x4},
		axpysF16X: [5]func(y *float32, ldy int, p *float32, ldp int, v *uint16, ld int, n int, rows int){nil, axpysF16x1, axpysF16x2, axpysF16x3, axpysF16x4},
		max:       maxAVX512, expSum: expSumAVX512, siluMul: siluMulAVX512, geluTanhMul: geluTanhMulAVX512,
		mulScale: mulScaleAVX512, add: addAVX512, rope: ropeAVX512, bf16ToF32: bf16ToF32AVX512}
	rowsAVX2 = rowSet{lanes: 8, dots: dotsAVX2, axpysF32: axpysF32x1AVX2,
		dotsF16X:  [5]func(out *float32, ldo int, q *float32, ldq int, k *uint16, ld int, n int, rows int){nil, dotsF16x1AVX2, dotsF16x2AVX2, dotsF16x3AVX2, dotsF16x4AVX2},
		axpysF16X: [5]func(y *float32, ldy int, p *float32, ldp int, v *uint16, ld int, n int, rows int){nil, axpysF16x1AVX2, axpysF16x2AVX2, axpysF16x3AVX2, axpysF16x4AVX2},
		max:       maxAVX2, expSum: expSumAVX2, siluMul: siluMulAVX2, geluTanhMul: geluTanhMulAVX2,
		mulScale: mulScaleAVX2, add: addAVX2, rope: ropeAVX2, bf16ToF32: bf16ToF32AVX2}
)

// rowKernels returns the row kernels of the route in use (nil: pure Go).
func rowKernels() *rowSet {
	switch {
	case useAVX512:
		return &rowsAVX512
	case useAVX2:
		return &rowsAVX2
	}
	return nil
}

// The batched row kernels take the assembly when every row is whole vectors
// (attention head dimensions), else call the row kernels per row.
func dots(out, q, k []float32, ld int) {
	if rk, n := rowKernels(), len(q); rk != nil && n > 0 && n%rk.lanes == 0 {
		rk.dots(&out[0], &q[0], &k[0], 4*ld, n, len(out))
		return
	}
	dotsGeneric(out, q, k, ld)
}

func dotsF16(out, q []float32, k []uint16, ld int) {
	dotsF16N(out, 0, len(out), q, 0, 1, len(q), k, ld)
}

func axpys(y, p, v []float32, ld int) {
	if rk, n := rowKernels(), len(y); rk != nil && n%rk.lanes == 0 {
		rk.axpysF32(&y[0], 0, &p[0], 0, &v[0], 4*ld, n, len(p))
		return
	}
	axpysGeneric(y, p, v, ld)
}

func axpysF16(y, p []float32, v []uint16, ld int) {
	axpysF16N(y, 0, len(y), p, 0, 1, len(p), v, ld)
}

// dotsF16N and axpysF16N take up to 4 query vectors (heads) at a time.
func dotsF16N(out []float32, ldo, rows int, q []float32, ldq, nq, d int, k []uint16, ld int) {
	rk := rowKernels()
	if rk == nil || d == 0 || d%rk.lanes != 0 {
		dotsF16NGeneric(out, ldo, rows, q, ldq, nq, d, k, ld)
		return
	}
	for qi := 0; qi < nq; qi += 4 {
		c := min(4, nq-qi)
		rk.dotsF16X[c](&out[qi*ldo], 4*ldo, &q[qi*ldq], 4*ldq, &k[0], 2*ld, d, rows)
	}
}

func axpysF16N(y []float32, ldy, d int, p []float32, ldp, nq, rows int, v []uint16, ld int) {
	rk := rowKernels()
	if rk == nil || d%rk.lanes != 0 {
		axpysF16NGeneric(y, ldy, d, p, ldp, nq, rows, v, ld)
		return
	}
	for qi := 0; qi < nq; qi += 4 {
		c := min(4, nq-qi)
		rk.axpysF16X[c](&y[qi*ldy], 4*ldy, &p[qi*ldp], 4*ldp, &v[0], 2*ld, d, rows)
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
	n := vecLen(len(x))
	if n == 0 {
		rmsNormGeneric(dst, x, w, eps)
		return
	}
	ss := dot(x, x)
	inv := float32(1 / math.Sqrt(float64(ss/float32(len(x))+eps)))
	var wp *float32
	if w != nil {
		wp = &w[0]
	}
	rowKernels().mulScale(&dst[0], &x[0], wp, n, inv)
	for i := n; i < len(x); i++ {
		v := x[i] * inv
		if w != nil {
			v *= w[i]
		}
		dst[i] = v
	}
}

func softmax(x []float32) {
	n := vecLen(len(x))
	if n == 0 {
		softmaxGeneric(x)
		return
	}
	rk := rowKernels()
	mx := rk.max(&x[0], n)
	for _, v := range x[n:] {
		mx = max(mx, v)
	}
	if math.IsInf(float64(mx), -1) {
		clear(x)
		return
	}
	sum := rk.expSum(&x[0], n, mx)
	for i := n; i < len(x); i++ {
		x[i] = expf(x[i] - mx)
		sum += x[i]
	}
	scale(x, 1/sum)
}

// vecLen is how many leading values the row kernels' assembly takes: whole
// vectors of the route's ISA, or none in pure Go.
func vecLen(n int) int {
	rk := rowKernels()
	if rk == nil {
		return 0
	}
	return n / rk.lanes * rk.lanes
}

func siluMul(dst, gate, up []float32) {
	n := vecLen(len(gate))
	if n > 0 {
		rowKernels().siluMul(&dst[0], &gate[0], &up[0], n)
	}
	siluMulGeneric(dst[n:], gate[n:], up[n:])
}

func geluTanhMul(dst, gate, up []float32) {
	n := vecLen(len(gate))
	if n > 0 {
		rowKernels().geluTanhMul(&dst[0], &gate[0], &up[0], n)
	}
	geluTanhMulGeneric(dst[n:], gate[n:], up[n:])
}

func add(dst, a, b []float32) {
	n := vecLen(len(a))
	if n > 0 {
		rowKernels().add(&dst[0], &a[0], &b[0], n)
	}
	addGeneric(dst[n:], a[n:], b[n:])
}

func scale(x []float32, s float32) {
	n := vecLen(len(x))
	if n > 0 {
		rowKernels().mulScale(&x[0], &x[0], nil, n, s)
	}
	scaleGeneric(x[n:], s)
}

func softCap(x []float32, cap float32) { softCapGeneric(x, cap) }

func rope(x1, x2, cos, sin []float32) {
	n := vecLen(len(x1))
	if n > 0 {
		rowKernels().rope(&x1[0], &x2[0], &cos[0], &sin[0], n)
	}
	ropeGeneric(x1[n:], x2[n:], cos[n:], sin[n:])
}

// bf16ToF32Slice converts bfloat16 bits in src to float32 in dst (exact).
func bf16ToF32Slice(dst []float32, src []uint16) {
	n := vecLen(len(dst))
	if n > 0 {
		rowKernels().bf16ToF32(&dst[0], &src[0], n)
	}
	for i := n; i < len(dst); i++ {
		dst[i] = bf16ToF32(src[i])
	}
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
		bf16ToF32Slice(dst, unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(row))), len(dst)))
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
