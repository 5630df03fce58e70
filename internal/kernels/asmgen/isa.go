//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// isa is what a kernel body needs to know of a vector instruction set: the
// width of a vector, its registers, how its routines are named, and the
// few instructions whose form differs. A family written against it (dot,
// axpy, conversions, float tiles, row streams, dequantization) emits the
// same loop for AVX-512 and for AVX2; what differs between the two is data
// here, not a second copy of the body.
type isa struct {
	lanes int           // float32 lanes of a vector
	vr    []VecPhysical // the vector registers, all of them
	// suffix ends the names of the vector routines (dotAVX512, dotAVX2);
	// matSuffix those of the matrix ones, where AVX-512 came first and has
	// none (tileF32_1x2, rowStreamF16; tileF32AVX2_1x2, rowStreamF16AVX2).
	suffix, matSuffix string
}

var zr = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
	Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}

var yr = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}

var (
	// avx512 is AVX-512 F/BW/VL/DQ: 16 lanes in 32 ZMM registers.
	avx512 = isa{lanes: 16, vr: zr, suffix: "AVX512"}
	// avx2 is AVX2+FMA+F16C: 8 lanes in 16 YMM registers.
	avx2 = isa{lanes: 8, vr: yr, suffix: "AVX2", matSuffix: "AVX2"}
)

// bytes is the size of a vector.
func (s isa) bytes() int { return 4 * s.lanes }

// n is the name of a length parameter, a number of values that is a
// multiple of the lanes: n16, n8.
func (s isa) n() string { return fmt.Sprintf("n%d", s.lanes) }

// last is the highest vector register, the reductions' scratch.
func (s isa) last() VecPhysical { return s.vr[len(s.vr)-1] }

// half is the register of half the width of v (Y for Z, X for Y).
func (s isa) half(v VecPhysical) VecPhysical {
	if s.lanes == 16 {
		return v.AsY().(VecPhysical)
	}
	return v.AsX().(VecPhysical)
}

// splat sets every 32-bit lane of dst to c.
func (s isa) splat(c uint32, dst VecPhysical) {
	t := GP32()
	MOVL(U32(c), t)
	if s.lanes == 16 {
		VPBROADCASTD(t, dst)
		return
	}
	VMOVD(t, dst.AsX())
	VPBROADCASTD(dst.AsX(), dst)
}

// and computes dst = a & b.
func (s isa) and(a, b, dst VecPhysical) {
	if s.lanes == 16 {
		VPANDD(a, b, dst)
		return
	}
	VPAND(a, b, dst)
}

// broadcastF16 sets every lane of dst to the binary16 value at m, as float32.
func (s isa) broadcastF16(m Mem, dst VecPhysical) {
	t := GP32()
	MOVWLZX(m, t)
	if s.lanes == 16 {
		VPBROADCASTW(t, dst.AsY())
		VCVTPH2PS(dst.AsY(), dst)
		return
	}
	VMOVD(t, dst.AsX())
	VCVTPH2PS(dst.AsX(), dst.AsX())
	VBROADCASTSS(dst.AsX(), dst)
}

// hsum reduces v (a ZMM or YMM register) into the low lane of its X
// register by addition, clobbering t.
func hsum(v, t VecPhysical) {
	extract := VEXTRACTF128
	if v.Size() == 64 { // EVEX: v may be one of Z16-Z31
		extract = func(i, y, x Op) { VEXTRACTF32X4(i, y, x) }
	}
	hreduce(v, t, VADDPS, VADDSS, extract)
}

// hmax is hsum by maximum, for v and t below Z16.
func hmax(v, t VecPhysical) { hreduce(v, t, VMAXPS, VMAXSS, VEXTRACTF128) }

// hreduce folds v in halves with packed (the upper 128 bits of 256 taken
// with extract), then the last pair with scalar.
func hreduce(v, t VecPhysical, packed, scalar func(...Op), extract func(i, y, x Op)) {
	y, x := v.AsY(), v.AsX()
	if v.Size() == 64 {
		VEXTRACTF32X8(U8(1), v, t.AsY())
		packed(t.AsY(), y, y)
	}
	extract(U8(1), y, t.AsX())
	packed(t.AsX(), x, x)
	VPERMILPD(U8(1), x, t.AsX())
	packed(t.AsX(), x, x)
	VMOVSHDUP(x, t.AsX())
	scalar(t.AsX(), x, x)
}

// sumPairs adds the accumulators acc (a power of two of them) in pairs of
// neighbours, level by level ((a0+a1)+(a2+a3) for four), into acc[0], and
// returns it.
func sumPairs(acc []VecPhysical) VecPhysical {
	for len(acc) > 1 {
		var next []VecPhysical
		for i := 0; i < len(acc); i += 2 {
			VADDPS(acc[i+1], acc[i], acc[i])
			next = append(next, acc[i])
		}
		acc = next
	}
	return acc[0]
}

// imm is n as the smallest immediate the original routines wrote it with.
func imm(n int) Constant {
	if n < 128 {
		return U8(n)
	}
	return U32(n)
}

// weightSize is the bytes of one weight of a float type: F32, F16 or BF16.
func weightSize(wt string) int {
	if wt == "F32" {
		return 4
	}
	return 2
}

// loadWeights converts the weights of type wt at m (one vector's worth)
// into float32 lanes of dst.
func loadWeights(wt string, m Mem, dst VecPhysical) {
	switch wt {
	case "F32":
		VMOVUPS(m, dst)
	case "F16":
		VCVTPH2PS(m, dst)
	case "BF16":
		VPMOVZXWD(m, dst)
		VPSLLD(U8(16), dst, dst)
	}
}

// rowPointers loads the pointer parameter base and the stride parameter ld
// (shifted left by shift: elements to bytes) and returns n pointers ld
// apart, starting at base, and the stride.
func rowPointers(base, ld string, shift uint8, n int) ([]Register, Register) {
	p := make([]Register, n)
	p[0] = Load(Param(base), GP64())
	l := Load(Param(ld), GP64())
	if shift > 0 {
		SHLQ(U8(shift), l)
	}
	for i := 1; i < n; i++ {
		p[i] = GP64()
		LEAQ(Mem{Base: p[i-1], Index: l, Scale: 1}, p[i])
	}
	return p, l
}
