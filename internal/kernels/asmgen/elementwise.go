//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// expConsts is a table of float32 constants for expZ, broadcast into
// Z16..Z28 by loadExpConsts on AVX-512; AVX2, whose 16 registers cannot spare
// them, reads them from expConstsAVX2 (each value in 8 lanes) as memory
// operands (expConst).
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

// loadExpConsts broadcasts expConsts into Z16..Z28 (AVX-512 only).
func loadExpConsts(s isa) {
	if s.lanes != 16 {
		return
	}
	for i := range expConsts {
		VBROADCASTSS(expTable.Offset(4*i), zr[16+i])
	}
}

// expConst is constant i of expConsts as an operand: its register on
// AVX-512 (loadExpConsts), its row of expConstsAVX2 on AVX2.
func (s isa) expConst(i int) Op {
	if s.lanes == 16 {
		return zr[16+i]
	}
	return expTableAVX2.Offset(32 * i)
}

// expZ replaces z with exp(z) (relative error about 2e-7; 0 below -104,
// +Inf-free clamp above 88.7), using t1, t2 as scratch. AVX2 has neither
// VRNDSCALEPS nor VSCALEFPS: it rounds with VROUNDPS, and multiplies by 2^n
// as 2^(n>>1) then 2^(n-(n>>1)) built in the exponent bits (both normal over
// the clamped range, and the second product rounds once, as VSCALEFPS
// does): the same results as AVX-512, bit for bit.
func expZ(s isa, z, t1, t2 VecPhysical) {
	c := s.expConst
	VMAXPS(c(9), z, z)
	VMINPS(c(10), z, z)
	VMULPS(c(0), z, t1)
	if s.lanes == 16 {
		VRNDSCALEPS(U8(0), t1, t1) // n = round(x*log2e)
	} else {
		VROUNDPS(U8(0), t1, t1)
	}
	VFNMADD231PS(c(1), t1, z) // r = x - n*ln2hi
	VFNMADD231PS(c(2), t1, z) // r -= n*ln2lo
	if s.lanes == 16 {
		VMOVAPS(Z19, t2)
	} else {
		VMOVUPS(c(3), t2)
	}
	VFMADD213PS(c(4), z, t2)
	VFMADD213PS(c(5), z, t2)
	VFMADD213PS(c(6), z, t2)
	VFMADD213PS(c(7), z, t2)
	VFMADD213PS(c(8), z, t2)
	VFMADD213PS(c(8), z, t2) // p = 1 + r(1 + r(1/2 + ...))
	if s.lanes == 16 {
		VSCALEFPS(t1, t2, z) // p * 2^n
		return
	}
	bias := expTableAVX2.Offset(32 * len(expConsts)) // int32 127
	VCVTPS2DQ(t1, t1)
	VPSRAD(U8(1), t1, z) // n1 = n>>1
	VPSUBD(z, t1, t1)    // n2 = n-n1
	VPADDD(bias, z, z)
	VPSLLD(U8(23), z, z) // 2^n1
	VMULPS(z, t2, t2)
	VPADDD(bias, t1, t1)
	VPSLLD(U8(23), t1, t1) // 2^n2
	VMULPS(t1, t2, z)
}

// expTable and expTableAVX2 are the GLOBLs of expConsts: as they are, and
// each value in 8 lanes followed by 8 lanes of the int32 127.
var expTable, expTableAVX2 Mem

// genElementwise emits the row kernels of the decoder step of an ISA. Each
// handles the first values, whole vectors (a multiple of the lanes); Go
// handles the tail.
func genElementwise(s isa) {
	if s.lanes == 16 {
		expTable = GLOBL("expConsts", RODATA|NOPTR)
		for i, c := range expConsts {
			DATA(4*i, F32(c))
		}
	} else {
		expTableAVX2 = GLOBL("expConstsAVX2", RODATA|NOPTR)
		for i, c := range expConsts {
			for l := range 8 {
				DATA(32*i+4*l, F32(c))
			}
		}
		for l := range 8 {
			DATA(32*len(expConsts)+4*l, U32(127))
		}
	}
	genMax(s)
	genExpSum(s)
	genGatedMul(s, false)
	genGatedMul(s, true)
	genMulScale(s)
	genAdd(s)
	genRoPE(s)
}

// vectorLoop emits a loop over n values (counted down by the lanes per
// vector) whose body handles one vector at each of ptrs, which then move on
// by a vector; it ends at the label done.
func vectorLoop(s isa, n Register, ptrs []Register, body func()) {
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	body()
	for _, p := range ptrs {
		ADDQ(U8(s.bytes()), p)
	}
	SUBQ(U8(s.lanes), n)
	JMP(LabelRef("loop"))
	Label("done")
}

func genMax(s isa) {
	name := "max" + s.suffix
	text(name, NOSPLIT, fmt.Sprintf("func(x *float32, %s int) float32", s.n()))
	Doc(fmt.Sprintf("%s returns the largest of %s values (%s >= %d, a multiple of %d).", name, s.n(), s.n(), s.lanes, s.lanes))
	v := s.vr
	x := Load(Param("x"), GP64())
	n := Load(Param(s.n()), GP64())
	VMOVUPS(Mem{Base: x}, v[0])
	Label("loop")
	VMAXPS(Mem{Base: x}, v[0], v[0])
	ADDQ(U8(s.bytes()), x)
	SUBQ(U8(s.lanes), n)
	JNZ(LabelRef("loop"))
	hmax(v[0], v[1])
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}

func genExpSum(s isa) {
	name := "expSum" + s.suffix
	text(name, NOSPLIT, fmt.Sprintf("func(x *float32, %s int, sub float32) float32", s.n()))
	Doc(name + " replaces x[i] with exp(x[i]-sub) and returns their sum.")
	v := s.vr
	x := Load(Param("x"), GP64())
	n := Load(Param(s.n()), GP64())
	VBROADCASTSS(NewParamAddr("sub", 16), v[8])
	loadExpConsts(s)
	VXORPS(v[9], v[9], v[9])
	vectorLoop(s, n, []Register{x}, func() {
		VMOVUPS(Mem{Base: x}, v[0])
		VSUBPS(v[8], v[0], v[0])
		expZ(s, v[0], v[1], v[2])
		VMOVUPS(v[0], Mem{Base: x})
		VADDPS(v[0], v[9], v[9])
	})
	hsum(v[9], v[1])
	VZEROUPPER()
	Store(X9, ReturnIndex(0))
	RET()
}

// genGatedMul emits siluMul<suffix>, or with gelu geluTanhMul<suffix>: the
// gated activation times up.
func genGatedMul(s isa, gelu bool) {
	name := "siluMul" + s.suffix
	if gelu {
		name = "geluTanhMul" + s.suffix
	}
	text(name, NOSPLIT, fmt.Sprintf("func(dst, gate, up *float32, %s int)", s.n()))
	if gelu {
		Doc(name + " computes dst = gelu_tanh(gate)*up = gate*sigmoid(2*sqrt(2/pi)*(gate+0.044715*gate^3))*up.")
	} else {
		Doc(name + " computes dst = gate*sigmoid(gate)*up.")
	}
	v, c := s.vr, s.expConst
	d := Load(Param("dst"), GP64())
	g := Load(Param("gate"), GP64())
	u := Load(Param("up"), GP64())
	n := Load(Param(s.n()), GP64())
	loadExpConsts(s)
	vectorLoop(s, n, []Register{d, g, u}, func() {
		VMOVUPS(Mem{Base: g}, v[0]) // g
		if gelu {
			VMULPS(v[0], v[0], v[1])      // g²
			VMULPS(c(12), v[1], v[1])     // 0.044715 g²
			VFMADD213PS(v[0], v[0], v[1]) // g + 0.044715 g³
			VMULPS(c(11), v[1], v[1])     // z
			VADDPS(v[1], v[1], v[1])      // 2z
			VXORPS(v[3], v[3], v[3])
			VSUBPS(v[1], v[3], v[3]) // -2z
		} else {
			VXORPS(v[3], v[3], v[3])
			VSUBPS(v[0], v[3], v[3]) // -g
		}
		expZ(s, v[3], v[1], v[2])
		VADDPS(c(8), v[3], v[3]) // 1 + exp(-a)
		VDIVPS(v[3], v[0], v[0]) // g / (1 + exp(-a))
		VMULPS(Mem{Base: u}, v[0], v[0])
		VMOVUPS(v[0], Mem{Base: d})
	})
	VZEROUPPER()
	RET()
}

func genMulScale(s isa) {
	name := "mulScale" + s.suffix
	text(name, NOSPLIT, fmt.Sprintf("func(dst, x, w *float32, %s int, s float32)", s.n()))
	Doc(name + " computes dst = x*s*w (w may be nil: dst = x*s).")
	v := s.vr
	d := Load(Param("dst"), GP64())
	x := Load(Param("x"), GP64())
	w := Load(Param("w"), GP64())
	n := Load(Param(s.n()), GP64())
	VBROADCASTSS(NewParamAddr("s", 32), v[8])
	vectorLoop(s, n, []Register{d, x}, func() {
		VMULPS(Mem{Base: x}, v[8], v[0])
		TESTQ(w, w)
		JZ(LabelRef("store"))
		VMULPS(Mem{Base: w}, v[0], v[0])
		ADDQ(U8(s.bytes()), w)
		Label("store")
		VMOVUPS(v[0], Mem{Base: d})
	})
	VZEROUPPER()
	RET()
}

func genAdd(s isa) {
	name := "add" + s.suffix
	text(name, NOSPLIT, fmt.Sprintf("func(dst, a, b *float32, %s int)", s.n()))
	Doc(name + " computes dst = a + b.")
	v := s.vr
	d := Load(Param("dst"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param(s.n()), GP64())
	vectorLoop(s, n, []Register{d, a, b}, func() {
		VMOVUPS(Mem{Base: a}, v[0])
		VADDPS(Mem{Base: b}, v[0], v[0])
		VMOVUPS(v[0], Mem{Base: d})
	})
	VZEROUPPER()
	RET()
}

// genRoPE emits rope<suffix>(x1, x2, cos, sin, n): for i < n (a multiple
// of the lanes), (x1[i], x2[i]) becomes (x1*cos - x2*sin, x2*cos + x1*sin),
// each product rounded before the sum, as ropeGeneric computes it.
func genRoPE(s isa) {
	name := "rope" + s.suffix
	text(name, NOSPLIT, fmt.Sprintf("func(x1, x2, cos, sin *float32, %s int)", s.n()))
	Doc(fmt.Sprintf("%s rotates %s pairs (x1[i], x2[i]) by the angles of cos and sin (see genRoPE).", name, s.n()))
	v := s.vr
	x1 := Load(Param("x1"), GP64())
	x2 := Load(Param("x2"), GP64())
	c := Load(Param("cos"), GP64())
	sn := Load(Param("sin"), GP64())
	n := Load(Param(s.n()), GP64())
	vectorLoop(s, n, []Register{x1, x2, c, sn}, func() {
		VMOVUPS(Mem{Base: x1}, v[0])
		VMOVUPS(Mem{Base: x2}, v[1])
		VMOVUPS(Mem{Base: c}, v[2])
		VMOVUPS(Mem{Base: sn}, v[3])
		VMULPS(v[2], v[0], v[4]) // a*cos
		VMULPS(v[3], v[1], v[5]) // b*sin
		VSUBPS(v[5], v[4], v[4])
		VMULPS(v[2], v[1], v[6]) // b*cos
		VMULPS(v[3], v[0], v[7]) // a*sin
		VADDPS(v[7], v[6], v[6])
		VMOVUPS(v[4], Mem{Base: x1})
		VMOVUPS(v[6], Mem{Base: x2})
	})
	VZEROUPPER()
	RET()
}
