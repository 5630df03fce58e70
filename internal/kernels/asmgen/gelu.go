//go:build asmgen

package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genGELU emits gelu16(dst, x, n, tab): the exact GELU, 16 values at a time, from
// polynomials of degree 5 on 32 steps of 3/16 covering [-6, 0] held in registers
// (tab: [6][32] float32, coefficient j of step k at tab[32j+k], in t = a - mid_k,
// mid_k = -6 + 3/16·(k + ½)), looked up with VPERMI2PS (no gathers: they take
// tens of cycles each here). For a = -|x|, g = P_k(a) ≈ GELU(a) (0 where a ≤ -6);
// GELU(x) = g for x ≤ 0 and x + g for x > 0 (GELU(x) = x + GELU(-x)), so x ≥ 6
// gives x, x ≤ -6 gives 0 and NaN stays NaN. dst may alias x.
func genGELU() {
	text("gelu16", NOSPLIT, "func(dst *float32, x *float32, n int, tab *float32)")
	Doc("gelu16 is the exact GELU from polynomials in registers (see genGELU).")
	d := Load(Param("dst"), GP64())
	s := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	tab := Load(Param("tab"), GP64())
	for j := 0; j < 12; j++ { // Z16..Z27: coefficient j/2, steps 0-15 and 16-31
		VMOVUPS(Mem{Base: tab, Disp: 64 * j}, zr[16+j])
	}
	c := GP32()
	for _, k := range []struct {
		bits uint32
		z    VecPhysical
	}{{0x80000000, Z28}, {math.Float32bits(-6), Z29}, {math.Float32bits(16.0 / 3), Z30},
		{math.Float32bits(32), Z31}, {math.Float32bits(3.0 / 16), Z8}, {math.Float32bits(-6 + 3.0/32), Z7}, {31, Z5}} {
		MOVL(U32(k.bits), c)
		VPBROADCASTD(c, k.z)
	}
	VPXORD(Z6, Z6, Z6)
	m := GP64()
	MOVQ(U32(0xffff), m)
	Label("loop")
	TESTQ(n, n)
	JLE(LabelRef("done"))
	CMPQ(n, U8(16))
	JGE(LabelRef("full"))
	MOVQ(U32(1), m)
	SHLXQ(n, m, m)
	DECQ(m)
	Label("full")
	KMOVW(m.As32(), K4)
	VMOVUPS_Z(Mem{Base: s}, K4, Z0)
	VORPS(Z28, Z0, Z9) // a = -|x|
	VMOVAPS(Z9, Z1)
	VFMADD132PS(Z30, Z31, Z1) // u = a·16/3 + 32
	VCVTTPS2DQ(Z1, Z1)
	VPMINSD(Z5, Z1, Z1)
	VPMAXSD(Z6, Z1, Z1) // k
	VCVTDQ2PS(Z1, Z2)
	VFMADD132PS(Z8, Z7, Z2) // mid = k·3/16 + (-6 + 3/32)
	VSUBPS(Z2, Z9, Z2)      // t = a - mid
	for j := 5; j >= 0; j-- {
		v := Z4
		if j == 5 {
			v = Z3
		}
		VMOVDQA32(Z1, v)
		VPERMI2PS(zr[17+2*j], zr[16+2*j], v)
		if j < 5 {
			VFMADD213PS(Z4, Z2, Z3) // acc = acc·t + c_j
		}
	}
	VCMPPS(U8(0x12), Z29, Z9, K2) // a <= -6: g = 0
	VMOVAPS(Z6, K2, Z3)
	VCMPPS(U8(0x1e), Z6, Z0, K1) // x > 0: x + g
	VADDPS(Z0, Z3, K1, Z3)
	VMOVUPS(Z3, K4, Mem{Base: d})
	ADDQ(U8(64), s)
	ADDQ(U8(64), d)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
