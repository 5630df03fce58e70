//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genTile emits tile<wt>_<mr>x<nr>: for i < mr, j < nr,
// y[i*ldy+j] += sum_{c<k16} x[i*ldx+c] * w_j[c], where w_j starts ldw bytes
// after w_{j-1} and holds float32, binary16 or bfloat16 values.
func genTile(wt string, mr, nr int) {
	name := fmt.Sprintf("tile%s_%dx%d", wt, mr, nr)
	text(name, NOSPLIT, "func(x *float32, ldx int, w *byte, ldw int, k16 int, y *float32, ldy int)")
	Doc(name + " accumulates a register tile of dot products (see genTile).")
	wsize := 4
	if wt != "F32" {
		wsize = 2
	}
	xp := make([]Register, mr)
	x0 := Load(Param("x"), GP64())
	ldx := Load(Param("ldx"), GP64())
	SHLQ(U8(2), ldx)
	for i := range xp {
		if i == 0 {
			xp[i] = x0
			continue
		}
		xp[i] = GP64()
		LEAQ(Mem{Base: xp[i-1], Index: ldx, Scale: 1}, xp[i])
	}
	wp := make([]Register, nr)
	w0 := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	for j := range wp {
		if j == 0 {
			wp[j] = w0
			continue
		}
		wp[j] = GP64()
		LEAQ(Mem{Base: wp[j-1], Index: ldw, Scale: 1}, wp[j])
	}
	end := Load(Param("k16"), GP64())
	if wsize == 4 {
		SHLQ(U8(2), end)
	} else {
		SHLQ(U8(1), end)
	}
	off := GP64()
	XORQ(off, off)
	// Matrix-vector tiles (mr <= tilePrefetchMR) are memory-bound: they
	// prefetch the same columns of the next tile's weight rows (nr*ldw bytes
	// ahead), which the hardware prefetcher would only find after crossing
	// into each of their pages.
	var pf Register
	if mr <= tilePrefetchMR {
		pf = GP64()
		IMUL3Q(U8(nr), ldw, pf)
	}
	acc := func(i, j int) VecPhysical { return zr[i*nr+j] }
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			VXORPS(acc(i, j), acc(i, j), acc(i, j))
		}
	}
	xs := zr[20:24]
	ws := zr[24:29]
	xscale := uint8(4 / wsize)
	// chunk multiplies 16 columns at byte offset off+disp of the weight rows,
	// using wr for the weights.
	chunk := func(disp int, wr []VecPhysical, prefetch bool) {
		for j := 0; j < nr; j++ {
			m := Mem{Base: wp[j], Index: off, Scale: 1, Disp: disp}
			switch wt {
			case "F32":
				VMOVUPS(m, wr[j])
			case "F16":
				VCVTPH2PS(m, wr[j])
			case "BF16":
				VPMOVZXWD(m, wr[j])
				VPSLLD(U8(16), wr[j], wr[j])
			}
			if prefetch && pf != nil {
				PREFETCHT0(Mem{Base: wp[j], Index: pf, Scale: 1, Disp: disp})
			}
		}
		for i := 0; i < mr; i++ {
			VMOVUPS(Mem{Base: xp[i], Index: off, Scale: xscale, Disp: disp * int(xscale)}, xs[i])
			for j := 0; j < nr; j++ {
				VFMADD231PS(wr[j], xs[i], acc(i, j))
			}
		}
	}
	advance := func(n int) {
		ADDQ(U8(n), off)
		if pf != nil {
			ADDQ(U8(n), pf)
		}
	}
	if pf != nil {
		// Two chunks per iteration (the same order of additions into each
		// accumulator: results do not depend on the unrolling).
		end2 := GP64()
		LEAQ(Mem{Base: end, Disp: -32 * wsize}, end2)
		Label("loop2")
		CMPQ(off, end2)
		JG(LabelRef("loop"))
		chunk(0, ws, true)
		chunk(16*wsize, zr[10:15], wsize == 4)
		advance(32 * wsize)
		JMP(LabelRef("loop2"))
	}
	Label("loop")
	CMPQ(off, end)
	JGE(LabelRef("reduce"))
	chunk(0, ws, true)
	advance(16 * wsize)
	JMP(LabelRef("loop"))
	Label("reduce")
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			a := acc(i, j)
			hsum(a, Z31)
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

// tilePrefetchMR is the most x rows for which a float tile prefetches
// (decode and two-row steps; larger tiles are compute-bound).
const tilePrefetchMR = 2

// bgemmMR is the most x rows a broadcast GEMM tile covers (2 vectors of
// weight rows each: 24 accumulators).
const bgemmMR = 12

// genBGEMM emits bgemm_<mr>(xp, wp, kc, y, ldy, mask): the outer-product
// GEMM micro-kernel. xp holds kc groups of mr floats (x rows interleaved,
// k-major), wp holds kc groups of 32 floats (32 weight rows, k-major).
// For i < mr and lanes l < 32 enabled in mask (bit l),
// y[i*ldy+l] += sum_k xp[k*mr+i] * wp[k*32+l].
func genBGEMM(mr int) {
	name := fmt.Sprintf("bgemm_%d", mr)
	text(name, NOSPLIT, "func(xp *float32, wp *float32, kc int, y *float32, ldy int, mask uint32)")
	Doc(name + " is the broadcast GEMM micro-kernel (see genBGEMM).")
	xp := Load(Param("xp"), GP64())
	wp := Load(Param("wp"), GP64())
	kc := Load(Param("kc"), GP64())
	for i := 0; i < 2*mr; i++ {
		VXORPS(zr[i], zr[i], zr[i])
	}
	bt := []VecPhysical{Z26, Z27, Z28, Z29, Z30, Z31}
	TESTQ(kc, kc)
	JZ(LabelRef("store"))
	Label("loop")
	VMOVUPS(Mem{Base: wp}, Z24)
	VMOVUPS(Mem{Base: wp, Disp: 64}, Z25)
	for i := 0; i < mr; i++ {
		b := bt[i%len(bt)]
		VBROADCASTSS(Mem{Base: xp, Disp: 4 * i}, b)
		VFMADD231PS(Z24, b, zr[2*i])
		VFMADD231PS(Z25, b, zr[2*i+1])
	}
	ADDQ(U32(128), wp)
	ADDQ(U32(4*mr), xp)
	DECQ(kc)
	JNZ(LabelRef("loop"))
	Label("store")
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	m := Load(Param("mask"), GP32())
	KMOVW(m, K1)
	SHRL(U8(16), m)
	KMOVW(m, K2)
	for i := 0; i < mr; i++ {
		VMOVUPS_Z(Mem{Base: y}, K1, Z24)
		VADDPS(zr[2*i], Z24, Z24)
		VMOVUPS(Z24, K1, Mem{Base: y})
		VMOVUPS_Z(Mem{Base: y, Disp: 64}, K2, Z25)
		VADDPS(zr[2*i+1], Z25, Z25)
		VMOVUPS(Z25, K2, Mem{Base: y, Disp: 64})
		if i+1 < mr {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}

// genPackGather emits packX, which packs the inputs of the broadcast GEMM
// with gathers (a handful of rows, reused across every weight panel).
func genPackGather() {
	// packX(dst, src, idx, mr, kl): for k < kl, i < mr:
	// dst[k*mr+i] = float32 at src + idx[i] + 4k.
	text("packX", NOSPLIT, "func(dst *float32, src *byte, idx *int32, mr int, kl int)")
	Doc("packX interleaves mr <= 16 float32 rows (byte offsets idx) into k-major groups of mr.")
	d := Load(Param("dst"), GP64())
	s := Load(Param("src"), GP64())
	ix := Load(Param("idx"), GP64())
	mrr := Load(Param("mr"), GP64())
	kl := Load(Param("kl"), GP64())
	VMOVDQU32(Mem{Base: ix}, Z2)
	mk := GP64()
	MOVQ(U32(1), mk)
	SHLXQ(mrr, mk, mk)
	DECQ(mk)
	KMOVW(mk.As32(), K3)
	SHLQ(U8(2), mrr)
	TESTQ(kl, kl)
	JZ(LabelRef("done"))
	Label("loop")
	KMOVW(K3, K1)
	VGATHERDPS(Mem{Base: s, Index: Z2, Scale: 1}, K1, Z0)
	VMOVUPS(Z0, K3, Mem{Base: d})
	ADDQ(U8(4), s)
	ADDQ(mrr, d)
	DECQ(kl)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

func genBF16ToF32() {
	text("bf16ToF32AVX512", NOSPLIT, "func(dst *float32, src *uint16, n16 int)")
	Doc("bf16ToF32AVX512 converts n16 bfloat16 values (a multiple of 16).")
	d := Load(Param("dst"), GP64())
	s := Load(Param("src"), GP64())
	n := Load(Param("n16"), GP64())
	Label("loop")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VPMOVZXWD(Mem{Base: s}, Z0)
	VPSLLD(U8(16), Z0, Z0)
	VMOVUPS(Z0, Mem{Base: d})
	ADDQ(U8(32), s)
	ADDQ(U8(64), d)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// genPackTranspose emits packW32T(dst, src, rowoff, kl): for k < kl and
// l < 32, dst[k*32+l] = float32 at src + rowoff[l] + 4k (rowoff holds
// int64 byte offsets), using 16×16 in-register transposes.
// dst must have room for kl rounded up to 16 groups.
func genPackTranspose() {
	text("packW32T", NOSPLIT, "func(dst *float32, src *byte, rowoff *int64, kl int)")
	Doc("packW32T transposes 32 float32 rows into k-major groups of 32 (see genPackTranspose).")
	d := Load(Param("dst"), GP64())
	s := Load(Param("src"), GP64())
	tbl := Load(Param("rowoff"), GP64())
	kl := Load(Param("kl"), GP64())
	ro := GP64()
	m := GP64()
	Label("chunk")
	TESTQ(kl, kl)
	JLE(LabelRef("done"))
	MOVQ(U32(0xffff), m)
	CMPQ(kl, U8(16))
	JGE(LabelRef("full"))
	MOVQ(U32(1), m)
	SHLXQ(kl, m, m)
	DECQ(m)
	Label("full")
	KMOVW(m.As32(), K1)
	for half := 0; half < 2; half++ {
		for r := 0; r < 16; r++ {
			MOVQ(Mem{Base: tbl, Disp: 8 * (16*half + r)}, ro)
			VMOVUPS_Z(Mem{Base: s, Index: ro, Scale: 1}, K1, zr[r])
		}
		for i := 0; i < 8; i++ {
			VUNPCKLPS(zr[2*i+1], zr[2*i], zr[16+2*i])
			VUNPCKHPS(zr[2*i+1], zr[2*i], zr[16+2*i+1])
		}
		t := zr[16:32]
		for i := 0; i < 4; i++ {
			VUNPCKLPD(t[4*i+2], t[4*i], zr[4*i])
			VUNPCKHPD(t[4*i+2], t[4*i], zr[4*i+1])
			VUNPCKLPD(t[4*i+3], t[4*i+1], zr[4*i+2])
			VUNPCKHPD(t[4*i+3], t[4*i+1], zr[4*i+3])
		}
		u := zr[0:16]
		for c := 0; c < 4; c++ {
			v0, v1, w0, w1, o := Z16, Z17, Z18, Z19, Z20
			VSHUFF32X4(U8(0x88), u[4+c], u[c], v0)
			VSHUFF32X4(U8(0xdd), u[4+c], u[c], v1)
			VSHUFF32X4(U8(0x88), u[12+c], u[8+c], w0)
			VSHUFF32X4(U8(0xdd), u[12+c], u[8+c], w1)
			for _, oc := range []struct {
				imm  uint8
				a, b VecPhysical
				col  int
			}{{0x88, v0, w0, c}, {0xdd, v0, w0, 8 + c}, {0x88, v1, w1, 4 + c}, {0xdd, v1, w1, 12 + c}} {
				VSHUFF32X4(U8(oc.imm), oc.b, oc.a, o)
				VMOVUPS(o, Mem{Base: d, Disp: 128*oc.col + 64*half})
			}
		}
	}
	ADDQ(U8(64), s)
	ADDQ(U32(16*128), d)
	SUBQ(U8(16), kl)
	JMP(LabelRef("chunk"))
	Label("done")
	VZEROUPPER()
	RET()
}

// genRowStream emits rowStream<wt>(x, w, ldw, k16, y, n): for r < n,
// y[r] += sum_{c<k16} x[c] * w_r[c], where w_r starts r*ldw bytes after w.
// The rows are read one after the other, each into one accumulator in
// column order: the arithmetic of genTile's 1×nr tiles (so a decode
// matrix-vector product still equals a prefill row bit for bit), with a
// single sequential stream of weights, which the hardware prefetcher
// follows better than the nr interleaved streams of a tile.
// At the start of each row it prefetches (NTA) the first two lines of the
// next one: in a C model of this loop over 1 GiB of 4 KiB rows that read
// 35-38 GB/s without, the hint gave +8-12% on one thread whether the rows
// were page-aligned or not (one, two or four lines, the next row or the one
// after, all the same; prefetching every line 4-16 KiB ahead, T0 or NTA, was
// slower). Qwen3-0.6B f32 decode, same minutes: 1 thread 11.2 → 13.5
// tok/s, 2 threads 20.3 → 23.7. Rows longer than a page, or not starting
// on one, also get the q8/q4 streams' page-start prefetch (pageKick):
// SmolLM2-135M f32 decode (2304-byte rows) on 1 thread, 4 alternating
// pairs: 63.7-71.6 → 67.7-74.4 tok/s, ahead in every pair; Qwen3 (4 KiB
// rows) unchanged. With avx2 it emits rowStream<wt>AVX2, the same loop with
// 8-lane YMM registers and the arithmetic of the AVX2 1×nr tiles (k16 is
// then a multiple of 8), for CPUs without AVX-512.
func genRowStream(wt string, avx2 bool) {
	name := "rowStream" + wt
	lanes, vr, hs := 16, zr, hsum
	if avx2 {
		name += "AVX2"
		lanes, vr, hs = 8, yr, hsumY
	}
	text(name, NOSPLIT, "func(x *float32, w *byte, ldw int, k16 int, y *float32, n int)")
	Doc(name + " is the matrix-vector product of n weight rows read in sequence (see genRowStream).")
	wsize := 4
	if wt != "F32" {
		wsize = 2
	}
	x := Load(Param("x"), GP64())
	w := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	end := Load(Param("k16"), GP64())
	if wsize == 4 {
		SHLQ(U8(2), end)
	} else {
		SHLQ(U8(1), end)
	}
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	end4 := GP64()
	LEAQ(Mem{Base: end, Disp: -4 * lanes * wsize}, end4)
	off := GP64()
	xscale := uint8(4 / wsize)
	acc := vr[0]
	ws := vr[1:5]
	xs := vr[5:9]
	load := func(m Mem, dst VecPhysical) {
		switch wt {
		case "F32":
			VMOVUPS(m, dst)
		case "F16":
			VCVTPH2PS(m, dst)
		case "BF16":
			VPMOVZXWD(m, dst)
			VPSLLD(U8(16), dst, dst)
		}
	}
	chunks := func(k int) {
		for u := 0; u < k; u++ {
			load(Mem{Base: w, Index: off, Scale: 1, Disp: u * lanes * wsize}, ws[u])
			VMOVUPS(Mem{Base: x, Index: off, Scale: xscale, Disp: u * 4 * lanes}, xs[u])
		}
		for u := 0; u < k; u++ {
			VFMADD231PS(ws[u], xs[u], acc)
		}
		ADDQ(U32(k*lanes*wsize), off)
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
	hs(acc, vr[15])
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
	ADDQ(U8(4), y)
	ADDQ(ldw, w)
	DECQ(n)
	JMP(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}
