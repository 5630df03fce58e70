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
	_, tables, _ := q8TransposePlan()
	idx := zr[0:len(tables)]
	for t := range tables {
		VMOVDQU32(q8Transpose.Offset(64*t), idx[t])
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
	prefetch, every := q8Prefetch, 1 // a prefetch per 64 bytes of quants
	if q == "Q4" {
		prefetch, every = q4Prefetch, 2
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
	for u := range 8 {
		src := Mem{Base: qp, Disp: unitBytes * u}
		if u%every == 0 {
			PREFETCHNTA(src.Offset(prefetch))
		}
		loadWeightUnit(q, src, nil, u, N[u], s, c)
	}
	VCVTPH2PS(Mem{Base: w, Index: bo2, Scale: 1}, sw)
	JMP(LabelRef("transpose"))

	Label("tail")
	lowMask(rem, K1)
	unitMasks(rem, masks, 8, bits.TrailingZeros(uint(qbytes(q))), unitBytes)
	for u := range 8 {
		loadWeightUnit(q, Mem{Base: qp, Disp: unitBytes * u}, &masks, u, N[u], s, c)
	}
	VCVTPH2PS_Z(Mem{Base: w, Index: bo2, Scale: 1}, K1, sw)

	Label("transpose")
	regs, final := q8TransposeRenamed(N, spare, idx)
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

// q8TransposeRenamed is q8TransposeUnits with one spare register instead of
// moves back: each pair's low half goes to the free register and the input
// it replaces becomes free. It returns the register of each vector slot
// after the transpose (slot s holds dword final[s] of blocks 0..15).
func q8TransposeRenamed(N []VecPhysical, spare VecPhysical, idx []VecPhysical) (regs [8]VecPhysical, final [8]int) {
	levels, _, final := q8TransposePlan()
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
	return regs, final
}
