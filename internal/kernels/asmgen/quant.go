//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genQRows emits <q>Rows<nr>: for j < nr, y[j] = sum over nb blocks of
// row j (ldw bytes apart; scales then quants) times x (nb*32 floats).
// Q4 also takes xsum[b] = sum of x over block b, for the -8 offset.
func genQRows(q string, nr int) {
	name := fmt.Sprintf("rows%s_%d", q, nr)
	sig := "func(x *float32, w *byte, ldw int, nb int, y *float32)"
	if q == "Q4" {
		sig = "func(x *float32, xsum *float32, w *byte, ldw int, nb int, y *float32)"
	}
	text(name, NOSPLIT, sig)
	Doc(name + " computes block-quantized dot products (see genQRows).")
	qbytes := 32
	if q == "Q4" {
		qbytes = 16
	}
	local := AllocLocal(64 * nr)
	xp := Load(Param("x"), GP64())
	var xsp Register
	if q == "Q4" {
		xsp = Load(Param("xsum"), GP64())
	}
	nb := Load(Param("nb"), GP64())
	ldw := Load(Param("ldw"), GP64())
	sp := make([]Register, nr) // scale pointers
	qp := make([]Register, nr) // quant pointers
	sp[0] = Load(Param("w"), GP64())
	for j := 1; j < nr; j++ {
		sp[j] = GP64()
		LEAQ(Mem{Base: sp[j-1], Index: ldw, Scale: 1}, sp[j])
	}
	for j := 0; j < nr; j++ {
		qp[j] = GP64()
		LEAQ(Mem{Base: sp[j], Index: nb, Scale: 2}, qp[j])
	}
	acc := zr[0:4]
	corr := zr[4:8]
	for j := 0; j < nr; j++ {
		VXORPS(acc[j], acc[j], acc[j])
		VXORPS(corr[j], corr[j], corr[j])
	}
	x0, x1 := Z8, Z9
	mask := Z10
	if q == "Q4" {
		t := GP32()
		MOVL(U32(15), t)
		VPBROADCASTD(t, mask)
	}
	sreg := GP64()
	// body processes one block per row at static displacement blk.
	body := func(blk int) {
		VMOVUPS(Mem{Base: xp, Disp: blk * 128}, x0)
		VMOVUPS(Mem{Base: xp, Disp: blk*128 + 64}, x1)
		for j := 0; j < nr; j++ {
			a, b := zr[12+2*j], zr[13+2*j]
			if q == "Q8" {
				VPMOVSXBD(Mem{Base: qp[j], Disp: blk * qbytes}, a)
				VPMOVSXBD(Mem{Base: qp[j], Disp: blk*qbytes + 16}, b)
			} else {
				VPMOVZXBD(Mem{Base: qp[j], Disp: blk * qbytes}, a)
				VPSRLD(U8(4), a, b)
				VPANDD(mask, a, a)
			}
			VCVTDQ2PS(a, a)
			VCVTDQ2PS(b, b)
			VMULPS(x0, a, a)
			VFMADD231PS(x1, b, a)
			VFMADD231PS_BCST(Mem{Base: sreg, Disp: 64*j + 4*blk}, a, acc[j])
		}
	}
	// loadScales converts the next 16 (or masked fewer) scales of each row
	// to the local buffer, and folds the q4 offset correction.
	loadScales := func(masked bool) {
		LEAQ(local, sreg)
		for j := 0; j < nr; j++ {
			s := zr[20+j]
			if masked {
				VCVTPH2PS_Z(Mem{Base: sp[j]}, K1, s)
			} else {
				VCVTPH2PS(Mem{Base: sp[j]}, s)
			}
			VMOVUPS(s, Mem{Base: sreg, Disp: 64 * j})
			if q == "Q4" {
				if masked {
					VMOVUPS_Z(Mem{Base: xsp}, K1, Z11)
				} else {
					VMOVUPS(Mem{Base: xsp}, Z11)
				}
				VFMADD231PS(Z11, s, corr[j])
			}
		}
	}
	advance := func(blocks int) {
		ADDQ(U32(blocks*128), xp)
		if q == "Q4" {
			ADDQ(U32(blocks*4), xsp)
		}
		for j := 0; j < nr; j++ {
			ADDQ(U32(blocks*2), sp[j])
			ADDQ(U32(blocks*qbytes), qp[j])
		}
	}
	Label("group")
	CMPQ(nb, U8(16))
	JL(LabelRef("tail"))
	loadScales(false)
	for blk := 0; blk < 16; blk++ {
		body(blk)
	}
	advance(16)
	SUBQ(U8(16), nb)
	JMP(LabelRef("group"))

	Label("tail")
	TESTQ(nb, nb)
	JZ(LabelRef("reduce"))
	t := GP64()
	MOVQ(U32(1), t)
	SHLXQ(nb, t, t)
	DECQ(t)
	KMOVW(t.As32(), K1)
	loadScales(true)
	Label("tailblock")
	body(0)
	ADDQ(U8(4), sreg)
	ADDQ(U8(128), xp)
	for j := 0; j < nr; j++ {
		ADDQ(U8(qbytes), qp[j])
	}
	DECQ(nb)
	JNZ(LabelRef("tailblock"))

	Label("reduce")
	y := Load(Param("y"), GP64())
	for j := 0; j < nr; j++ {
		hsum(acc[j], Z31)
		if q == "Q4" {
			hsum(corr[j], Z31)
			// acc - 8*corr
			t := GP32()
			MOVL(U32(0x41000000), t) // 8.0
			VMOVD(t, X30)
			VFNMADD231SS(X30, corr[j].AsX(), acc[j].AsX())
		}
		VMOVSS(acc[j].AsX(), Mem{Base: y, Disp: 4 * j})
	}
	VZEROUPPER()
	RET()
}

// genDequant emits dequant<q>(dst, scales, quants, nb): writes nb*32 floats
// of a block-quantized row.
func genDequant(q string) {
	name := "dequant" + q
	text(name, NOSPLIT, "func(dst *float32, scales *byte, quants *byte, nb int)")
	Doc(name + " dequantizes nb whole blocks (binary16 scales, quants) into dst.")
	d := Load(Param("dst"), GP64())
	s := Load(Param("scales"), GP64())
	qp := Load(Param("quants"), GP64())
	nb := Load(Param("nb"), GP64())
	if q == "Q4" {
		t := GP32()
		MOVL(U32(15), t)
		VPBROADCASTD(t, Z10)
		MOVL(U32(8), t)
		VPBROADCASTD(t, Z11)
	}
	Label("loop")
	TESTQ(nb, nb)
	JZ(LabelRef("done"))
	t := GP32()
	MOVWLZX(Mem{Base: s}, t)
	VPBROADCASTW(t, Y2)
	VCVTPH2PS(Y2, Z2)
	if q == "Q8" {
		VPMOVSXBD(Mem{Base: qp}, Z0)
		VPMOVSXBD(Mem{Base: qp, Disp: 16}, Z1)
	} else {
		VPMOVZXBD(Mem{Base: qp}, Z0)
		VPSRLD(U8(4), Z0, Z1)
		VPANDD(Z10, Z0, Z0)
		VPSUBD(Z11, Z0, Z0)
		VPSUBD(Z11, Z1, Z1)
	}
	VCVTDQ2PS(Z0, Z0)
	VCVTDQ2PS(Z1, Z1)
	VMULPS(Z2, Z0, Z0)
	VMULPS(Z2, Z1, Z1)
	VMOVUPS(Z0, Mem{Base: d})
	VMOVUPS(Z1, Mem{Base: d, Disp: 64})
	ADDQ(U8(2), s)
	if q == "Q8" {
		ADDQ(U8(32), qp)
	} else {
		ADDQ(U8(16), qp)
	}
	ADDQ(U32(128), d)
	DECQ(nb)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

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
	block := func(store func()) {
		VMOVUPS(Mem{Base: x}, Z0)
		VMOVUPS(Mem{Base: x, Disp: 64}, Z1)
		VANDPS(Z15, Z0, Z2)
		VANDPS(Z15, Z1, Z3)
		VMAXPS(Z3, Z2, Z2)
		VEXTRACTF32X8(U8(1), Z2, Y3)
		VMAXPS(Y3, Y2, Y2)
		VEXTRACTF128(U8(1), Y2, X3)
		VMAXPS(X3, X2, X2)
		VPERMILPD(U8(1), X2, X3)
		VMAXPS(X3, X2, X2)
		VMOVSHDUP(X2, X3)
		VMAXSS(X3, X2, X2)
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
	Label("loop")
	TESTQ(nb, nb)
	JZ(LabelRef("done"))
	store := func(lo, hi Mem) func() {
		return func() {
			VPMOVSDB(Z0, lo)
			VPMOVSDB(Z1, hi)
		}
	}
	if transposed {
		// Block b of a group of 16: its dword k goes to bytes 64k+4b.
		for b := 0; b < 16; b++ {
			block(func() {
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
			})
		}
		ADDQ(U32(512), xq)
		SUBQ(U8(16), nb)
		JMP(LabelRef("loop"))
		Label("done")
		VZEROUPPER()
		RET()
		return
	}
	for k := 0; k < 4; k++ {
		if q == "Q8" {
			block(store(Mem{Base: xq, Disp: 32 * k}, Mem{Base: xq, Disp: 32*k + 16}))
		} else {
			block(store(Mem{Base: xq, Disp: 16 * k}, Mem{Base: xq, Disp: 64 + 16*k}))
		}
	}
	ADDQ(U32(128), xq)
	SUBQ(U8(4), nb)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
