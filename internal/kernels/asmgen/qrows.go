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
