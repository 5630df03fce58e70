//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The q4 VNNI kernels follow the q8 design (see vnniq8.go): per group of 16
// blocks, the exact integer dot product D[b] = sum (q+8)*xq - 8*xqs of each
// block (the stored nibble is already q+8, unsigned) in lane b, then
// S = cvt(dw) * dx; acc += cvt(D) * S, and y = hsum(acc). The
// matrix-vector kernel (vnniRowsQ4_<nr>) multiplies 64 packed weight bytes
// (4 blocks) with activations laid out by quantizeXQ4, reduces the 4 dword
// partials of each block with in-lane unpacks and puts the blocks in order
// with one permute; the matrix-product kernel (vnniTileQ4_<mr>x<nr>, made by
// genVNNITileQ8) uses weights expanded to bytes and transposed by
// transposeWQ4 and activations laid out by quantizeXQ8 and transposeXQ8.
// Integer sums are exact, so both do the same float operations on the same
// values: bit-identical outputs.

// q4Prefetch is how far ahead (bytes) the matrix-vector kernel prefetches
// weights, which it reads as one stream (rows are contiguous): measured
// end to end, SmolLM2-135M q4 decode on 1 thread is ~15% faster at 4096 than
// without prefetch; 1024 and 2048 gain little, 6144 and 8192 about the same.
// The hint is PREFETCHNTA: the weights are read once per token, and NTA fills
// the line without the L2 allocation T0 asks for (BenchmarkMatVecSweep, 4
// alternating runs: q8 row stream 1 thread 33-36 → 36-38 GB/s, 2 threads
// 53-67 → 60-74; q4 about the same either way; Qwen3-0.6B decode q8/q4 on 1
// thread +3% / +5%).
const q4Prefetch = 4096

// q4BlockOrder is the permute that puts the reduced lanes in block order.
var q4BlockOrder Mem

func genQ4Tables() {
	q4BlockOrder = GLOBL("vnniQ4BlockOrder", RODATA|NOPTR)
	// after the reduction, lane 4k+u holds block 4u+k of the group
	for b := range 16 {
		DATA(4*b, U32(4*(b%4)+b/4))
	}
}

// unitMasks stores at m (n qwords) byte masks for n units of a group
// holding cnt blocks: unit u has clamp(cnt<<shift - unit*u, 0, unit)
// valid bytes.
func unitMasks(cnt Register, m Mem, n, shift, unit int) {
	v, ones, z, cu := GP64(), GP64(), GP64(), GP64()
	XORQ(z, z)
	MOVQ(z, ones)
	NOTQ(ones)
	MOVQ(U32(unit), cu)
	for u := range n {
		MOVQ(cnt, v)
		SHLQ(U8(shift), v)
		SUBQ(U32(unit*u), v)
		CMOVQLT(z, v)
		CMPQ(v, cu)
		CMOVQGT(cu, v)
		BZHIQ(v, ones, v)
		MOVQ(v, m.Offset(8*u))
	}
}

// genVNNIRowsQ4 emits vnniRowsQ4_<nr>(xq, dx, xqs, w, ldw, nb, y): for
// j < nr, y[j] = q4 weight row j (ldw bytes apart, nb blocks: scales then
// quants) dotted with activations quantized by quantizeXQ4 (padded with
// zero blocks to a multiple of 16).
func genVNNIRowsQ4(nr int) { genVNNIRowsQ4Body(nr, false) }

// genVNNIRowStreamQ4 emits vnniRowStreamQ4(xq, dx, xqs, w, ldw, nb, y, n):
// vnniRowsQ4_1 for n weight rows one after another in one call, so that the
// weights are read as one sequential stream.
func genVNNIRowStreamQ4() { genVNNIRowsQ4Body(1, true) }

func genVNNIRowsQ4Body(nr int, stream bool) {
	f := vnniRowsFrame("Q4", nr, stream)
	masks := AllocLocal(32)
	xp, nb, dxp, xqsp, wr, bo, qoff := f.xp, f.nb, f.dxp, f.xqsp, f.wr, f.bo, f.qoff
	t := GP32()
	MOVL(U32(0x0f0f0f0f), t)
	c0f := Z10
	VPBROADCASTD(t, c0f)
	perm := Z8
	VMOVDQU32(q4BlockOrder, perm)
	facc, S, C := zr[0:4], zr[20:24], Z4 // C: 8*xqs of the group
	for j := 0; j < nr; j++ {
		VXORPS(facc[j], facc[j], facc[j])
	}
	T := []VecPhysical{Z11, Z12, Z13, Z14}
	E := []VecPhysical{Z19, Z24}
	A := [][2]VecPhysical{{Z27, Z28}, {Z29, Z30}, {Z15, Z16}, {Z17, Z18}}
	loadScales := func(masked bool) {
		for j := 0; j < nr; j++ {
			m := Mem{Base: wr[j], Index: bo, Scale: 2}
			if masked {
				VCVTPH2PS_Z(m, K1, S[j])
			} else {
				VCVTPH2PS(m, S[j])
			}
			VMULPS(Mem{Base: dxp, Index: bo, Scale: 4}, S[j], S[j])
		}
		VCVTPS2DQ(Mem{Base: xqsp, Index: bo, Scale: 4}, C)
		VPSLLD(U8(3), C, C)
	}
	// group does the first nu units (4 blocks each) of a group; the rest
	// are zero. mk (when not nil) holds the byte masks of unitMasks.
	group := func(mk *Mem, nu int) {
		if f.stream && mk == nil {
			f.pageKick(Mem{Base: wr[0], Index: qoff, Scale: 1})
		}
		for j := 0; j < nr; j++ {
			for u := range 4 {
				if u >= nu {
					if j == 0 {
						VPXORD(T[u], T[u], T[u])
					}
					continue
				}
				a, h := A[u][0], A[u][1]
				src := Mem{Base: wr[j], Index: qoff, Scale: 1, Disp: 64 * u}
				if mk == nil && q4Prefetch > 0 {
					PREFETCHNTA(src.Offset(q4Prefetch))
				}
				if mk != nil {
					KMOVQ(mk.Offset(8*u), K2)
					VMOVDQU8_Z(src, K2, a)
				} else {
					VMOVDQU64(src, a)
				}
				VPSRLW(U8(4), a, h)
				VPANDD(c0f, a, a)
				VPANDD(c0f, h, h)
				VPXORD(T[u], T[u], T[u])
				VPDPBUSD(Mem{Base: xp, Disp: 128 * u}, a, T[u])
				VPDPBUSD(Mem{Base: xp, Disp: 128*u + 64}, h, T[u])
			}
			// 128-bit lane k of T[u] holds the 4 partials of block 4u+k
			a, b, c, d := T[0], T[1], T[2], T[3]
			VPUNPCKLDQ(b, a, E[0])
			VPUNPCKHDQ(b, a, a)
			VPADDD(E[0], a, a) // a02 b02 a13 b13
			VPUNPCKLDQ(d, c, E[1])
			VPUNPCKHDQ(d, c, c)
			VPADDD(E[1], c, c) // c02 d02 c13 d13
			VPUNPCKLQDQ(c, a, E[0])
			VPUNPCKHQDQ(c, a, a)
			VPADDD(E[0], a, a)
			VPERMD(a, perm, a)
			VPSUBD(C, a, a)
			VCVTDQ2PS(a, a)
			VFMADD231PS(S[j], a, facc[j])
		}
	}
	Label("group")
	CMPQ(nb, U8(16))
	JL(LabelRef("tail"))
	loadScales(false)
	group(nil, 4)
	ADDQ(U32(16*32), xp)
	ADDQ(U8(16), bo)
	ADDQ(U32(16*16), qoff)
	SUBQ(U8(16), nb)
	JMP(LabelRef("group"))

	Label("tail")
	TESTQ(nb, nb)
	JZ(LabelRef("reduce"))
	m := GP64()
	MOVQ(U32(1), m)
	SHLXQ(nb, m, m)
	DECQ(m)
	KMOVW(m.As32(), K1)
	loadScales(true)
	unitMasks(nb, masks, 4, 4, 64)
	// only the units holding blocks
	for nu := 1; nu <= 4; nu++ {
		Label(fmt.Sprintf("tail%d", nu))
		if nu < 4 {
			CMPQ(nb, U8(4*nu))
			JG(LabelRef(fmt.Sprintf("tail%d", nu+1)))
		}
		group(&masks, nu)
		JMP(LabelRef("reduce"))
	}

	Label("reduce")
	f.end(facc[:nr])
}

// genTransposeWQ4 emits transposeWQ4(w, nb, dst): the nibbles of one q4
// weight row (nb blocks; scales first) expanded to bytes in element order
// (q+8, unsigned) and transposed per group of 16 blocks like transposeWQ8
// (vector k of a group holds dword k of block b in lane b); dst holds
// ceil(nb/16)*512 bytes, blocks past nb are zero.
func genTransposeWQ4() {
	text("transposeWQ4", NOSPLIT, "func(w *byte, nb int, dst *byte)")
	Doc("transposeWQ4 lays out one q4 weight row for vnniTileQ4 (see genTransposeWQ4).")
	masks := AllocLocal(64)
	nb := Load(Param("nb"), GP64())
	qp := Load(Param("w"), GP64())
	LEAQ(Mem{Base: qp, Index: nb, Scale: 2}, qp)
	dst := Load(Param("dst"), GP64())
	_, tables, _ := q8TransposePlan()
	idx := zr[0:len(tables)]
	for t := range tables {
		VMOVDQU32(q8Transpose.Offset(64*t), idx[t])
	}
	t := GP32()
	MOVL(U32(0x0f0f0f0f), t)
	c0f := Z31
	VPBROADCASTD(t, c0f)
	N, M := zr[16:24], zr[24:30]
	hi := Z30
	group := func(mk *Mem) {
		for u := range 8 {
			src := Mem{Base: qp, Disp: 32 * u}
			if mk != nil {
				KMOVQ(mk.Offset(8*u), K2)
				VMOVDQU8_Z(src, K2, N[u].AsY())
			} else {
				VMOVDQU64(src, N[u].AsY())
			}
			VPSRLW(U8(4), N[u].AsY(), hi.AsY())
			VPANDD(c0f.AsY(), hi.AsY(), hi.AsY())
			VPANDD(c0f.AsY(), N[u].AsY(), N[u].AsY())
			VINSERTI64X4(U8(1), hi.AsY(), N[u], N[u]) // lo0 lo1 hi0 hi1
			VSHUFI64X2(U8(0xd8), N[u], N[u], N[u])    // lo0 hi0 lo1 hi1
		}
		final := q8TransposeUnits(N, M, idx)
		for s := range 8 {
			VMOVDQU64(N[s], Mem{Base: dst, Disp: 64 * final[s]})
		}
		ADDQ(U32(256), qp)
		ADDQ(U32(512), dst)
		SUBQ(U8(16), nb)
	}
	Label("group")
	CMPQ(nb, U8(16))
	JL(LabelRef("tail"))
	group(nil)
	JMP(LabelRef("group"))
	Label("tail")
	TESTQ(nb, nb)
	JLE(LabelRef("done"))
	unitMasks(nb, masks, 8, 4, 32)
	group(&masks)
	Label("done")
	VZEROUPPER()
	RET()
}
