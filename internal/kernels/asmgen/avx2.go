//go:build asmgen

package main

import (
	"fmt"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var yr = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}

// hsumY reduces y (8 lanes) into the low lane of its X register.
func hsumY(y, t VecPhysical) {
	x := y.AsX()
	VEXTRACTF128(U8(1), y, t.AsX())
	VADDPS(t.AsX(), x, x)
	VPERMILPD(U8(1), x, t.AsX())
	VADDPS(t.AsX(), x, x)
	VMOVSHDUP(x, t.AsX())
	VADDSS(t.AsX(), x, x)
}

// genAVX2 emits the AVX2+FMA+F16C versions (8-lane YMM, 16 registers) of
// the dot products, axpys, conversions, float tiles (up to 3×3) and block
// dequantization, for CPUs without AVX-512.
func genAVX2() {
	text("dotAVX2", NOSPLIT, "func(a, b *float32, n8 int) float32")
	Doc("dotAVX2 returns the dot product of the first n8 values (a multiple of 8).")
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param("n8"), GP64())
	for i := 0; i < 4; i++ {
		VXORPS(yr[i], yr[i], yr[i])
	}
	Label("loop32")
	CMPQ(n, U8(32))
	JL(LabelRef("loop8"))
	for i := 0; i < 4; i++ {
		VMOVUPS(Mem{Base: a, Disp: 32 * i}, yr[4+i])
		VFMADD231PS(Mem{Base: b, Disp: 32 * i}, yr[4+i], yr[i])
	}
	ADDQ(U32(128), a)
	ADDQ(U32(128), b)
	SUBQ(U8(32), n)
	JMP(LabelRef("loop32"))
	Label("loop8")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VMOVUPS(Mem{Base: a}, Y4)
	VFMADD231PS(Mem{Base: b}, Y4, Y0)
	ADDQ(U8(32), a)
	ADDQ(U8(32), b)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop8"))
	Label("done")
	VADDPS(Y1, Y0, Y0)
	VADDPS(Y3, Y2, Y2)
	VADDPS(Y2, Y0, Y0)
	hsumY(Y0, Y1)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()

	text("axpyAVX2", NOSPLIT, "func(alpha float32, x, y *float32, n8 int)")
	Doc("axpyAVX2 computes y += alpha*x over the first n8 values (a multiple of 8).")
	VBROADCASTSS(NewParamAddr("alpha", 0), Y0)
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n = Load(Param("n8"), GP64())
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VMOVUPS(Mem{Base: y}, Y1)
	VFMADD231PS(Mem{Base: x}, Y0, Y1)
	VMOVUPS(Y1, Mem{Base: y})
	ADDQ(U8(32), x)
	ADDQ(U8(32), y)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	text("dotF16AVX2", NOSPLIT, "func(a *float32, b *uint16, n8 int) float32")
	Doc("dotF16AVX2 returns sum a[i]*f16(b[i]) over the first n8 values (a multiple of 8).")
	a = Load(Param("a"), GP64())
	b = Load(Param("b"), GP64())
	n = Load(Param("n8"), GP64())
	VXORPS(Y0, Y0, Y0)
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: b}, Y2)
	VFMADD231PS(Mem{Base: a}, Y2, Y0)
	ADDQ(U8(32), a)
	ADDQ(U8(16), b)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	hsumY(Y0, Y1)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()

	text("axpyF16AVX2", NOSPLIT, "func(alpha float32, x *uint16, y *float32, n8 int)")
	Doc("axpyF16AVX2 computes y += alpha*f16(x) over the first n8 values (a multiple of 8).")
	VBROADCASTSS(NewParamAddr("alpha", 0), Y0)
	x = Load(Param("x"), GP64())
	y = Load(Param("y"), GP64())
	n = Load(Param("n8"), GP64())
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: x}, Y2)
	VMOVUPS(Mem{Base: y}, Y1)
	VFMADD231PS(Y2, Y0, Y1)
	VMOVUPS(Y1, Mem{Base: y})
	ADDQ(U8(16), x)
	ADDQ(U8(32), y)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	text("f32ToF16AVX2", NOSPLIT, "func(dst *uint16, src *float32, n8 int)")
	Doc("f32ToF16AVX2 converts n8 values (a multiple of 8), rounding to nearest even.")
	d := Load(Param("dst"), GP64())
	s := Load(Param("src"), GP64())
	n = Load(Param("n8"), GP64())
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VMOVUPS(Mem{Base: s}, Y0)
	VCVTPS2PH(U8(0), Y0, X1) // register form: see f32ToF16AVX512
	VMOVDQU(X1, Mem{Base: d})
	ADDQ(U8(32), s)
	ADDQ(U8(16), d)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	text("f16ToF32AVX2", NOSPLIT, "func(dst *float32, src *uint16, n8 int)")
	Doc("f16ToF32AVX2 converts n8 values (a multiple of 8).")
	d = Load(Param("dst"), GP64())
	s = Load(Param("src"), GP64())
	n = Load(Param("n8"), GP64())
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: s}, Y0)
	VMOVUPS(Y0, Mem{Base: d})
	ADDQ(U8(16), s)
	ADDQ(U8(32), d)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	for _, wt := range []string{"F32", "F16", "BF16"} {
		for mr := 1; mr <= 3; mr++ {
			for nr := 1; nr <= 3; nr++ {
				genTileAVX2(wt, mr, nr)
			}
		}
	}
	for _, q := range []string{"Q8", "Q4"} {
		name := "dequant" + q + "AVX2"
		text(name, NOSPLIT, "func(dst *float32, scales *byte, quants *byte, nb int)")
		Doc(name + " dequantizes nb whole blocks (binary16 scales, quants) into dst.")
		d := Load(Param("dst"), GP64())
		s := Load(Param("scales"), GP64())
		qp := Load(Param("quants"), GP64())
		nb := Load(Param("nb"), GP64())
		if q == "Q4" {
			t := GP32()
			MOVL(U32(15), t)
			VMOVD(t, X10)
			VPBROADCASTD(X10, Y10)
			MOVL(U32(8), t)
			VMOVD(t, X11)
			VPBROADCASTD(X11, Y11)
		}
		Label("loop")
		TESTQ(nb, nb)
		JZ(LabelRef("done"))
		t := GP32()
		MOVWLZX(Mem{Base: s}, t)
		VMOVD(t, X8)
		VCVTPH2PS(X8, X8)
		VBROADCASTSS(X8, Y8)
		if q == "Q8" {
			for i := 0; i < 4; i++ {
				VPMOVSXBD(Mem{Base: qp, Disp: 8 * i}, yr[i])
			}
		} else {
			VPMOVZXBD(Mem{Base: qp}, Y0)
			VPMOVZXBD(Mem{Base: qp, Disp: 8}, Y1)
			VPSRLD(U8(4), Y0, Y2)
			VPSRLD(U8(4), Y1, Y3)
			for i := 0; i < 4; i++ {
				VPAND(Y10, yr[i], yr[i])
				VPSUBD(Y11, yr[i], yr[i])
			}
		}
		for i := 0; i < 4; i++ {
			VCVTDQ2PS(yr[i], yr[i])
			VMULPS(Y8, yr[i], yr[i])
			VMOVUPS(yr[i], Mem{Base: d, Disp: 32 * i})
		}
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
}

// genTileAVX2 is genTile with 8-lane YMM registers (k8 a multiple of 8).
func genTileAVX2(wt string, mr, nr int) {
	name := fmt.Sprintf("tile%sAVX2_%dx%d", wt, mr, nr)
	text(name, NOSPLIT, "func(x *float32, ldx int, w *byte, ldw int, k8 int, y *float32, ldy int)")
	Doc(name + " accumulates a register tile of dot products (see genTile).")
	wsize := 4
	if wt != "F32" {
		wsize = 2
	}
	xp := make([]Register, mr)
	xp[0] = Load(Param("x"), GP64())
	ldx := Load(Param("ldx"), GP64())
	SHLQ(U8(2), ldx)
	for i := 1; i < mr; i++ {
		xp[i] = GP64()
		LEAQ(Mem{Base: xp[i-1], Index: ldx, Scale: 1}, xp[i])
	}
	wp := make([]Register, nr)
	wp[0] = Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	for j := 1; j < nr; j++ {
		wp[j] = GP64()
		LEAQ(Mem{Base: wp[j-1], Index: ldw, Scale: 1}, wp[j])
	}
	end := Load(Param("k8"), GP64())
	if wsize == 4 {
		SHLQ(U8(2), end)
	} else {
		SHLQ(U8(1), end)
	}
	off := GP64()
	XORQ(off, off)
	acc := func(i, j int) VecPhysical { return yr[i*nr+j] }
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			VXORPS(acc(i, j), acc(i, j), acc(i, j))
		}
	}
	xs := yr[9:12]
	ws := yr[12:15]
	xscale := uint8(4 / wsize)
	Label("loop")
	CMPQ(off, end)
	JGE(LabelRef("reduce"))
	for j := 0; j < nr; j++ {
		m := Mem{Base: wp[j], Index: off, Scale: 1}
		switch wt {
		case "F32":
			VMOVUPS(m, ws[j])
		case "F16":
			VCVTPH2PS(m, ws[j])
		case "BF16":
			VPMOVZXWD(m, ws[j])
			VPSLLD(U8(16), ws[j], ws[j])
		}
	}
	for i := 0; i < mr; i++ {
		VMOVUPS(Mem{Base: xp[i], Index: off, Scale: xscale}, xs[i])
		for j := 0; j < nr; j++ {
			VFMADD231PS(ws[j], xs[i], acc(i, j))
		}
	}
	ADDQ(U8(8*wsize), off)
	JMP(LabelRef("loop"))
	Label("reduce")
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			a := acc(i, j)
			hsumY(a, Y15)
			VADDSS(Mem{Base: y, Disp: 4 * j}, a.AsX(), a.AsX())
			VMOVSS(a.AsX(), Mem{Base: y, Disp: 4 * j})
		}
		if i+1 < mr {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}

// avx2QPrefetch is how far ahead (bytes) the AVX2 quantized row kernels
// prefetch (NTA) the quants, once per block, next to the page-start
// prefetch: their arithmetic per byte leaves the out-of-order window too
// short to run ahead of memory by itself.
var avx2QPrefetch = 4096

// genRowStreamQAVX2 emits rowStream<q>AVX2(x, w, ldw, nb, y, n): for r < n,
// y[r] += x · (row r of a q8 or q4 matrix, nb whole blocks, rows ldw bytes
// apart), reading the rows as one stream (the next row's first lines and
// each next page's start prefetched, as in genRowStream). Each block is
// dequantized in registers exactly as dequant<q>AVX2 does (scale × value)
// and accumulated exactly as dotAVX2's 32-value loop does (four
// accumulators, one per 8 values of a block, reduced the same way), so the
// result equals dotAVX2 over the dequantized row bit for bit.
func genRowStreamQAVX2(q string) {
	name := "rowStream" + q + "AVX2"
	text(name, NOSPLIT, "func(x *float32, w *byte, ldw int, nb int, y *float32, n int)")
	Doc(name + " is the q8/q4 matrix-vector product of n rows read in sequence (see genRowStreamQAVX2).")
	x := Load(Param("x"), GP64())
	w := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	nb0 := Load(Param("nb"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	sp, qp, xp, nb := GP64(), GP64(), GP64(), GP64()
	kick, kt := GP64(), GP64()
	initPageKick(w, kick)
	if q == "Q4" {
		t := GP32()
		MOVL(U32(15), t)
		VMOVD(t, X10)
		VPBROADCASTD(X10, Y10)
		MOVL(U32(8), t)
		VMOVD(t, X11)
		VPBROADCASTD(X11, Y11)
	}
	qbytes := 32 // quant bytes per block
	if q == "Q4" {
		qbytes = 16
	}
	rowStreamHead(w, ldw, n)
	for i := 0; i < 4; i++ {
		VXORPS(yr[i], yr[i], yr[i])
	}
	MOVQ(w, sp)
	LEAQ(Mem{Base: w, Index: nb0, Scale: 2}, qp)
	MOVQ(x, xp)
	MOVQ(nb0, nb)
	Label("block")
	TESTQ(nb, nb)
	JZ(LabelRef("reduce"))
	pageKick(Mem{Base: qp}, kick, kt, "nokick")
	PREFETCHNTA(Mem{Base: qp, Disp: avx2QPrefetch})
	t := GP32()
	MOVWLZX(Mem{Base: sp}, t)
	VMOVD(t, X8)
	VCVTPH2PS(X8, X8)
	VBROADCASTSS(X8, Y8)
	v := yr[4:8]
	if q == "Q8" {
		for i := 0; i < 4; i++ {
			VPMOVSXBD(Mem{Base: qp, Disp: 8 * i}, v[i])
		}
	} else {
		VPMOVZXBD(Mem{Base: qp}, v[0])
		VPMOVZXBD(Mem{Base: qp, Disp: 8}, v[1])
		VPSRLD(U8(4), v[0], v[2])
		VPSRLD(U8(4), v[1], v[3])
		for i := 0; i < 4; i++ {
			VPAND(Y10, v[i], v[i])
			VPSUBD(Y11, v[i], v[i])
		}
	}
	for i := 0; i < 4; i++ {
		VCVTDQ2PS(v[i], v[i])
		VMULPS(Y8, v[i], v[i])
		VFMADD231PS(Mem{Base: xp, Disp: 32 * i}, v[i], yr[i])
	}
	ADDQ(U8(2), sp)
	ADDQ(U8(qbytes), qp)
	ADDQ(U32(128), xp)
	DECQ(nb)
	JMP(LabelRef("block"))
	Label("reduce")
	VADDPS(Y1, Y0, Y0)
	VADDPS(Y3, Y2, Y2)
	VADDPS(Y2, Y0, Y0)
	hsumY(Y0, Y1)
	rowStreamTail(X0, y, w, ldw, n)
}

// genRowsQ8I8AVX2 emits rowsQ8I8AVX2(xq, dx, w, ldw, nb, y, n): for r < n,
// y[r] += sum over nb blocks b of s_b * (row r's quants · xq block b), with
// s_b = scale_b(row r) * dx[b], the integer dot products exact: each block's
// 32 int8 pairs are multiplied by VPMADDUBSW (|w| times x with w's sign) and
// VPMADDWD into 8 int32 lanes, converted and accumulated with one FMA per
// block into 8 float lanes (even and odd blocks in two), reduced at the end
// of the row. Rows are read as one stream with the next-row, page-start and
// per-line prefetches. It is the q8 matrix-vector kernel of CPUs with AVX2
// but not AVX-512 (the int8 analogue of the VNNI path); every input row,
// decode or prefill, goes through it, so the arithmetic does not depend on
// the number of rows. -bench 'MatVecSweep/MatMul-q8-AVX2' (1 thread, this
// CPU forced to AVX2): 20 GB/s for the float stream it replaces, 9 without
// the per-line prefetch, 27-28 with one FMA chain, 32-33 with two.
func genRowsQ8I8AVX2() { genRowsI8AVX2("Q8") }

// genRowsI8AVX2 emits rows<q>I8AVX2 (see genRowsQ8I8AVX2). For q4 the
// weights are nibbles u = q+8 in [0, 15], multiplied as unsigned bytes
// with x, and each block's int32 sum is corrected by xs[b] = 8 * (the block
// sum of xq) in one lane before the conversion: still exact.
func genRowsI8AVX2(q string) {
	name := "rows" + q + "I8AVX2"
	sig := "func(xq *byte, dx *float32, w *byte, ldw int, nb int, y *float32, n int)"
	if q == "Q4" {
		sig = "func(xq *byte, dx *float32, xs *int32, w *byte, ldw int, nb int, y *float32, n int)"
	}
	text(name, NOSPLIT, sig)
	Doc(name + " is the int8 " + strings.ToLower(q) + " matrix-vector product of n rows read in sequence (see genRowsQ8I8AVX2).")
	qbytes := 32
	if q == "Q4" {
		qbytes = 16
	}
	w := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	sp, qp, xp, dp, nb := GP64(), GP64(), GP64(), GP64(), GP64()
	var xsp Register
	if q == "Q4" {
		xsp = GP64()
	}
	kick, kt := GP64(), GP64()
	initPageKick(w, kick)
	ones, lowNibbles := Y15, Y14
	t := GP32()
	MOVL(U32(0x00010001), t)
	VMOVD(t, X15)
	VPBROADCASTD(X15, ones)
	if q == "Q4" {
		MOVL(U32(0x0f0f0f0f), t)
		VMOVD(t, X14)
		VPBROADCASTD(X14, lowNibbles)
	}
	// block accumulates block k (0 or 1) of the pair at the pointers into
	// acc, with scratch registers v.
	block := func(k int, acc VecPhysical, v []VecPhysical) {
		s := GP32()
		MOVWLZX(Mem{Base: sp, Disp: 2 * k}, s)
		VMOVD(s, v[0].AsX())
		VCVTPH2PS(v[0].AsX(), v[0].AsX())
		VMULSS(Mem{Base: dp, Disp: 4 * k}, v[0].AsX(), v[0].AsX())
		VBROADCASTSS(v[0].AsX(), v[0])
		if q == "Q8" {
			VMOVDQU(Mem{Base: qp, Disp: qbytes * k}, v[1]) // w
			VMOVDQU(Mem{Base: xp, Disp: 32 * k}, v[2])     // x
			VPSIGNB(v[1], v[2], v[2])                      // x * sign(w)
			VPABSB(v[1], v[1])                             // |w|
			VPMADDUBSW(v[2], v[1], v[3])                   // |w| (unsigned) times x*sign(w) (signed), pairs summed to int16
			VPMADDWD(ones, v[3], v[3])                     // pairs of int16 summed to int32
		} else {
			VMOVDQU(Mem{Base: qp, Disp: qbytes * k}, v[1].AsX()) // 32 nibbles: values 0-15 low, 16-31 high
			VPSRLW(U8(4), v[1].AsX(), v[2].AsX())
			VINSERTI128(U8(1), v[2].AsX(), v[1], v[1])
			VPAND(lowNibbles, v[1], v[1])                  // u = q+8, values 0-31 in order
			VMOVDQU(Mem{Base: xp, Disp: 32 * k}, v[2])     // x
			VPMADDUBSW(v[2], v[1], v[3])                   // u (unsigned) times x (signed)
			VPMADDWD(ones, v[3], v[3])                     // int32 lanes
			VMOVD(Mem{Base: xsp, Disp: 4 * k}, v[2].AsX()) // 8 * block sum of x, lane 0
			VPSUBD(v[2], v[3], v[3])
		}
		VCVTDQ2PS(v[3], v[3])
		VFMADD231PS(v[0], v[3], acc)
	}
	advance := func(blocks int) {
		ADDQ(U8(2*blocks), sp)
		ADDQ(U8(qbytes*blocks), qp)
		ADDQ(U8(32*blocks), xp)
		ADDQ(U8(4*blocks), dp)
		if q == "Q4" {
			ADDQ(U8(4*blocks), xsp)
		}
		SUBQ(U8(blocks), nb)
	}
	rowStreamHead(w, ldw, n)
	VXORPS(Y0, Y0, Y0)
	VXORPS(Y5, Y5, Y5)
	MOVQ(w, sp)
	Load(Param("nb"), nb) // the inputs' pointers come from the frame each row: registers are short
	LEAQ(Mem{Base: w, Index: nb, Scale: 2}, qp)
	Load(Param("xq"), xp)
	Load(Param("dx"), dp)
	if q == "Q4" {
		Load(Param("xs"), xsp)
	}
	// Pairs of blocks, even ones into Y0 and odd ones into Y5 (two FMA
	// chains), then a last single block.
	Label("pair")
	CMPQ(nb, U8(2))
	JL(LabelRef("single"))
	pageKick(Mem{Base: qp}, kick, kt, "nokick")
	PREFETCHNTA(Mem{Base: qp, Disp: avx2QPrefetch})
	block(0, Y0, []VecPhysical{Y1, Y2, Y3, Y4})
	block(1, Y5, []VecPhysical{Y6, Y7, Y8, Y9})
	advance(2)
	JMP(LabelRef("pair"))
	Label("single")
	TESTQ(nb, nb)
	JZ(LabelRef("reduce"))
	block(0, Y0, []VecPhysical{Y1, Y2, Y3, Y4})
	Label("reduce")
	VADDPS(Y5, Y0, Y0)
	hsumY(Y0, Y1)
	rowStreamTail(X0, y, w, ldw, n)
}
