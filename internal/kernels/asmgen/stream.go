//go:build asmgen

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func genDot() {
	text("dotAVX512", NOSPLIT, "func(a, b *float32, n16 int) float32")
	Doc("dotAVX512 returns the dot product of the first n16 values (a multiple of 16).")
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param("n16"), GP64())
	dotF32Body(a, b, n)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}

// dotF32Body leaves in X0 the dot product of the n values (a multiple of 16)
// at a and b, advancing a and b and counting n down: four accumulators over
// 64 values, then one over 16, then their sum. dotAVX512 and dotsAVX512 share
// it, so a batched dot equals a single one bit for bit. It defines the labels
// loop64, loop16 and sum.
func dotF32Body(a, b, n Register) {
	for i := 0; i < 4; i++ {
		VXORPS(zr[i], zr[i], zr[i])
	}
	Label("loop64")
	CMPQ(n, U8(64))
	JL(LabelRef("loop16"))
	for i := 0; i < 4; i++ {
		VMOVUPS(Mem{Base: a, Disp: 64 * i}, zr[4+i])
		VFMADD231PS(Mem{Base: b, Disp: 64 * i}, zr[4+i], zr[i])
	}
	ADDQ(U32(256), a)
	ADDQ(U32(256), b)
	SUBQ(U8(64), n)
	JMP(LabelRef("loop64"))
	Label("loop16")
	CMPQ(n, U8(16))
	JL(LabelRef("sum"))
	VMOVUPS(Mem{Base: a}, Z4)
	VFMADD231PS(Mem{Base: b}, Z4, Z0)
	ADDQ(U8(64), a)
	ADDQ(U8(64), b)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop16"))
	Label("sum")
	VADDPS(Z1, Z0, Z0)
	VADDPS(Z3, Z2, Z2)
	VADDPS(Z2, Z0, Z0)
	hsum(Z0, Z1)
}

func genAxpy() {
	text("axpyAVX512", NOSPLIT, "func(alpha float32, x, y *float32, n16 int)")
	Doc("axpyAVX512 computes y += alpha*x over the first n16 values (a multiple of 16).")
	VBROADCASTSS(NewParamAddr("alpha", 0), Z0)
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n16"), GP64())
	Label("loop")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VMOVUPS(Mem{Base: y}, Z1)
	VFMADD231PS(Mem{Base: x}, Z0, Z1)
	VMOVUPS(Z1, Mem{Base: y})
	ADDQ(U8(64), x)
	ADDQ(U8(64), y)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

func genDotF16() {
	text("dotF16AVX512", NOSPLIT, "func(a *float32, b *uint16, n16 int) float32")
	Doc("dotF16AVX512 returns sum a[i]*f16(b[i]) over the first n16 values (a multiple of 16).")
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param("n16"), GP64())
	VXORPS(Z0, Z0, Z0)
	VXORPS(Z1, Z1, Z1)
	Label("loop32")
	CMPQ(n, U8(32))
	JL(LabelRef("loop16"))
	VCVTPH2PS(Mem{Base: b}, Z2)
	VCVTPH2PS(Mem{Base: b, Disp: 32}, Z3)
	VFMADD231PS(Mem{Base: a}, Z2, Z0)
	VFMADD231PS(Mem{Base: a, Disp: 64}, Z3, Z1)
	ADDQ(U32(128), a)
	ADDQ(U8(64), b)
	SUBQ(U8(32), n)
	JMP(LabelRef("loop32"))
	Label("loop16")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: b}, Z2)
	VFMADD231PS(Mem{Base: a}, Z2, Z0)
	Label("done")
	VADDPS(Z1, Z0, Z0)
	hsum(Z0, Z1)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}

func genAxpyF16() {
	text("axpyF16AVX512", NOSPLIT, "func(alpha float32, x *uint16, y *float32, n16 int)")
	Doc("axpyF16AVX512 computes y += alpha*f16(x) over the first n16 values (a multiple of 16).")
	VBROADCASTSS(NewParamAddr("alpha", 0), Z0)
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n16"), GP64())
	Label("loop")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: x}, Z2)
	VMOVUPS(Mem{Base: y}, Z1)
	VFMADD231PS(Z2, Z0, Z1)
	VMOVUPS(Z1, Mem{Base: y})
	ADDQ(U8(32), x)
	ADDQ(U8(64), y)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

func genCvt() {
	text("f32ToF16AVX512", NOSPLIT, "func(dst *uint16, src *float32, n16 int)")
	Doc("f32ToF16AVX512 converts n16 values (a multiple of 16), rounding to nearest even.")
	d := Load(Param("dst"), GP64())
	s := Load(Param("src"), GP64())
	n := Load(Param("n16"), GP64())
	Label("loop")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VMOVUPS(Mem{Base: s}, Z0)
	// Convert into a register, then store: 1.4x faster than the
	// memory-destination form on this Zen 5 (BenchmarkRowKernels/F32ToF16).
	VCVTPS2PH(U8(0), Z0, Y1)
	VMOVDQU(Y1, Mem{Base: d})
	ADDQ(U8(64), s)
	ADDQ(U8(32), d)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	text("f16ToF32AVX512", NOSPLIT, "func(dst *float32, src *uint16, n16 int)")
	Doc("f16ToF32AVX512 converts n16 values (a multiple of 16).")
	d = Load(Param("dst"), GP64())
	s = Load(Param("src"), GP64())
	n = Load(Param("n16"), GP64())
	Label("loop")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: s}, Z0)
	VMOVUPS(Z0, Mem{Base: d})
	ADDQ(U8(32), s)
	ADDQ(U8(64), d)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// expConsts is a table of float32 constants for expZ, broadcast into
// Z16..Z27 by loadExpConsts.
var expConsts = []float32{
	1.4426950408889634, // Z16 log2(e)
	0.693359375,        // Z17 ln2 high part
	-2.12194440e-4,     // Z18 ln2 low part
	1.0 / 720,          // Z19
	1.0 / 120,          // Z20
	1.0 / 24,           // Z21
	1.0 / 6,            // Z22
	0.5,                // Z23
	1,                  // Z24
	-104,               // Z25 below this exp is 0 in float32
	88.7,               // Z26 above this exp overflows
	0.7978845608028654, // Z27 sqrt(2/pi)
	0.044715,           // Z28
}

func loadExpConsts(tbl Mem) {
	for i := range expConsts {
		VBROADCASTSS(tbl.Offset(4*i), zr[16+i])
	}
}

// expZ replaces z with exp(z) (relative error about 2e-7; 0 below -104,
// +Inf-free clamp above 88.7), using t1, t2 as scratch.
func expZ(z, t1, t2 VecPhysical) {
	VMAXPS(Z25, z, z)
	VMINPS(Z26, z, z)
	VMULPS(Z16, z, t1)
	VRNDSCALEPS(U8(0), t1, t1) // n = round(x*log2e)
	VFNMADD231PS(Z17, t1, z)   // r = x - n*ln2hi
	VFNMADD231PS(Z18, t1, z)   // r -= n*ln2lo
	VMOVAPS(Z19, t2)
	VFMADD213PS(Z20, z, t2)
	VFMADD213PS(Z21, z, t2)
	VFMADD213PS(Z22, z, t2)
	VFMADD213PS(Z23, z, t2)
	VFMADD213PS(Z24, z, t2)
	VFMADD213PS(Z24, z, t2) // p = 1 + r(1 + r(1/2 + ...))
	VSCALEFPS(t1, t2, z)    // p * 2^n
}

// genElementwise emits the row kernels of the decoder step. Each handles
// the first n16 values (a multiple of 16); Go handles the tail.
func genElementwise() {
	tbl := GLOBL("expConsts", RODATA|NOPTR)
	for i, c := range expConsts {
		DATA(4*i, F32(c))
	}

	text("maxAVX512", NOSPLIT, "func(x *float32, n16 int) float32")
	Doc("maxAVX512 returns the largest of n16 values (n16 >= 16, a multiple of 16).")
	x := Load(Param("x"), GP64())
	n := Load(Param("n16"), GP64())
	VMOVUPS(Mem{Base: x}, Z0)
	Label("loop")
	VMAXPS(Mem{Base: x}, Z0, Z0)
	ADDQ(U8(64), x)
	SUBQ(U8(16), n)
	JNZ(LabelRef("loop"))
	VEXTRACTF32X8(U8(1), Z0, Y1)
	VMAXPS(Y1, Y0, Y0)
	VEXTRACTF128(U8(1), Y0, X1)
	VMAXPS(X1, X0, X0)
	VPERMILPD(U8(1), X0, X1)
	VMAXPS(X1, X0, X0)
	VMOVSHDUP(X0, X1)
	VMAXSS(X1, X0, X0)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()

	text("expSumAVX512", NOSPLIT, "func(x *float32, n16 int, sub float32) float32")
	Doc("expSumAVX512 replaces x[i] with exp(x[i]-sub) and returns their sum.")
	x = Load(Param("x"), GP64())
	n = Load(Param("n16"), GP64())
	VBROADCASTSS(NewParamAddr("sub", 16), Z8)
	loadExpConsts(tbl)
	VXORPS(Z9, Z9, Z9)
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	VMOVUPS(Mem{Base: x}, Z0)
	VSUBPS(Z8, Z0, Z0)
	expZ(Z0, Z1, Z2)
	VMOVUPS(Z0, Mem{Base: x})
	VADDPS(Z0, Z9, Z9)
	ADDQ(U8(64), x)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	hsum(Z9, Z1)
	VZEROUPPER()
	Store(X9, ReturnIndex(0))
	RET()

	for _, gelu := range []bool{false, true} {
		name := "siluMulAVX512"
		if gelu {
			name = "geluTanhMulAVX512"
		}
		text(name, NOSPLIT, "func(dst, gate, up *float32, n16 int)")
		if gelu {
			Doc(name + " computes dst = gelu_tanh(gate)*up = gate*sigmoid(2*sqrt(2/pi)*(gate+0.044715*gate^3))*up.")
		} else {
			Doc(name + " computes dst = gate*sigmoid(gate)*up.")
		}
		d := Load(Param("dst"), GP64())
		g := Load(Param("gate"), GP64())
		u := Load(Param("up"), GP64())
		n := Load(Param("n16"), GP64())
		loadExpConsts(tbl)
		Label("loop")
		TESTQ(n, n)
		JZ(LabelRef("done"))
		VMOVUPS(Mem{Base: g}, Z0) // g
		if gelu {
			VMULPS(Z0, Z0, Z1)      // g²
			VMULPS(Z28, Z1, Z1)     // 0.044715 g²
			VFMADD213PS(Z0, Z0, Z1) // g + 0.044715 g³
			VMULPS(Z27, Z1, Z1)     // z
			VADDPS(Z1, Z1, Z1)      // 2z
			VXORPS(Z3, Z3, Z3)
			VSUBPS(Z1, Z3, Z3) // -2z
		} else {
			VXORPS(Z3, Z3, Z3)
			VSUBPS(Z0, Z3, Z3) // -g
		}
		expZ(Z3, Z1, Z2)
		VADDPS(Z24, Z3, Z3) // 1 + exp(-a)
		VDIVPS(Z3, Z0, Z0)  // g / (1 + exp(-a))
		VMULPS(Mem{Base: u}, Z0, Z0)
		VMOVUPS(Z0, Mem{Base: d})
		ADDQ(U8(64), d)
		ADDQ(U8(64), g)
		ADDQ(U8(64), u)
		SUBQ(U8(16), n)
		JMP(LabelRef("loop"))
		Label("done")
		VZEROUPPER()
		RET()
	}

	text("mulScaleAVX512", NOSPLIT, "func(dst, x, w *float32, n16 int, s float32)")
	Doc("mulScaleAVX512 computes dst = x*s*w (w may be nil: dst = x*s).")
	d := Load(Param("dst"), GP64())
	x = Load(Param("x"), GP64())
	w := Load(Param("w"), GP64())
	n = Load(Param("n16"), GP64())
	VBROADCASTSS(NewParamAddr("s", 32), Z8)
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	VMULPS(Mem{Base: x}, Z8, Z0)
	TESTQ(w, w)
	JZ(LabelRef("store"))
	VMULPS(Mem{Base: w}, Z0, Z0)
	ADDQ(U8(64), w)
	Label("store")
	VMOVUPS(Z0, Mem{Base: d})
	ADDQ(U8(64), d)
	ADDQ(U8(64), x)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	text("addAVX512", NOSPLIT, "func(dst, a, b *float32, n16 int)")
	Doc("addAVX512 computes dst = a + b.")
	d = Load(Param("dst"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n = Load(Param("n16"), GP64())
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	VMOVUPS(Mem{Base: a}, Z0)
	VADDPS(Mem{Base: b}, Z0, Z0)
	VMOVUPS(Z0, Mem{Base: d})
	ADDQ(U8(64), d)
	ADDQ(U8(64), a)
	ADDQ(U8(64), b)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// genRoPE emits ropeAVX512(x1, x2, cos, sin, n16): for i < n16 (a multiple
// of 16), (x1[i], x2[i]) becomes (x1*cos - x2*sin, x2*cos + x1*sin), each
// product rounded before the sum, as ropeGeneric computes it.
func genRoPE() {
	text("ropeAVX512", NOSPLIT, "func(x1, x2, cos, sin *float32, n16 int)")
	Doc("ropeAVX512 rotates n16 pairs (x1[i], x2[i]) by the angles of cos and sin (see genRoPE).")
	x1 := Load(Param("x1"), GP64())
	x2 := Load(Param("x2"), GP64())
	c := Load(Param("cos"), GP64())
	s := Load(Param("sin"), GP64())
	n := Load(Param("n16"), GP64())
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	VMOVUPS(Mem{Base: x1}, Z0)
	VMOVUPS(Mem{Base: x2}, Z1)
	VMOVUPS(Mem{Base: c}, Z2)
	VMOVUPS(Mem{Base: s}, Z3)
	VMULPS(Z2, Z0, Z4) // a*cos
	VMULPS(Z3, Z1, Z5) // b*sin
	VSUBPS(Z5, Z4, Z4)
	VMULPS(Z2, Z1, Z6) // b*cos
	VMULPS(Z3, Z0, Z7) // a*sin
	VADDPS(Z7, Z6, Z6)
	VMOVUPS(Z4, Mem{Base: x1})
	VMOVUPS(Z6, Mem{Base: x2})
	ADDQ(U8(64), x1)
	ADDQ(U8(64), x2)
	ADDQ(U8(64), c)
	ADDQ(U8(64), s)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
