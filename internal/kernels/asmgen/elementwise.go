//go:build asmgen

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

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

// expTable is the GLOBL of expConsts.
var expTable Mem

// genElementwise emits the row kernels of the decoder step. Each handles
// the first n16 values (a multiple of 16); Go handles the tail.
func genElementwise() {
	expTable = GLOBL("expConsts", RODATA|NOPTR)
	for i, c := range expConsts {
		DATA(4*i, F32(c))
	}
	genMax()
	genExpSum()
	genGatedMul(false)
	genGatedMul(true)
	genMulScale()
	genAdd()
	genRoPE()
}

// vectorLoop emits a loop over n values (counted down by 16 per vector)
// whose body handles one vector at each of ptrs, which then move on by a
// vector; it ends at the label done.
func vectorLoop(n Register, ptrs []Register, body func()) {
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	body()
	for _, p := range ptrs {
		ADDQ(U8(64), p)
	}
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
}

func genMax() {
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
	hmax(Z0, Z1)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}

func genExpSum() {
	text("expSumAVX512", NOSPLIT, "func(x *float32, n16 int, sub float32) float32")
	Doc("expSumAVX512 replaces x[i] with exp(x[i]-sub) and returns their sum.")
	x := Load(Param("x"), GP64())
	n := Load(Param("n16"), GP64())
	VBROADCASTSS(NewParamAddr("sub", 16), Z8)
	loadExpConsts(expTable)
	VXORPS(Z9, Z9, Z9)
	vectorLoop(n, []Register{x}, func() {
		VMOVUPS(Mem{Base: x}, Z0)
		VSUBPS(Z8, Z0, Z0)
		expZ(Z0, Z1, Z2)
		VMOVUPS(Z0, Mem{Base: x})
		VADDPS(Z0, Z9, Z9)
	})
	hsum(Z9, Z1)
	VZEROUPPER()
	Store(X9, ReturnIndex(0))
	RET()
}

// genGatedMul emits siluMulAVX512, or with gelu geluTanhMulAVX512: the
// gated activation times up.
func genGatedMul(gelu bool) {
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
	loadExpConsts(expTable)
	vectorLoop(n, []Register{d, g, u}, func() {
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
	})
	VZEROUPPER()
	RET()
}

func genMulScale() {
	text("mulScaleAVX512", NOSPLIT, "func(dst, x, w *float32, n16 int, s float32)")
	Doc("mulScaleAVX512 computes dst = x*s*w (w may be nil: dst = x*s).")
	d := Load(Param("dst"), GP64())
	x := Load(Param("x"), GP64())
	w := Load(Param("w"), GP64())
	n := Load(Param("n16"), GP64())
	VBROADCASTSS(NewParamAddr("s", 32), Z8)
	vectorLoop(n, []Register{d, x}, func() {
		VMULPS(Mem{Base: x}, Z8, Z0)
		TESTQ(w, w)
		JZ(LabelRef("store"))
		VMULPS(Mem{Base: w}, Z0, Z0)
		ADDQ(U8(64), w)
		Label("store")
		VMOVUPS(Z0, Mem{Base: d})
	})
	VZEROUPPER()
	RET()
}

func genAdd() {
	text("addAVX512", NOSPLIT, "func(dst, a, b *float32, n16 int)")
	Doc("addAVX512 computes dst = a + b.")
	d := Load(Param("dst"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param("n16"), GP64())
	vectorLoop(n, []Register{d, a, b}, func() {
		VMOVUPS(Mem{Base: a}, Z0)
		VADDPS(Mem{Base: b}, Z0, Z0)
		VMOVUPS(Z0, Mem{Base: d})
	})
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
	vectorLoop(n, []Register{x1, x2, c, s}, func() {
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
	})
	VZEROUPPER()
	RET()
}
