//go:build asmgen

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genRowStream emits rowStream<wt><matSuffix>(x, w, ldw, k16, y, n): for
// r < n, y[r] += sum_{c<k16} x[c] * w_r[c], where w_r starts r*ldw bytes
// after w (k16 is a multiple of the lanes, whatever its name says).
// The rows are read one after the other, each into one accumulator in
// column order: the arithmetic of genTile's 1×nr tiles of the same ISA (so
// a decode matrix-vector product still equals a prefill row bit for bit),
// with a single sequential stream of weights, which the hardware prefetcher
// follows better than the nr interleaved streams of a tile.
// At the start of each row it prefetches (NTA) the first two lines of the
// next one, which the hardware prefetcher reaches too late; prefetching every
// line further ahead was slower. Rows longer than a page, or not starting on
// one, also get the q8/q4 streams' page-start prefetch (pageKick). The
// measurements behind both are in docs/performance.md, "Tuning constants".
func genRowStream(s isa, wt string) {
	name := "rowStream" + wt + s.matSuffix
	text(name, NOSPLIT, "func(x *float32, w *byte, ldw int, k16 int, y *float32, n int)")
	Doc(name + " is the matrix-vector product of n weight rows read in sequence (see genRowStream).")
	wsize := weightSize(wt)
	x := Load(Param("x"), GP64())
	w := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	end := Load(Param("k16"), GP64())
	SHLQ(U8(wsize/2), end) // elements to bytes
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	cb := s.lanes * wsize // weight bytes of a vector
	end4 := GP64()
	LEAQ(Mem{Base: end, Disp: -4 * cb}, end4)
	off := GP64()
	xscale := uint8(4 / wsize)
	acc, ws, xs := s.vr[0], s.vr[1:5], s.vr[5:9]
	chunks := func(k int) {
		for u := 0; u < k; u++ {
			loadWeights(wt, Mem{Base: w, Index: off, Scale: 1, Disp: u * cb}, ws[u])
			VMOVUPS(Mem{Base: x, Index: off, Scale: xscale, Disp: u * s.bytes()}, xs[u])
		}
		for u := 0; u < k; u++ {
			VFMADD231PS(ws[u], xs[u], acc)
		}
		ADDQ(U32(k*cb), off)
	}
	kick, kt := GP64(), GP64()
	initPageKick(w, kick)
	rowStreamHead(w, ldw, n)
	VXORPS(acc, acc, acc)
	XORQ(off, off)
	Label("loop4")
	CMPQ(off, end4)
	JG(LabelRef("loop1"))
	pageKick(Mem{Base: w, Index: off, Scale: 1}, kick, kt, "nokick")
	chunks(4)
	JMP(LabelRef("loop4"))
	Label("loop1")
	CMPQ(off, end)
	JGE(LabelRef("reduce"))
	chunks(1)
	JMP(LabelRef("loop1"))
	Label("reduce")
	hsum(acc, s.vr[15])
	rowStreamTail(acc.AsX(), y, w, ldw, n)
}

// rowStreamHead emits the top of a row-stream loop over n weight rows (w the
// current row, ldw bytes apart): stop when none is left, else hint the next
// row's first two lines (see genRowStream).
func rowStreamHead(w, ldw, n Register) {
	Label("row")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	PREFETCHNTA(Mem{Base: w, Index: ldw, Scale: 1})
	PREFETCHNTA(Mem{Base: w, Index: ldw, Scale: 1, Disp: 64})
}

// rowStreamTail emits the end of a row of a row-stream loop: y[0] += sum (the
// row's reduced dot product, in the low lane of an X register), move y and w
// to the next row, loop; then the function's return.
func rowStreamTail(sum, y, w, ldw, n Register) {
	VADDSS(Mem{Base: y}, sum, sum)
	VMOVSS(sum, Mem{Base: y})
	nextRow(y, w, ldw, n)
}

// nextRow emits the end of a loop over n rows (the label row at its top):
// move the output y on by a float32 and the row w by ld bytes, count n down,
// loop; then the function's return at the label done.
func nextRow(y, w, ld, n Register) {
	ADDQ(U8(4), y)
	ADDQ(ld, w)
	DECQ(n)
	JMP(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// avx2QPrefetch is how far ahead (bytes) the AVX2 quantized row kernels
// prefetch (NTA) the quants, once per block, next to the page-start
// prefetch: their arithmetic per byte leaves the out-of-order window too
// short to run ahead of memory by itself.
const avx2QPrefetch = 4096

// genRowStreamQ emits rowStream<q><matSuffix>(x, w, ldw, nb, y, n): for
// r < n, y[r] += x · (row r of a q8 or q4 matrix, nb whole blocks, rows ldw
// bytes apart), reading the rows as one stream (the next row's first lines
// and each next page's start prefetched, as in genRowStream). Each block is
// dequantized in registers exactly as dequant<q> does (scale × value) and
// accumulated in one accumulator per vector of a block, reduced at the end
// as dotF32Body does. On AVX2 a block is the four vectors of dotAVX2's
// 32-value loop, so the result equals dotAVX2 over the dequantized row bit
// for bit. Only AVX2 has it: AVX-512 CPUs take the VNNI kernels.
func genRowStreamQ(s isa, q string) {
	name := "rowStream" + q + s.matSuffix
	text(name, NOSPLIT, "func(x *float32, w *byte, ldw int, nb int, y *float32, n int)")
	Doc(name + " is the q8/q4 matrix-vector product of n rows read in sequence (see genRowStreamQ).")
	x := Load(Param("x"), GP64())
	w := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	nb0 := Load(Param("nb"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	sp, qp, xp, nb := GP64(), GP64(), GP64(), GP64()
	kick, kt := GP64(), GP64()
	initPageKick(w, kick)
	b := newDequantBlock(s, q)
	nv := b.vectors()
	acc, v := s.vr[0:nv], s.vr[4:4+nv]
	rowStreamHead(w, ldw, n)
	for _, r := range acc {
		VXORPS(r, r, r)
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
	b.load(sp, qp, v, func(i int, r VecPhysical) {
		VFMADD231PS(Mem{Base: xp, Disp: s.bytes() * i}, r, acc[i])
	})
	ADDQ(U8(2), sp)
	ADDQ(U8(qbytes(q)), qp)
	ADDQ(U32(128), xp)
	DECQ(nb)
	JMP(LabelRef("block"))
	Label("reduce")
	sum := sumPairs(acc) // as dotF32Body sums its four
	hsum(sum, s.vr[1])
	rowStreamTail(sum.AsX(), y, w, ldw, n)
}

// pageKickAhead is how far ahead of the quants being read (bytes) the row
// streams touch the start of the next 4 KiB page (see pageKick): far enough
// to arrive in time, nearer than the per-line prefetch (at whose distance it
// adds nothing), which stays beside it (docs/performance.md, "Tuning
// constants").
const pageKickAhead = 2048

// pageKick emits the page-start prefetch of a row stream at stream
// position pos: when pos comes within pageKickAhead bytes of the next 4 KiB
// page boundary (kick), the first two lines of that page are prefetched and
// kick moves to the page after pos+pageKickAhead; t is scratch, and label
// names the skip target (unique per function). The per-line prefetches
// further ahead do not bring a page's first lines early enough (the float
// streams' row-start hint is the same idea).
func pageKick(pos Mem, kick, t Register, label string) {
	LEAQ(pos.Offset(pageKickAhead), t)
	CMPQ(t, kick)
	JB(LabelRef(label))
	PREFETCHNTA(Mem{Base: kick})
	PREFETCHNTA(Mem{Base: kick, Disp: 64})
	ANDQ(I32(-4096), t)
	LEAQ(Mem{Base: t, Disp: 4096}, kick)
	Label(label)
}

// initPageKick sets kick to the first page boundary at or after w.
func initPageKick(w, kick Register) {
	LEAQ(Mem{Base: w, Disp: 4095}, kick)
	ANDQ(I32(-4096), kick)
}
