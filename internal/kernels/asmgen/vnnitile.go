//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genVNNITile emits vnniTile<q>_<mr>x<nr>(xq, ldx, dx, xqs, ldd, w, ldw,
// nb, y, ldy): the matrix product of mr activation rows quantized by
// quantizeX<q> (ldx bytes apart; their scales and block sums ldd bytes
// apart) with nr weight rows (ldw bytes apart), storing y[i*ldy+4j].
// Every output is computed with exactly the operations, in exactly the
// order, of vnniRows<q> on that one activation row and weight row (per
// group of 16 blocks: S = dw*dx, corr += xqs*S; per unit: an integer
// VPDPBUSD sum converted to float and accumulated times the permuted S;
// then hsum(acc) - off*hsum(corr)), so prefill and decode agree bit for
// bit. The mr*nr scale vectors and corrections live on the stack.
// It is generated for q4 only; q8 uses genVNNITileQ8, whose lanes sum whole
// blocks.
func genVNNITile(q string, mr, nr int, idxTable Mem) {
	name := fmt.Sprintf("vnniTile%s_%dx%d", q, mr, nr)
	text(name, 0, "func(xq *byte, ldx int, dx *float32, xqs *float32, ldd int, w *byte, ldw int, nb int, y *float32, ldy int)")
	Doc(name + " is the int8 matrix-product micro-kernel (see genVNNITile).")
	qbytes, unitBlocks := 32, 2
	if q == "Q4" {
		qbytes, unitBlocks = 16, 4
	}
	np := mr * nr
	sLocal := AllocLocal(64*np + 64) // one spare slot: unit loads run past a pair's 16 scales
	cLocal := AllocLocal(64 * np)
	facc := zr[0:np]
	for p := range np {
		VXORPS(facc[p], facc[p], facc[p])
	}
	for p := range np {
		VMOVUPS(facc[0], cLocal.Offset(64*p))
	}
	xr := make([]Register, mr)
	xr[0] = Load(Param("xq"), GP64())
	if mr > 1 {
		ldx := Load(Param("ldx"), GP64())
		for i := 1; i < mr; i++ {
			xr[i] = GP64()
			LEAQ(Mem{Base: xr[i-1], Index: ldx, Scale: 1}, xr[i])
		}
	}
	wr := make([]Register, nr)
	wr[0] = Load(Param("w"), GP64())
	nbr := Load(Param("nb"), GP64())
	if nr > 1 {
		ldw := Load(Param("ldw"), GP64())
		for j := 1; j < nr; j++ {
			wr[j] = GP64()
			LEAQ(Mem{Base: wr[j-1], Index: ldw, Scale: 1}, wr[j])
		}
	}
	qoff := GP64()
	LEAQ(Mem{Base: nbr, Index: nbr, Scale: 1}, qoff)
	bo2 := GP64() // 2 * blocks done: byte offset of the next weight scale
	XORQ(bo2, bo2)
	t := GP32()
	if q == "Q8" {
		MOVL(U32(0x80808080), t)
	} else {
		MOVL(U32(0x0f0f0f0f), t)
	}
	c80 := Z27
	VPBROADCASTD(t, c80)
	idx := Z26
	VMOVDQU32(idxTable, idx)
	W := zr[16:24]
	xa, xb := Z24, Z25
	temps := [][2]VecPhysical{{Z28, Z29}, {Z30, Z31}}

	Label("group")
	rem := Load(Param("nb"), GP64())
	h := GP64()
	MOVQ(bo2, h)
	SHRQ(U8(1), h)
	SUBQ(h, rem)
	JLE(LabelRef("reduce"))
	cnt := GP64()
	MOVQ(U32(16), cnt)
	CMPQ(rem, cnt)
	CMOVQLT(rem, cnt)
	m := GP64()
	MOVQ(U32(1), m)
	SHLXQ(cnt, m, m)
	DECQ(m)
	KMOVW(m.As32(), K1)
	// scale phase: S = dw*dx and corr += xqs*S for each pair
	for j := range nr {
		VCVTPH2PS_Z(Mem{Base: wr[j], Index: bo2, Scale: 1}, K1, W[j])
	}
	dxp := Load(Param("dx"), GP64())
	xsp := Load(Param("xqs"), GP64())
	var ldd Register
	if mr > 1 {
		ldd = Load(Param("ldd"), GP64())
	}
	for i := range mr {
		for j := range nr {
			p := i*nr + j
			VMULPS(Mem{Base: dxp, Index: bo2, Scale: 2}, W[j], Z28)
			VMOVUPS(Z28, sLocal.Offset(64*p))
			VMOVUPS(cLocal.Offset(64*p), Z29)
			VFMADD231PS(Mem{Base: xsp, Index: bo2, Scale: 2}, Z28, Z29)
			VMOVUPS(Z29, cLocal.Offset(64*p))
		}
		if i+1 < mr {
			ADDQ(ldd, dxp)
			ADDQ(ldd, xsp)
		}
	}
	// unit phase
	sreg := GP64()
	LEAQ(sLocal, sreg)
	ADDQ(U8(32), bo2) // 16 blocks
	body := func() {
		k := 0
		for i := range mr {
			VMOVDQU64(Mem{Base: xr[i]}, xa)
			if q == "Q4" {
				VMOVDQU64(Mem{Base: xr[i], Disp: 64}, xb)
			}
			for j := range nr {
				a, b := temps[k%2][0], temps[k%2][1]
				k++
				VPXORD(a, a, a)
				if q == "Q8" {
					VPDPBUSD(xa, W[j], a)
				} else {
					VPDPBUSD(xa, W[2*j], a)
					VPDPBUSD(xb, W[2*j+1], a)
				}
				VCVTDQ2PS(a, a)
				VPERMPS(Mem{Base: sreg, Disp: 64 * (i*nr + j)}, idx, b)
				VFMADD231PS(b, a, facc[i*nr+j])
			}
		}
	}
	loadW := func(load func(j int, dst VecPhysical)) {
		for j := range nr {
			if q == "Q8" {
				load(j, W[j])
				VPXORD(c80, W[j], W[j])
			} else {
				lo, hi := W[2*j], W[2*j+1]
				load(j, lo)
				VPSRLW(U8(4), lo, hi)
				VPANDD(c80, lo, lo)
				VPANDD(c80, hi, hi)
			}
		}
	}
	Label("unit")
	CMPQ(cnt, U8(unitBlocks))
	JL(LabelRef("partial"))
	loadW(func(j int, dst VecPhysical) { VMOVDQU64(Mem{Base: wr[j], Index: qoff, Scale: 1}, dst) })
	body()
	for i := range mr {
		ADDQ(U8(unitBlocks*32), xr[i])
	}
	ADDQ(U8(unitBlocks*qbytes), qoff)
	ADDQ(U8(4*unitBlocks), sreg)
	SUBQ(U8(unitBlocks), cnt)
	JMP(LabelRef("unit"))

	Label("partial")
	TESTQ(cnt, cnt)
	JZ(LabelRef("group"))
	if q == "Q8" {
		loadW(func(j int, dst VecPhysical) { VMOVDQU32(Mem{Base: wr[j], Index: qoff, Scale: 1}, dst.AsY()) })
	} else {
		SHLQ(U8(4), cnt)
		MOVQ(U32(1), m)
		SHLXQ(cnt, m, m)
		DECQ(m)
		KMOVQ(m, K2)
		loadW(func(j int, dst VecPhysical) { VMOVDQU8_Z(Mem{Base: wr[j], Index: qoff, Scale: 1}, K2, dst) })
	}
	body()
	// a partial unit only ends the last group

	Label("reduce")
	y := Load(Param("y"), GP64())
	var ldy Register
	if mr > 1 {
		ldy = Load(Param("ldy"), GP64())
	}
	off := uint32(0x43000000) // 128.0
	if q == "Q4" {
		off = 0x41000000 // 8.0
	}
	MOVL(U32(off), t)
	VMOVD(t, X30)
	for i := range mr {
		for j := range nr {
			p := i*nr + j
			hsum(facc[p], Z31)
			VMOVUPS(cLocal.Offset(64*p), Z29)
			hsum(Z29, Z31)
			VFNMADD231SS(X30, X29, facc[p].AsX())
			VMOVSS(facc[p].AsX(), Mem{Base: y, Disp: 4 * j})
		}
		if i+1 < mr {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}
