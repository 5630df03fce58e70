//go:build asmgen

package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genGELUTable emits geluTable16(dst, x, n, tab): the exact GELU from a table of
// cubics on sixteenths of [-6, 6) (tab: 192 × 4 float32 c0..c3, the cubic
// c0 + t·(c1 + t·(c2 + t·c3)) in t = (x - x0)·16 on [x0, x0 + 1/16)), 16 values
// at a time: step k = min(int((x+6)·16), 191), its four coefficients gathered;
// x ≥ 6 (and NaN) give x, x ≤ -6 give 0. dst may alias x.
func genGELUTable() {
	text("geluTable16", NOSPLIT, "func(dst *float32, x *float32, n int, tab *float32)")
	Doc("geluTable16 is GELU from a table of cubics (see genGELUTable).")
	d := Load(Param("dst"), GP64())
	s := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	tab := Load(Param("tab"), GP64())
	c := GP32()
	for _, k := range []struct {
		bits uint32
		z    VecPhysical
	}{{math.Float32bits(6), Z16}, {math.Float32bits(-6), Z17}, {math.Float32bits(16), Z18},
		{math.Float32bits(1.0 / 16), Z19}, {191, Z20}} {
		MOVL(U32(k.bits), c)
		VPBROADCASTD(c, k.z)
	}
	VPXORD(Z21, Z21, Z21)
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
	VADDPS(Z16, Z0, Z1)
	VMULPS(Z18, Z1, Z1)
	VCVTTPS2DQ(Z1, Z1)
	VPMINSD(Z20, Z1, Z1)
	VPMAXSD(Z21, Z1, Z1)
	VCVTDQ2PS(Z1, Z2)
	VMULPS(Z19, Z2, Z2)
	VADDPS(Z17, Z2, Z2) // x0 = k/16 - 6
	VSUBPS(Z2, Z0, Z2)
	VMULPS(Z18, Z2, Z2) // t = (x - x0)·16
	VPSLLD(U8(2), Z1, Z1)
	for i, z := range []VecPhysical{Z3, Z4, Z5, Z6} {
		KXNORW(K3, K3, K3)
		VGATHERDPS(Mem{Base: tab, Index: Z1, Scale: 4, Disp: 4 * i}, K3, z)
	}
	VFMADD213PS(Z5, Z2, Z6)
	VFMADD213PS(Z4, Z2, Z6)
	VFMADD213PS(Z3, Z2, Z6)
	VCMPPS(U8(0x1e), Z17, Z0, K1)     // x > -6
	VCMPPS(U8(0x11), Z16, Z0, K1, K1) // and x < 6
	VCMPPS(U8(0x12), Z17, Z0, K2)     // x <= -6
	VMOVAPS(Z6, K1, Z0)
	VMOVAPS(Z21, K2, Z0)
	VMOVUPS(Z0, K4, Mem{Base: d})
	ADDQ(U8(64), s)
	ADDQ(U8(64), d)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
