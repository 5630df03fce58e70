//go:build asmgen

package main

import (
	"fmt"
	"math/bits"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// vnniBatchMax is the most activation rows of vnniBatch<q>_<m> (its float
// sums stay in registers).
const vnniBatchMax = 8

// genVNNIBatch emits vnniBatch<q>_<m>(xb, bp, w, ldw, nb, y, ldy, n): the
// q8 or q4 matrix product of m activation rows with n weight rows, for the
// few rows of a batched decode step. The weight rows (ldw bytes apart, nb
// blocks: scales then quants) are read once, as one sequential stream with
// the prefetches of vnniRowStream<q>; each group of 16 blocks is made
// unsigned and transposed in registers (as transposeW<q> does) and
// multiplied with every activation row with the arithmetic of vnniTile<q>,
// so each output equals the tile's, and the matrix-vector kernels', bit for
// bit. Per group g and activation row i, xb holds at (g*m+i)*512 the row's
// quants in the layout of quantizeXQ8T, and bp at (g*m+i)*128 the 16
// blocks' scales dx (float32) then -offset*xqs (int32). y[i*ldy/4+r]
// receives row i's product with weight row r.
func genVNNIBatch(q string, m int) {
	name := fmt.Sprintf("vnniBatch%s_%d", q, m)
	text(name, NOSPLIT, "func(xb *byte, bp *float32, w *byte, ldw int, nb int, y *float32, ldy int, n int)")
	Doc(fmt.Sprintf("%s is the %s matrix product of %d activation rows, weights streamed once (see vnnibatch.go in asmgen).", name, strings.ToLower(q), m))
	masks := AllocLocal(64)
	levels, tables, final := q8TransposePlan()
	tab := q8Transpose
	if q == "Q4" {
		levels, tables, final = q4TransposePlan()
		tab = q4Transpose
	}
	idx := zr[0:len(tables)]
	for t := range tables {
		VMOVDQU32(tab.Offset(64*t), idx[t])
	}
	c := Z31
	splatUnitMask(q, c)
	N, spare := zr[16:24], Z24
	sw, s, a, a1 := Z25, Z26, Z27, Z28
	facc := zr[len(tables) : len(tables)+m]
	if len(tables)+m > 16 {
		panic("vnniBatch: too many registers")
	}
	unitBytes := 2 * qbytes(q)
	prefetch := q8Prefetch
	if q == "Q4" {
		prefetch = q4Prefetch
	}

	w := Load(Param("w"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	kick := GP64()
	initPageKick(w, kick)

	Label("row")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	for _, f := range facc {
		VXORPS(f, f, f)
	}
	qp := Load(Param("nb"), GP64())
	LEAQ(Mem{Base: w, Index: qp, Scale: 2}, qp) // the quants, after the scales
	bo2 := GP64()                               // 2 × blocks done
	XORQ(bo2, bo2)
	xg := Load(Param("xb"), GP64()) // the group's activations
	bg := Load(Param("bp"), GP64()) // and their scales and offsets

	Label("group")
	rem := Load(Param("nb"), GP64())
	h := GP64()
	MOVQ(bo2, h)
	SHRQ(U8(1), h)
	SUBQ(h, rem)
	JLE(LabelRef("reduce"))
	CMPQ(rem, U8(16))
	JL(LabelRef("tail"))
	kt := GP64()
	pageKick(Mem{Base: qp}, kick, kt, "nokick")
	loadGroup(q, qp, nil, N, c, prefetch)
	VCVTPH2PS(Mem{Base: w, Index: bo2, Scale: 1}, sw)
	JMP(LabelRef("transpose"))

	Label("tail")
	lowMask(rem, K1)
	if q == "Q4" {
		unitMasks(rem, masks, 4, 4, 64)
	} else {
		unitMasks(rem, masks, 8, bits.TrailingZeros(uint(qbytes(q))), unitBytes)
	}
	loadGroup(q, qp, &masks, N, c, 0)
	VCVTPH2PS_Z(Mem{Base: w, Index: bo2, Scale: 1}, K1, sw)

	Label("transpose")
	regs := transposeRenamed(levels, N, spare, idx)
	var dw [8]VecPhysical // dw[k]: the vector holding dword k of every block
	for sl, k := range final {
		dw[k] = regs[sl]
	}
	for i, f := range facc {
		// D - offset*xqs, as vnniTile<q> (integer sums are exact in any
		// order), then facc += cvt(D) * (dw*dx).
		VMOVDQU32(Mem{Base: bg, Disp: 128*i + 64}, a)
		VPXORD(a1, a1, a1)
		for k := range 8 {
			VPDPBUSD(Mem{Base: xg, Disp: 512*i + 64*k}, dw[k], []VecPhysical{a, a1}[k%2])
		}
		VPADDD(a1, a, a)
		VCVTDQ2PS(a, a)
		VMULPS(Mem{Base: bg, Disp: 128 * i}, sw, s)
		VFMADD231PS(s, a, f)
	}
	ADDQ(U32(8*unitBytes), qp)
	ADDQ(U8(32), bo2)
	ADDQ(U32(512*m), xg)
	ADDQ(U32(128*m), bg)
	JMP(LabelRef("group"))

	Label("reduce")
	yr := GP64()
	MOVQ(y, yr)
	ldy := Load(Param("ldy"), GP64())
	for i, f := range facc {
		hsum(f, s)
		VMOVSS(f.AsX(), Mem{Base: yr})
		if i+1 < m {
			ADDQ(ldy, yr)
		}
	}
	ADDQ(U8(4), y)
	ldw := Load(Param("ldw"), GP64())
	ADDQ(ldw, w)
	DECQ(n)
	JMP(LabelRef("row"))

	Label("done")
	VZEROUPPER()
	RET()
}

// loadGroup loads the quants of a group of 16 blocks at qp (mk, when not
// nil, holds unitMasks' byte masks; else each 64 bytes are prefetched
// prefetch bytes ahead) into N as unsigned bytes: q8 made unsigned (xor
// c = 0x80), unit u of two blocks in N[u], as loadWeightUnit; q4 as four
// vectors of four blocks' bytes, split into the low nibbles (N[u]: dwords
// 0-3 of blocks 4u..4u+3) and the high ones (N[4+u]: dwords 4-7), c = 0x0f
// (the layout of q4TransposePlan).
func loadGroup(q string, qp Register, mk *Mem, N []VecPhysical, c VecPhysical, prefetch int) {
	if q == "Q8" {
		for u := range 8 {
			src := Mem{Base: qp, Disp: 64 * u}
			if mk == nil {
				PREFETCHNTA(src.Offset(prefetch))
			}
			loadWeightUnit(q, src, mk, u, N[u], nil, c)
		}
		return
	}
	for u := range 4 {
		src := Mem{Base: qp, Disp: 64 * u}
		if mk == nil {
			PREFETCHNTA(src.Offset(prefetch))
			VMOVDQU64(src, N[u])
		} else {
			KMOVQ(mk.Offset(8*u), K2)
			VMOVDQU8_Z(src, K2, N[u])
		}
		VPSRLW(U8(4), N[u], N[4+u])
		VPANDD(c, N[u], N[u])
		VPANDD(c, N[4+u], N[4+u])
	}
}

// q4Transpose holds the permute indices of q4TransposePlan.
var q4Transpose Mem

// q4TransposePlan is the transpose of a q4 group as loadGroup leaves it
// (vector u < 4: lane l holds dword l%4 of block 4u+l/4; vector 4+u: dword
// 4+l%4 of the same blocks) into vector k holding dword k of every block:
// two levels, where the q8 units take three.
func q4TransposePlan() (levels [][4]q8Pair, tables [][16]uint32, final [8]int) {
	return transposePlan(func(u, l int) (int, int) { return 4*(u%4) + l/4, 4*(u/4) + l%4 })
}

func genQ4Transpose() {
	_, tables, _ := q4TransposePlan()
	q4Transpose = GLOBL("vnniQ4Transpose", RODATA|NOPTR)
	for t, tab := range tables {
		for l, v := range tab {
			DATA(64*t+4*l, U32(v))
		}
	}
}

// transposeRenamed emits the transpose of levels (see transposePlan) of
// the vectors in N with one spare register instead of moves back: each
// pair's low half goes to the free register and the input it replaces
// becomes free. It returns the register of each vector slot after the
// transpose.
func transposeRenamed(levels [][4]q8Pair, N []VecPhysical, spare VecPhysical, idx []VecPhysical) (regs [8]VecPhysical) {
	copy(regs[:], N)
	free := spare
	for _, lv := range levels {
		for _, pr := range lv {
			a, b := regs[pr.a], regs[pr.b]
			VMOVDQA64(a, free)
			VPERMT2D(b, idx[pr.p], free) // low k: from (a, b)
			VPERMT2D(b, idx[pr.q], a)    // high k
			regs[pr.a], regs[pr.b], free = free, a, b
		}
	}
	return regs
}
