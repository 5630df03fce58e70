//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genQRows emits rows<q>_<nr>: for j < nr, y[j] = sum over nb blocks of
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
	r := &qRows{q: q, nr: nr, acc: zr[0:4], corr: zr[4:8]}
	r.local = AllocLocal(64 * nr)
	r.xp = Load(Param("x"), GP64())
	if q == "Q4" {
		r.xsp = Load(Param("xsum"), GP64())
	}
	nb := Load(Param("nb"), GP64())
	ldw := Load(Param("ldw"), GP64())
	r.sp = make([]Register, nr)
	r.qp = make([]Register, nr)
	r.sp[0] = Load(Param("w"), GP64())
	for j := 1; j < nr; j++ {
		r.sp[j] = GP64()
		LEAQ(Mem{Base: r.sp[j-1], Index: ldw, Scale: 1}, r.sp[j])
	}
	for j := 0; j < nr; j++ {
		r.qp[j] = GP64()
		LEAQ(Mem{Base: r.sp[j], Index: nb, Scale: 2}, r.qp[j])
	}
	for j := 0; j < nr; j++ {
		VXORPS(r.acc[j], r.acc[j], r.acc[j])
		VXORPS(r.corr[j], r.corr[j], r.corr[j])
	}
	if q == "Q4" {
		t := GP32()
		MOVL(U32(15), t)
		VPBROADCASTD(t, Z10)
	}
	r.sreg = GP64()

	Label("group")
	CMPQ(nb, U8(16))
	JL(LabelRef("tail"))
	r.loadScales(false)
	for blk := 0; blk < 16; blk++ {
		r.block(blk)
	}
	r.advance(16)
	SUBQ(U8(16), nb)
	JMP(LabelRef("group"))

	Label("tail")
	TESTQ(nb, nb)
	JZ(LabelRef("reduce"))
	lowMask(nb, K1)
	r.loadScales(true)
	Label("tailblock")
	r.block(0)
	ADDQ(U8(4), r.sreg)
	ADDQ(U8(128), r.xp)
	for j := 0; j < nr; j++ {
		ADDQ(U8(qbytes(q)), r.qp[j])
	}
	DECQ(nb)
	JNZ(LabelRef("tailblock"))

	Label("reduce")
	r.store()
}

// qRows is the state of genQRows's body.
type qRows struct {
	q      string
	nr     int
	xp     Register   // x
	xsp    Register   // xsum (q4)
	sp, qp []Register // each row's scales and quants
	// local holds 16 scales of each row, converted to float32; sreg
	// points into it.
	local     Mem
	sreg      Register
	acc, corr []VecPhysical // per row: the sum, and for q4 sum of scale*xsum
}

// block processes one block per row at static displacement blk.
func (r *qRows) block(blk int) {
	x0, x1 := Z8, Z9
	VMOVUPS(Mem{Base: r.xp, Disp: blk * 128}, x0)
	VMOVUPS(Mem{Base: r.xp, Disp: blk*128 + 64}, x1)
	for j := 0; j < r.nr; j++ {
		a, b := zr[12+2*j], zr[13+2*j]
		m := Mem{Base: r.qp[j], Disp: blk * qbytes(r.q)}
		if r.q == "Q8" {
			VPMOVSXBD(m, a)
			VPMOVSXBD(m.Offset(16), b)
		} else {
			VPMOVZXBD(m, a)
			VPSRLD(U8(4), a, b)
			VPANDD(Z10, a, a) // 15
		}
		VCVTDQ2PS(a, a)
		VCVTDQ2PS(b, b)
		VMULPS(x0, a, a)
		VFMADD231PS(x1, b, a)
		VFMADD231PS_BCST(Mem{Base: r.sreg, Disp: 64*j + 4*blk}, a, r.acc[j])
	}
}

// loadScales converts the next 16 (or masked fewer) scales of each row
// to the local buffer, and folds the q4 offset correction.
func (r *qRows) loadScales(masked bool) {
	LEAQ(r.local, r.sreg)
	for j := 0; j < r.nr; j++ {
		s := zr[20+j]
		if masked {
			VCVTPH2PS_Z(Mem{Base: r.sp[j]}, K1, s)
		} else {
			VCVTPH2PS(Mem{Base: r.sp[j]}, s)
		}
		VMOVUPS(s, Mem{Base: r.sreg, Disp: 64 * j})
		if r.q == "Q4" {
			if masked {
				VMOVUPS_Z(Mem{Base: r.xsp}, K1, Z11)
			} else {
				VMOVUPS(Mem{Base: r.xsp}, Z11)
			}
			VFMADD231PS(Z11, s, r.corr[j])
		}
	}
}

// advance moves the pointers on by a number of blocks.
func (r *qRows) advance(blocks int) {
	ADDQ(U32(blocks*128), r.xp)
	if r.q == "Q4" {
		ADDQ(U32(blocks*4), r.xsp)
	}
	for j := 0; j < r.nr; j++ {
		ADDQ(U32(blocks*2), r.sp[j])
		ADDQ(U32(blocks*qbytes(r.q)), r.qp[j])
	}
}

// store reduces each row's sums and stores them in y.
func (r *qRows) store() {
	y := Load(Param("y"), GP64())
	for j := 0; j < r.nr; j++ {
		hsum(r.acc[j], Z31)
		if r.q == "Q4" {
			hsum(r.corr[j], Z31)
			// acc - 8*corr
			t := GP32()
			MOVL(U32(0x41000000), t) // 8.0
			VMOVD(t, X30)
			VFNMADD231SS(X30, r.corr[j].AsX(), r.acc[j].AsX())
		}
		VMOVSS(r.acc[j].AsX(), Mem{Base: y, Disp: 4 * j})
	}
	VZEROUPPER()
	RET()
}
