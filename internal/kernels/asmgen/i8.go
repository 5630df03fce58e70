//go:build asmgen

package main

import (
	"fmt"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The q8/q4 kernels of x86 CPUs without AVX-512, one body per family for
// both of their routes (i8route): avx2, whose int8 dot products are
// VPMADDUBSW and VPMADDWD, and avx2+vnni, whose are VPDPBUSD on ymm
// (AVX-VNNI, VEX-encoded: vex.go).
//
// Both compute, per group of 8 blocks of 32 columns, the exact integer dot
// product D[b] of each block in one vector lane per block (the weights'
// quants times the activations quantized per block, as the AVX-512 VNNI
// kernels do per 16 blocks), then per group
//
//	S = cvt(dw) * dx;  acc += cvt(D) * S
//
// and finally y = hsum(acc), with dw the blocks' scales, dx the activations'.
// The matrix-vector kernels (<p>RowStream<q>AVX2) reduce each block's
// partial sums into its lane with horizontal adds; the matrix-product tiles
// (<p>Tile<q>AVX2_<mr>x<nr>) read weights and activations laid out per group
// with dword k of block b in lane b (transposeW<q>AVX2, quantizeXI8TAVX2), so
// that their integer sums land in the block's lane directly. Integer sums are
// exact in any order, so every kernel does the same float operations on the
// same values: an output does not depend on the number of input rows, and the
// two routes agree with each other bit for bit.
//
// Integer products. q4 weights are nibbles u = q+8 in [0, 15]: u times x
// (|x| <= 127) summed in pairs is at most 3810, so VPMADDUBSW never
// saturates and eight of its results still fit int16 (the tiles sum a
// group's eight steps in int16 and widen once); the -8 offset is corrected
// with the block sums of x. q8 weights on avx2 take the sign trick, |w|
// (unsigned, <= 128) times x*sign(w) (|x| <= 127): pairs of at most 32512, no
// saturation. On avx2+vnni, q8 weights are made unsigned (w xor 0x80 =
// w+128) and corrected by 128 times the block sums, as the AVX-512 kernels
// do.
//
// Activations are prepared per input row (quantizeXI8<layout>AVX2) as
// records of i8XGroup bytes per group of 8 blocks: 256 bytes of quants, the
// 8 blocks' scales dx (float32) and their offsets xo = -(sum of the block's
// quants << shift) (int32). Weights for the tiles are laid out per row
// (transposeW<q>AVX2) as records of i8WGroup bytes per group: 256 bytes of
// quants, the 8 scales as float32 (zero past the row's blocks).

const (
	i8XGroup = 320 // bytes of a group of 8 blocks of a prepared activation row
	i8WGroup = 288 // bytes of a group of a laid-out weight row
)

// i8route is one of the two int8 routes of CPUs without AVX-512.
type i8route struct {
	prefix string // names: "i8" (avx2) or "vnni" (avx2+vnni)
	vnni   bool
}

var (
	i8avx2    = i8route{prefix: "i8"}
	i8avxvnni = i8route{prefix: "vnni", vnni: true}
)

// offset reports whether the route's q kernels correct an offset with xo.
func (r i8route) offset(q string) bool { return q == "Q4" || r.vnni }

// i8Consts are the constant tables of these kernels.
var (
	i8Const    Mem // see genI8Consts
	i8TailMask Mem // 9 vectors: lanes < c set in vector c
)

const (
	i8Ones   = 0   // int16 ones
	i8Low4   = 32  // 0x0f bytes
	i8High   = 64  // 0x80 bytes
	i8Order  = 96  // dword permute 0,4,1,5,2,6,3,7 (VPERMD)
	i8Abs    = 128 // float32 sign mask cleared
	i8Scalar = 160 // float32 1/127, 127, 1e-30
)

// genI8Consts emits the constant tables.
func genI8Consts() {
	i8Const = GLOBL("i8Const", RODATA|NOPTR)
	// (the assembler wants DATA in increasing offsets)
	for _, v := range []struct {
		at    int
		lanes [8]uint32
	}{
		{i8Ones, [8]uint32{0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001}},
		{i8Low4, [8]uint32{0x0f0f0f0f, 0x0f0f0f0f, 0x0f0f0f0f, 0x0f0f0f0f, 0x0f0f0f0f, 0x0f0f0f0f, 0x0f0f0f0f, 0x0f0f0f0f}},
		{i8High, [8]uint32{0x80808080, 0x80808080, 0x80808080, 0x80808080, 0x80808080, 0x80808080, 0x80808080, 0x80808080}},
		{i8Order, [8]uint32{0, 4, 1, 5, 2, 6, 3, 7}},
		{i8Abs, [8]uint32{0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff}},
	} {
		for l, x := range v.lanes {
			DATA(v.at+4*l, U32(x))
		}
	}
	DATA(i8Scalar, U32(0x3c010204))   // 1/127
	DATA(i8Scalar+4, U32(0x42fe0000)) // 127
	DATA(i8Scalar+8, U32(0x0da24260)) // 1e-30
	DATA(i8Scalar+12, U32(0))
	i8TailMask = GLOBL("i8TailMask", RODATA|NOPTR)
	for c := range 9 {
		for l := range 8 {
			v := uint32(0)
			if l < c {
				v = 0xffffffff
			}
			DATA(32*c+4*l, U32(v))
		}
	}
}

// tailMask returns the address of the lane mask of cnt (a register, 1-7)
// blocks, using t as scratch.
func tailMask(cnt, t Register) Mem {
	MOVQ(cnt, t)
	SHLQ(U8(5), t)
	base := GP64()
	LEAQ(i8TailMask, base)
	return Mem{Base: base, Index: t, Scale: 1}
}

// phaddd sets dst, per 128-bit lane, to the sums of the neighbouring dwords
// of a, then of b.
func phaddd(a, b, dst VecPhysical) { VPHADDD(b, a, dst) }

// genQuantizeXI8AVX2 emits quantizeXI8<layout>AVX2(x, nb, xg, shift): nb
// blocks of 32 floats of one input row quantized to int8 (dx = max|x|/127,
// xq = round(x/dx), ties to even, in float32 as quantizeXQ8 does) into the
// records of i8XGroup bytes described above, with xo = -(sum << shift). The
// quants are laid out for the kernel that will read them: "" in order (the
// q8 row streams), "Pairs" per pair of blocks as the first halves of both
// then their second halves (the q4 row streams, whose weight bytes hold the
// first half in low nibbles), "T" transposed (the tiles: byte 32k+4b+i of a
// group is element 4k+i of block b). Blocks past nb in the last group are
// left as they are (the caller clears them).
func genQuantizeXI8AVX2(layout string) {
	name := "quantizeXI8" + layout + "AVX2"
	text(name, NOSPLIT, "func(x *float32, nb int, xg *byte, shift int)")
	Doc(name + " quantizes activations per block for the int8 kernels of CPUs without AVX-512 (see i8.go in asmgen).")
	x := Load(Param("x"), GP64())
	nb := Load(Param("nb"), GP64())
	xg := Load(Param("xg"), GP64())
	sh := Load(Param("shift"), GP64())
	VMOVQ(sh, X10)
	c := GP64()
	LEAQ(i8Const, c)
	VMOVDQU(Mem{Base: c, Disp: i8Abs}, Y15)
	VMOVDQU(Mem{Base: c, Disp: i8Order}, Y11)
	VMOVSS(Mem{Base: c, Disp: i8Scalar}, X14)
	VMOVSS(Mem{Base: c, Disp: i8Scalar + 4}, X13)
	VMOVSS(Mem{Base: c, Disp: i8Scalar + 8}, X12)
	Label("group")
	TESTQ(nb, nb)
	JLE(LabelRef("done"))
	for b := range 8 {
		if b > 0 {
			CMPQ(nb, U8(b))
			JLE(LabelRef("done"))
		}
		xm := Mem{Base: x, Disp: 128 * b}
		for v := range 4 {
			VMOVUPS(xm.Offset(32*v), yr[v])
			VANDPS(Y15, yr[v], yr[4+v])
		}
		VMAXPS(Y5, Y4, Y4)
		VMAXPS(Y7, Y6, Y6)
		VMAXPS(Y6, Y4, Y4)
		hmax(Y4, Y5)
		VMULSS(X14, X4, X5)
		VMOVSS(X5, Mem{Base: xg, Disp: 256 + 4*b})
		VMAXSS(X12, X4, X4)
		VDIVSS(X4, X13, X6)
		VBROADCASTSS(X6, Y6)
		for v := range 4 {
			VMULPS(Y6, yr[v], yr[v])
			VCVTPS2DQ(yr[v], yr[v])
		}
		// xo = -(sum << shift)
		VPADDD(Y1, Y0, Y4)
		VPADDD(Y3, Y2, Y5)
		VPADDD(Y5, Y4, Y4)
		VEXTRACTI128(U8(1), Y4, X5)
		VPADDD(X5, X4, X4)
		VPSHUFD(U8(0x4e), X4, X5)
		VPADDD(X5, X4, X4)
		VPSHUFD(U8(0xb1), X4, X5)
		VPADDD(X5, X4, X4)
		VPSLLD(X10, X4, X4)
		VPXOR(X5, X5, X5)
		VPSUBD(X4, X5, X5)
		VMOVD(X5, Mem{Base: xg, Disp: 288 + 4*b})
		// int32 to int8 in order (the packs interleave 128-bit lanes)
		VPACKSSDW(Y1, Y0, Y0)
		VPACKSSDW(Y3, Y2, Y2)
		VPACKSSWB(Y2, Y0, Y0)
		VPERMD(Y0, Y11, Y0)
		switch layout {
		case "":
			VMOVDQU(Y0, Mem{Base: xg, Disp: 32 * b})
		case "Pairs":
			at := 64*(b/2) + 16*(b%2)
			VMOVDQU(X0, Mem{Base: xg, Disp: at})
			VEXTRACTI128(U8(1), Y0, X1)
			VMOVDQU(X1, Mem{Base: xg, Disp: at + 32})
		case "T":
			VEXTRACTI128(U8(1), Y0, X1)
			for k := range 8 {
				src := []VecPhysical{X0, X1}[k/4]
				m := Mem{Base: xg, Disp: 32*k + 4*b}
				if k%4 == 0 {
					VMOVD(src, m)
				} else {
					VPEXTRD(U8(k%4), src, m)
				}
			}
		}
	}
	ADDQ(U32(8*128), x)
	ADDQ(U32(i8XGroup), xg)
	SUBQ(U8(8), nb)
	JMP(LabelRef("group"))
	Label("done")
	VZEROUPPER()
	RET()
}

// i8Stream is the state of genI8RowStream's body.
type i8Stream struct {
	r                  i8route
	q                  string
	sp, qp, xp, left   Register // the row's scales and quants, the activations, blocks left
	ones, c, order, fa VecPhysical
}

// genI8RowStream emits <prefix>RowStream<q>AVX2(xg, w, ldw, nb, y, n): for
// r < n, y[r] = the int8 dot product (see the top of this file) of q8 or q4
// weight row r (ldw bytes apart, nb whole blocks: scales then quants) with
// the activation row prepared at xg (quantizeXI8AVX2 for q8,
// quantizeXI8PairsAVX2 for q4), the rows read one after the other as one
// stream with the prefetches of the float row streams (genRowStream) and the
// per-line prefetch of the AVX2 quantized ones (avx2QPrefetch). It stores y
// (bias is the caller's).
func genI8RowStream(r i8route, q string) {
	name := r.prefix + "RowStream" + q + "AVX2"
	text(name, NOSPLIT, "func(xg *byte, w *byte, ldw int, nb int, y *float32, n int)")
	Doc(fmt.Sprintf("%s is the int8 %s matrix-vector product of n rows read in sequence (see i8.go in asmgen).", name, strings.ToLower(q)))
	w := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	s := &i8Stream{r: r, q: q, sp: GP64(), qp: GP64(), xp: GP64(), left: GP64(), ones: Y15, c: Y14, order: Y13, fa: Y12}
	cp := GP64()
	LEAQ(i8Const, cp)
	VMOVDQU(Mem{Base: cp, Disp: i8Ones}, s.ones)
	switch {
	case q == "Q4":
		VMOVDQU(Mem{Base: cp, Disp: i8Low4}, s.c)
		VMOVDQU(Mem{Base: cp, Disp: i8Order}, s.order)
	case r.vnni:
		VMOVDQU(Mem{Base: cp, Disp: i8High}, s.c)
	}
	kick, kt := GP64(), GP64()
	initPageKick(w, kick)
	rowStreamHead(w, ldw, n)
	VXORPS(s.fa, s.fa, s.fa)
	MOVQ(w, s.sp)
	Load(Param("nb"), s.left)
	LEAQ(Mem{Base: w, Index: s.left, Scale: 2}, s.qp)
	Load(Param("xg"), s.xp) // from the frame each row: registers are short
	Label("group")
	CMPQ(s.left, U8(8))
	JL(LabelRef("tail"))
	pageKick(Mem{Base: s.qp}, kick, kt, "nokick")
	for l := 0; l < 8*qbytes(q); l += 64 {
		PREFETCHNTA(Mem{Base: s.qp, Disp: avx2QPrefetch + l})
	}
	s.scale(s.dot(false), false)
	ADDQ(U8(16), s.sp)
	ADDQ(U32(8*qbytes(q)), s.qp)
	ADDQ(U32(i8XGroup), s.xp)
	SUBQ(U8(8), s.left)
	JMP(LabelRef("group"))
	Label("tail")
	TESTQ(s.left, s.left)
	JZ(LabelRef("reduce"))
	s.scale(s.dot(true), true)
	Label("reduce")
	hsum(s.fa, Y0)
	VMOVSS(s.fa.AsX(), Mem{Base: y})
	nextRow(y, w, ldw, n)
}

// dot emits a group's integer dot products and returns the register holding
// D (block b in lane b, before the offset). With tail, only the first left
// blocks are read; the others count as zero.
func (s *i8Stream) dot(tail bool) VecPhysical {
	if s.q == "Q4" {
		return s.dotQ4(tail)
	}
	// block b's 8 partial sums in T[b%2]; pairs summed into H[p%2], pairs
	// of pairs into Q[p/2]; then the two halves of each 128-bit lane.
	T := []VecPhysical{Y3, Y4}
	H := []VecPhysical{Y5, Y6}
	Q := []VecPhysical{Y7, Y8}
	for b := range 8 {
		t := T[b%2]
		skip := fmt.Sprintf("skip%d", b)
		if tail {
			VPXOR(t, t, t)
			CMPQ(s.left, U8(b))
			JLE(LabelRef(skip))
		}
		wm, xm := Mem{Base: s.qp, Disp: 32 * b}, Mem{Base: s.xp, Disp: 32 * b}
		if s.r.vnni {
			VPXOR(wm, s.c, Y0) // w + 128
			VMOVDQU(xm, Y2)
			if !tail {
				VPXOR(t, t, t)
			}
			vexVPDPBUSD(Y2, Y0, t)
		} else {
			VMOVDQU(wm, Y0)
			VPABSB(Y0, Y1)
			VMOVDQU(xm, Y2)
			VPSIGNB(Y0, Y2, Y2)    // x * sign(w)
			VPMADDUBSW(Y2, Y1, t)  // |w| times that, pairs summed to int16
			VPMADDWD(s.ones, t, t) // and to int32
		}
		if tail {
			Label(skip)
		}
		if b%2 == 1 {
			phaddd(T[0], T[1], H[(b/2)%2])
		}
		if b%4 == 3 {
			phaddd(H[0], H[1], Q[b/4])
		}
	}
	// Q[h] holds, per 128-bit lane L, the four dwords of half L of blocks 4h..4h+3
	VPERM2I128(U8(0x20), Q[1], Q[0], Y9)
	VPERM2I128(U8(0x31), Q[1], Q[0], Y10)
	VPADDD(Y10, Y9, Y9)
	return Y9
}

// dotQ4 is dot for q4 weights: pairs of blocks (32 weight bytes) at a time,
// the low nibbles (first halves of both blocks) with the activations' first
// halves, the high ones with the second halves (quantizeXI8PairsAVX2), so a
// pair's sums are block 2p in the low 128-bit lane and 2p+1 in the high one.
func (s *i8Stream) dotQ4(tail bool) VecPhysical {
	T := []VecPhysical{Y3, Y4, Y5, Y6}
	for p := range 4 {
		t := T[p]
		wm, x1, x2 := Mem{Base: s.qp, Disp: 32 * p}, Mem{Base: s.xp, Disp: 64 * p}, Mem{Base: s.xp, Disp: 64*p + 32}
		skip, half, loaded := fmt.Sprintf("skip%d", p), fmt.Sprintf("half%d", p), fmt.Sprintf("loaded%d", p)
		if tail {
			VPXOR(t, t, t)
			CMPQ(s.left, U8(2*p+1))
			JL(LabelRef(skip))
			JE(LabelRef(half))
			VMOVDQU(wm, Y0)
			JMP(LabelRef(loaded))
			Label(half)
			VMOVDQU(wm.Offset(0), X0) // one block: its 16 bytes, the other's nibbles zero
			Label(loaded)
		} else {
			VMOVDQU(wm, Y0)
		}
		VPSRLW(U8(4), Y0, Y1)
		VPAND(s.c, Y0, Y0)
		VPAND(s.c, Y1, Y1)
		if s.r.vnni {
			VMOVDQU(x1, Y2)
			if !tail {
				VPXOR(t, t, t)
			}
			vexVPDPBUSD(Y2, Y0, t)
			VMOVDQU(x2, Y2)
			vexVPDPBUSD(Y2, Y1, t)
		} else {
			VPMADDUBSW(x1, Y0, Y0)
			VPMADDUBSW(x2, Y1, Y1)
			VPADDW(Y1, Y0, Y0)
			VPMADDWD(s.ones, Y0, t)
		}
		if tail {
			Label(skip)
		}
	}
	phaddd(T[0], T[1], Y7) // lanes: 0 0 2 2 | 1 1 3 3
	phaddd(T[2], T[3], Y8) // 4 4 6 6 | 5 5 7 7
	phaddd(Y7, Y8, Y9)     // 0 2 4 6 | 1 3 5 7
	VPERMD(Y9, s.order, Y9)
	return Y9
}

// scale adds the group's D to the float sums: the offset, then
// acc += cvt(D) * (dw*dx). With tail, the scales past the row's blocks are
// masked off (they are read from the quants that follow).
func (s *i8Stream) scale(d VecPhysical, tail bool) {
	if s.r.offset(s.q) {
		VPADDD(Mem{Base: s.xp, Disp: 288}, d, d)
	}
	VCVTDQ2PS(d, d)
	VCVTPH2PS(Mem{Base: s.sp}, Y1)
	if tail {
		VPAND(tailMask(s.left, GP64()), Y1, Y1)
	}
	VMULPS(Mem{Base: s.xp, Disp: 256}, Y1, Y1)
	VFMADD231PS(Y1, d, s.fa)
}

// genTransposeWAVX2 emits transposeW<q><U>AVX2(w, nb, dst): one q8 or q4
// weight row (nb blocks: scales, then quants) laid out for the tiles as
// records of i8WGroup bytes per group of 8 blocks: the quants as bytes in
// element order (q4: the nibbles u = q+8 expanded; q8 signed, or with
// unsigned (U) xor 0x80, w+128, for VPDPBUSD), transposed so that byte
// 32k+4b+i is element 4k+i of block b, then the 8 scales as float32. Blocks
// past nb are zero (quants and scales). It prefetches the same row of the
// next panel (rowsAhead rows on).
func genTransposeWAVX2(q string, unsigned bool, rowsAhead int) {
	name := "transposeW" + q
	if unsigned {
		name += "U"
	}
	name += "AVX2"
	text(name, NOSPLIT, "func(w *byte, nb int, dst *byte)")
	Doc(fmt.Sprintf("%s lays out one %s weight row for the int8 tiles of CPUs without AVX-512 (see genTransposeWAVX2).", name, strings.ToLower(q)))
	left := Load(Param("nb"), GP64())
	sp := Load(Param("w"), GP64())
	qp, pf := GP64(), GP64()
	LEAQ(Mem{Base: sp, Index: left, Scale: 2}, qp)
	IMUL3Q(U32(rowsAhead*(2+qbytes(q))), left, pf)
	dst := Load(Param("dst"), GP64())
	cp := GP64()
	LEAQ(i8Const, cp)
	V := yr[0:8]
	t := yr[8:16]
	load := func(tail bool) {
		if q == "Q8" {
			for b := range 8 {
				skip := fmt.Sprintf("skip%d", b)
				if tail {
					VPXOR(V[b], V[b], V[b])
					CMPQ(left, U8(b))
					JLE(LabelRef(skip))
				}
				m := Mem{Base: qp, Disp: 32 * b}
				VMOVDQU(m, V[b])
				if unsigned {
					VPXOR(Mem{Base: cp, Disp: i8High}, V[b], V[b])
				}
				if tail {
					Label(skip)
				}
			}
			return
		}
		for p := range 4 {
			m := Mem{Base: qp, Disp: 32 * p}
			lo, hi := t[0], t[1]
			skip, half, loaded := fmt.Sprintf("skip%d", p), fmt.Sprintf("half%d", p), fmt.Sprintf("loaded%d", p)
			if tail {
				VPXOR(V[2*p], V[2*p], V[2*p])
				VPXOR(V[2*p+1], V[2*p+1], V[2*p+1])
				CMPQ(left, U8(2*p+1))
				JL(LabelRef(skip))
				JE(LabelRef(half))
				VMOVDQU(m, lo)
				JMP(LabelRef(loaded))
				Label(half)
				VMOVDQU(m, lo.AsX())
				Label(loaded)
			} else {
				VMOVDQU(m, lo)
			}
			VPSRLW(U8(4), lo, hi)
			VPAND(Mem{Base: cp, Disp: i8Low4}, lo, lo) // first halves of blocks 2p, 2p+1
			VPAND(Mem{Base: cp, Disp: i8Low4}, hi, hi) // second halves
			VPERM2I128(U8(0x20), hi, lo, V[2*p])
			VPERM2I128(U8(0x31), hi, lo, V[2*p+1])
			if tail {
				Label(skip)
			}
		}
	}
	store := func(tail bool) {
		// 8x8 transpose of dwords: V[b] dword k to vector k lane b
		for p := range 4 {
			VPUNPCKLDQ(V[2*p+1], V[2*p], t[2*p])
			VPUNPCKHDQ(V[2*p+1], V[2*p], t[2*p+1])
		}
		for h := range 2 { // blocks 4h..4h+3
			a, b, c, d := t[4*h], t[4*h+2], t[4*h+1], t[4*h+3]
			VPUNPCKLQDQ(b, a, V[4*h])   // dword 0 | 4
			VPUNPCKHQDQ(b, a, V[4*h+1]) // 1 | 5
			VPUNPCKLQDQ(d, c, V[4*h+2]) // 2 | 6
			VPUNPCKHQDQ(d, c, V[4*h+3]) // 3 | 7
		}
		for k := range 4 {
			VPERM2I128(U8(0x20), V[4+k], V[k], t[0])
			VMOVDQU(t[0], Mem{Base: dst, Disp: 32 * k})
			VPERM2I128(U8(0x31), V[4+k], V[k], t[1])
			VMOVDQU(t[1], Mem{Base: dst, Disp: 32 * (k + 4)})
		}
		VCVTPH2PS(Mem{Base: sp}, t[2])
		if tail {
			VPAND(tailMask(left, GP64()), t[2], t[2])
		}
		VMOVUPS(t[2], Mem{Base: dst, Disp: 256})
	}
	Label("group")
	CMPQ(left, U8(8))
	JL(LabelRef("tail"))
	for l := 0; l < 8*qbytes(q); l += 64 {
		PREFETCHT0(Mem{Base: qp, Index: pf, Scale: 1, Disp: l})
	}
	PREFETCHT0(Mem{Base: sp, Index: pf, Scale: 1})
	load(false)
	store(false)
	ADDQ(U8(16), sp)
	ADDQ(U32(8*qbytes(q)), qp)
	ADDQ(U32(i8WGroup), dst)
	SUBQ(U8(8), left)
	JMP(LabelRef("group"))
	Label("tail")
	TESTQ(left, left)
	JZ(LabelRef("done"))
	load(true)
	store(true)
	Label("done")
	VZEROUPPER()
	RET()
}

// i8TileLimits are the largest tiles of a route and weight type: mr
// activation rows × nr weight rows of integer accumulators in registers
// beside nr weight vectors (and on avx2 q8 their absolute values, a
// product and the int16 ones).
func i8TileLimits(r i8route, q string) (mr, nr int) {
	if !r.vnni && q == "Q8" {
		return 3, 3
	}
	return 4, 3
}

// genI8Tile emits <prefix>Tile<q>AVX2_<mr>x<nr>(xg, ldx, wt, ldwt, ng, y,
// ldy): the int8 matrix product of mr activation rows prepared by
// quantizeXI8TAVX2 (ldx bytes apart) with nr weight rows laid out by
// transposeW<q>AVX2 (ldwt bytes apart), over ng groups of 8 blocks, storing
// y[i*ldy+j]. Per group, step k multiplies vector k of every activation row
// (dword k of its 8 blocks) with vector k of every weight row, so each
// integer sum gathers one block per lane; the float sums (mr*nr vectors)
// live on the stack between groups.
func genI8Tile(r i8route, q string, mr, nr int) {
	name := fmt.Sprintf("%sTile%sAVX2_%dx%d", r.prefix, q, mr, nr)
	text(name, NOSPLIT, "func(xg *byte, ldx int, wt *byte, ldwt int, ng int, y *float32, ldy int)")
	Doc(name + " is an int8 matrix-product micro-kernel of CPUs without AVX-512 (see i8.go in asmgen).")
	np := mr * nr
	facc := AllocLocal(32 * np)
	fa := func(p int) Mem { return facc.Offset(32 * p) }
	VXORPS(Y0, Y0, Y0)
	for p := range np {
		VMOVUPS(Y0, fa(p))
	}
	xb := Load(Param("xg"), GP64())
	wb := Load(Param("wt"), GP64())
	ldx := Load(Param("ldx"), GP64())
	l3 := GP64()
	LEAQ(Mem{Base: ldx, Index: ldx, Scale: 2}, l3)
	ldwt := Load(Param("ldwt"), GP64())
	left := Load(Param("ng"), GP64())
	cp := GP64()
	LEAQ(i8Const, cp)
	xrow := func(i, disp int) Mem {
		switch i {
		case 0:
			return Mem{Base: xb, Disp: disp}
		case 3:
			return Mem{Base: xb, Index: l3, Scale: 1, Disp: disp}
		}
		return Mem{Base: xb, Index: ldx, Scale: uint8(i), Disp: disp}
	}
	wrow := func(j, disp int) Mem {
		if j == 0 {
			return Mem{Base: wb, Disp: disp}
		}
		return Mem{Base: wb, Index: ldwt, Scale: uint8(j), Disp: disp}
	}
	acc := func(i, j int) VecPhysical { return yr[i*nr+j] }
	sq8 := !r.vnni && q == "Q8" // the sign trick
	if sq8 {
		VMOVDQU(Mem{Base: cp, Disp: i8Ones}, Y15)
	}

	Label("group")
	TESTQ(left, left)
	JZ(LabelRef("reduce"))
	for i := range mr {
		for j := range nr {
			a := acc(i, j)
			if r.vnni {
				VMOVDQU(xrow(i, 288), a) // start from the offset: -128 or -8 times the block sums
			} else {
				VPXOR(a, a, a)
			}
		}
	}
	for k := range 8 {
		switch {
		case sq8:
			A, X, T := yr[9:12], Y12, []VecPhysical{Y13, Y14}
			for j := range nr {
				VPABSB(wrow(j, 32*k), A[j])
			}
			for i := range mr {
				VMOVDQU(xrow(i, 32*k), X)
				for j := range nr {
					t := T[(i*nr+j)%2]
					VPSIGNB(wrow(j, 32*k), X, t)
					VPMADDUBSW(t, A[j], t)
					VPMADDWD(Y15, t, t)
					VPADDD(t, acc(i, j), acc(i, j))
				}
			}
		case r.vnni:
			W, X := yr[12:15], Y15
			for j := range nr {
				VMOVDQU(wrow(j, 32*k), W[j])
			}
			for i := range mr {
				VMOVDQU(xrow(i, 32*k), X)
				for j := range nr {
					vexVPDPBUSD(X, W[j], acc(i, j))
				}
			}
		default: // avx2 q4: int16 sums of the group's 8 steps
			U, T := yr[12:15], Y15
			for j := range nr {
				VMOVDQU(wrow(j, 32*k), U[j])
			}
			for i := range mr {
				for j := range nr {
					VPMADDUBSW(xrow(i, 32*k), U[j], T)
					VPADDW(T, acc(i, j), acc(i, j))
				}
			}
		}
	}
	// acc += cvt(D) * (dw*dx), per pair, with the registers the steps used
	S, F := Y12, Y13
	for i := range mr {
		for j := range nr {
			d := acc(i, j)
			if !r.vnni && q == "Q4" {
				VPMADDWD(Mem{Base: cp, Disp: i8Ones}, d, d)
				VPADDD(xrow(i, 288), d, d)
			}
			VCVTDQ2PS(d, d)
			VMOVUPS(wrow(j, 256), S)
			VMULPS(xrow(i, 256), S, S)
			VMOVUPS(fa(i*nr+j), F)
			VFMADD231PS(S, d, F)
			VMOVUPS(F, fa(i*nr+j))
		}
	}
	ADDQ(U32(i8XGroup), xb)
	ADDQ(U32(i8WGroup), wb)
	DECQ(left)
	JMP(LabelRef("group"))

	Label("reduce")
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	for i := range mr {
		for j := range nr {
			VMOVUPS(fa(i*nr+j), Y0)
			hsum(Y0, Y1)
			VMOVSS(X0, Mem{Base: y, Disp: 4 * j})
		}
		if i+1 < mr {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}

// genI8 emits the int8 families of both routes.
func genI8() {
	genI8Consts()
	for _, layout := range []string{"", "Pairs", "T"} {
		genQuantizeXI8AVX2(layout)
	}
	for _, r := range []i8route{i8avx2, i8avxvnni} {
		for _, q := range []string{"Q8", "Q4"} {
			genI8RowStream(r, q)
			mr, nr := i8TileLimits(r, q)
			for m := 1; m <= mr; m++ {
				for n := 1; n <= nr; n++ {
					genI8Tile(r, q, m, n)
				}
			}
		}
	}
	genTransposeWAVX2("Q8", false, 3)
	genTransposeWAVX2("Q8", true, 3)
	genTransposeWAVX2("Q4", false, 3)
}
