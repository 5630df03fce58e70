//go:build asmgen

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genQuantizeX emits quantizeX<q>(x, nb, xq, dx, xqs): quantizes nb blocks
// of 32 floats (nb a multiple of 4) to int8 with one float32 scale per block
// (dx = max|x|/127, xq = round(x/dx)) and stores the per-block sum of xq as
// float32. Q8 stores each block's 32 bytes in order; Q4 stores groups of
// four blocks as 64 bytes of first halves then 64 bytes of second halves,
// matching the nibble order of q4 weights.
func genQuantizeX(q string, transposed bool) {
	name := "quantizeX" + q
	if transposed {
		name += "T"
	}
	text(name, NOSPLIT, "func(x *float32, nb int, xq *byte, dx *float32, xqs *float32)")
	if transposed {
		Doc(name + " is quantizeXQ8 writing the layout of transposeXQ8 (nb a multiple of 16).")
	} else {
		Doc(name + " quantizes activations per block for the VNNI kernels (see genQuantizeX).")
	}
	x := Load(Param("x"), GP64())
	nb := Load(Param("nb"), GP64())
	xq := Load(Param("xq"), GP64())
	dx := Load(Param("dx"), GP64())
	xqs := Load(Param("xqs"), GP64())
	t := GP32()
	MOVL(U32(0x7fffffff), t)
	VPBROADCASTD(t, Z15)
	MOVL(U32(0x3c010204), t) // 1/127
	VMOVD(t, X14)
	MOVL(U32(0x42fe0000), t) // 127
	VMOVD(t, X13)
	MOVL(U32(0x0da24260), t) // 1e-30
	VMOVD(t, X12)
	blocks, bytes := 4, 128 // a step: blocks, and the bytes of xq they fill
	if transposed {
		blocks, bytes = 16, 512
	}
	Label("loop")
	TESTQ(nb, nb)
	JZ(LabelRef("done"))
	for b := range blocks {
		quantizeBlock(x, dx, xqs, func() { storeQuants(q, transposed, xq, b) })
	}
	ADDQ(U32(bytes), xq)
	SUBQ(U8(blocks), nb)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// quantizeBlock quantizes the block of 32 floats at x: stores dx, leaves the
// int32 quants in Z0 and Z1 for store, stores their sum as float32 at xqs,
// and moves x, dx and xqs on by a block. The constants are those
// genQuantizeX loads: Z15 the abs mask, X14 1/127, X13 127, X12 1e-30.
func quantizeBlock(x, dx, xqs Register, store func()) {
	VMOVUPS(Mem{Base: x}, Z0)
	VMOVUPS(Mem{Base: x, Disp: 64}, Z1)
	VANDPS(Z15, Z0, Z2)
	VANDPS(Z15, Z1, Z3)
	VMAXPS(Z3, Z2, Z2)
	hmax(Z2, Z3)
	VMULSS(X14, X2, X5)
	VMOVSS(X5, Mem{Base: dx})
	VMAXSS(X12, X2, X2)
	VDIVSS(X2, X13, X6)
	VBROADCASTSS(X6, Z6)
	VMULPS(Z6, Z0, Z0)
	VMULPS(Z6, Z1, Z1)
	VCVTPS2DQ(Z0, Z0)
	VCVTPS2DQ(Z1, Z1)
	store()
	VPADDD(Z1, Z0, Z0)
	VEXTRACTI32X8(U8(1), Z0, Y1)
	VPADDD(Y1, Y0, Y0)
	VEXTRACTI128(U8(1), Y0, X1)
	VPADDD(X1, X0, X0)
	VPSHUFD(U8(0x4e), X0, X1)
	VPADDD(X1, X0, X0)
	VPSHUFD(U8(0xb1), X0, X1)
	VPADDD(X1, X0, X0)
	VCVTDQ2PS(X0, X0)
	VMOVSS(X0, Mem{Base: xqs})
	ADDQ(U32(128), x)
	ADDQ(U8(4), dx)
	ADDQ(U8(4), xqs)
}

// storeQuants stores the int32 quants of block b of a step (Z0: values
// 0-15, Z1: 16-31) as int8 at xq: q8 in order; q4 as 64 bytes of first
// halves then 64 bytes of second halves; transposed, dword k of the block
// at bytes 64k+4b.
func storeQuants(q string, transposed bool, xq Register, b int) {
	switch {
	case transposed:
		VPMOVSDB(Z0, X7)
		VPMOVSDB(Z1, X8)
		for k := 0; k < 8; k++ {
			src := X7
			if k >= 4 {
				src = X8
			}
			m := Mem{Base: xq, Disp: 64*k + 4*b}
			if k%4 == 0 {
				VMOVD(src, m)
			} else {
				VPEXTRD(U8(k%4), src, m)
			}
		}
	case q == "Q8":
		VPMOVSDB(Z0, Mem{Base: xq, Disp: 32 * b})
		VPMOVSDB(Z1, Mem{Base: xq, Disp: 32*b + 16})
	default:
		VPMOVSDB(Z0, Mem{Base: xq, Disp: 16 * b})
		VPMOVSDB(Z1, Mem{Base: xq, Disp: 64 + 16*b})
	}
}
