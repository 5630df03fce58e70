//go:build asmgen

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genLayerNorm emits layerNorm16(dst, x, w, b, n, eps) for n a positive multiple of 16:
// dst = (x - m)·inv·w + b with the mean and the sum of squared deviations from it
// accumulated in float64 (two chains of 8 lanes), inv = float32(1/√(var + eps)) and
// m = float32(mean), the last step as float32 multiplies and an add (no fused
// multiply-add): exec's layerNorm but for the order of its float64 sums.
func genLayerNorm() {
	text("layerNorm16", NOSPLIT, "func(dst *float32, x *float32, w *float32, b *float32, n int, eps float32)")
	Doc("layerNorm16 is LayerNorm with float64 statistics (see genLayerNorm).")
	d := Load(Param("dst"), GP64())
	s := Load(Param("x"), GP64())
	wp := Load(Param("w"), GP64())
	bp := Load(Param("b"), GP64())
	n := Load(Param("n"), GP64())
	i := GP64()
	reduce := func(z VecPhysical, y VecPhysical, x VecPhysical) {
		VEXTRACTF64X4(U8(1), z, Y4)
		VADDPD(Y4, y, y)
		VEXTRACTF128(U8(1), y, X4)
		VADDPD(X4, x, x)
		VPERMILPD(U8(1), x, X4)
		VADDSD(X4, x, x)
	}
	// mean
	VXORPD(Z2, Z2, Z2)
	VXORPD(Z3, Z3, Z3)
	XORQ(i, i)
	Label("sum")
	VCVTPS2PD(Mem{Base: s, Index: i, Scale: 4}, Z0)
	VCVTPS2PD(Mem{Base: s, Index: i, Scale: 4, Disp: 32}, Z1)
	VADDPD(Z0, Z2, Z2)
	VADDPD(Z1, Z3, Z3)
	ADDQ(U8(16), i)
	CMPQ(i, n)
	JL(LabelRef("sum"))
	VADDPD(Z3, Z2, Z2)
	reduce(Z2, Y2, X2)
	VCVTSI2SDQ(n, X5, X5)
	VDIVSD(X5, X2, X2) // mean
	VBROADCASTSD(X2, Z6)
	// variance
	VXORPD(Z7, Z7, Z7)
	VXORPD(Z3, Z3, Z3)
	XORQ(i, i)
	Label("dev")
	VCVTPS2PD(Mem{Base: s, Index: i, Scale: 4}, Z0)
	VCVTPS2PD(Mem{Base: s, Index: i, Scale: 4, Disp: 32}, Z1)
	VSUBPD(Z6, Z0, Z0)
	VSUBPD(Z6, Z1, Z1)
	VFMADD231PD(Z0, Z0, Z7)
	VFMADD231PD(Z1, Z1, Z3)
	ADDQ(U8(16), i)
	CMPQ(i, n)
	JL(LabelRef("dev"))
	VADDPD(Z3, Z7, Z7)
	reduce(Z7, Y7, X7)
	VDIVSD(X5, X7, X7)
	e := Load(Param("eps"), XMM())
	VCVTSS2SD(e, X8, X8)
	VADDSD(X8, X7, X7)
	VSQRTSD(X7, X7, X7)
	one := GP64()
	MOVQ(U64(0x3ff0000000000000), one)
	VMOVQ(one, X9)
	VDIVSD(X7, X9, X9)
	VCVTSD2SS(X9, X9, X9)
	VBROADCASTSS(X9, Z9) // inv
	VCVTSD2SS(X2, X10, X10)
	VBROADCASTSS(X10, Z10) // m
	XORQ(i, i)
	Label("out")
	VMOVUPS(Mem{Base: s, Index: i, Scale: 4}, Z0)
	VSUBPS(Z10, Z0, Z0)
	VMULPS(Z9, Z0, Z0)
	VMULPS(Mem{Base: wp, Index: i, Scale: 4}, Z0, Z0)
	VADDPS(Mem{Base: bp, Index: i, Scale: 4}, Z0, Z0)
	VMOVUPS(Z0, Mem{Base: d, Index: i, Scale: 4})
	ADDQ(U8(16), i)
	CMPQ(i, n)
	JL(LabelRef("out"))
	VZEROUPPER()
	RET()
}
