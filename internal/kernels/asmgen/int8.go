//go:build asmgen

package main

import (
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genRowsI8AVX2 emits rows<q>I8AVX2. rowsQ8I8AVX2(xq, dx, w, ldw, nb, y, n):
// for r < n, y[r] += sum over nb blocks b of s_b * (row r's quants · xq block b), with
// s_b = scale_b(row r) * dx[b], the integer dot products exact: each block's
// 32 int8 pairs are multiplied by VPMADDUBSW (|w| times x with w's sign) and
// VPMADDWD into 8 int32 lanes, converted and accumulated with one FMA per
// block into 8 float lanes (even and odd blocks in two), reduced at the end
// of the row. Rows are read as one stream with the next-row, page-start and
// per-line prefetches. It is the q8 matrix-vector kernel of CPUs with AVX2
// but not AVX-512 (the int8 analogue of the VNNI path); every input row,
// decode or prefill, goes through it, so the arithmetic does not depend on
// the number of rows. Two FMA chains and the per-line prefetch were chosen
// by -bench 'MatVecSweep/MatMul-q8-AVX2' (docs/performance.md, "Tuning
// constants").
// rowsQ4I8AVX2 also takes xs: its weights are nibbles u = q+8 in [0, 15],
// multiplied as unsigned bytes with x, and each block's int32 sum is corrected by xs[b] = 8 * (the block
// sum of xq) in one lane before the conversion: still exact.
func genRowsI8AVX2(q string) {
	name := "rows" + q + "I8AVX2"
	sig := "func(xq *byte, dx *float32, w *byte, ldw int, nb int, y *float32, n int)"
	if q == "Q4" {
		sig = "func(xq *byte, dx *float32, xs *int32, w *byte, ldw int, nb int, y *float32, n int)"
	}
	text(name, NOSPLIT, sig)
	Doc(name + " is the int8 " + strings.ToLower(q) + " matrix-vector product of n rows read in sequence (see genRowsI8AVX2).")
	w := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	r := &i8Rows{q: q, sp: GP64(), qp: GP64(), xp: GP64(), dp: GP64(), nb: GP64(), ones: Y15, lowNibbles: Y14}
	if q == "Q4" {
		r.xsp = GP64()
	}
	kick, kt := GP64(), GP64()
	initPageKick(w, kick)
	avx2.splat(0x00010001, r.ones)
	if q == "Q4" {
		avx2.splat(0x0f0f0f0f, r.lowNibbles)
	}
	rowStreamHead(w, ldw, n)
	VXORPS(Y0, Y0, Y0)
	VXORPS(Y5, Y5, Y5)
	MOVQ(w, r.sp)
	Load(Param("nb"), r.nb) // the inputs' pointers come from the frame each row: registers are short
	LEAQ(Mem{Base: w, Index: r.nb, Scale: 2}, r.qp)
	Load(Param("xq"), r.xp)
	Load(Param("dx"), r.dp)
	if q == "Q4" {
		Load(Param("xs"), r.xsp)
	}
	// Pairs of blocks, even ones into Y0 and odd ones into Y5 (two FMA
	// chains), then a last single block.
	Label("pair")
	CMPQ(r.nb, U8(2))
	JL(LabelRef("single"))
	pageKick(Mem{Base: r.qp}, kick, kt, "nokick")
	PREFETCHNTA(Mem{Base: r.qp, Disp: avx2QPrefetch})
	r.block(0, Y0, []VecPhysical{Y1, Y2, Y3, Y4})
	r.block(1, Y5, []VecPhysical{Y6, Y7, Y8, Y9})
	r.advance(2)
	JMP(LabelRef("pair"))
	Label("single")
	TESTQ(r.nb, r.nb)
	JZ(LabelRef("reduce"))
	r.block(0, Y0, []VecPhysical{Y1, Y2, Y3, Y4})
	Label("reduce")
	VADDPS(Y5, Y0, Y0)
	hsum(Y0, Y1)
	rowStreamTail(X0, y, w, ldw, n)
}

// i8Rows is the state of genRowsI8AVX2's body: the pointers to the row's
// scales and quants, the inputs' quants and scales (and q4 sums), the
// blocks left, and the constants (int16 ones; q4: 0x0f bytes).
type i8Rows struct {
	q                       string
	sp, qp, xp, dp, xsp, nb Register
	ones, lowNibbles        VecPhysical
}

// block accumulates block k (0 or 1) of the pair at the pointers into acc,
// with scratch registers v.
func (r *i8Rows) block(k int, acc VecPhysical, v []VecPhysical) {
	s := GP32()
	MOVWLZX(Mem{Base: r.sp, Disp: 2 * k}, s)
	VMOVD(s, v[0].AsX())
	VCVTPH2PS(v[0].AsX(), v[0].AsX())
	VMULSS(Mem{Base: r.dp, Disp: 4 * k}, v[0].AsX(), v[0].AsX())
	VBROADCASTSS(v[0].AsX(), v[0])
	if r.q == "Q8" {
		VMOVDQU(Mem{Base: r.qp, Disp: 32 * k}, v[1]) // w
		VMOVDQU(Mem{Base: r.xp, Disp: 32 * k}, v[2]) // x
		VPSIGNB(v[1], v[2], v[2])                    // x * sign(w)
		VPABSB(v[1], v[1])                           // |w|
		VPMADDUBSW(v[2], v[1], v[3])                 // |w| (unsigned) times x*sign(w) (signed), pairs summed to int16
		VPMADDWD(r.ones, v[3], v[3])                 // pairs of int16 summed to int32
	} else {
		VMOVDQU(Mem{Base: r.qp, Disp: 16 * k}, v[1].AsX()) // 32 nibbles: values 0-15 low, 16-31 high
		VPSRLW(U8(4), v[1].AsX(), v[2].AsX())
		VINSERTI128(U8(1), v[2].AsX(), v[1], v[1])
		VPAND(r.lowNibbles, v[1], v[1])                  // u = q+8, values 0-31 in order
		VMOVDQU(Mem{Base: r.xp, Disp: 32 * k}, v[2])     // x
		VPMADDUBSW(v[2], v[1], v[3])                     // u (unsigned) times x (signed)
		VPMADDWD(r.ones, v[3], v[3])                     // int32 lanes
		VMOVD(Mem{Base: r.xsp, Disp: 4 * k}, v[2].AsX()) // 8 * block sum of x, lane 0
		VPSUBD(v[2], v[3], v[3])
	}
	VCVTDQ2PS(v[3], v[3])
	VFMADD231PS(v[0], v[3], acc)
}

// advance moves the pointers on by a number of blocks.
func (r *i8Rows) advance(blocks int) {
	ADDQ(U8(2*blocks), r.sp)
	ADDQ(U8(qbytes(r.q)*blocks), r.qp)
	ADDQ(U8(32*blocks), r.xp)
	ADDQ(U8(4*blocks), r.dp)
	if r.q == "Q4" {
		ADDQ(U8(4*blocks), r.xsp)
	}
	SUBQ(U8(blocks), r.nb)
}
