//go:build asmgen

package main

import (
	"fmt"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The VNNI kernels (AVX-512 VNNI) compute, per group of 16 blocks, the
// exact integer dot product D[b] of each block in one vector lane per block,
//
//	q8: D[b] = sum (w+128)*xq - 128*xqs  (weights made unsigned by xor 0x80)
//	q4: D[b] = sum (q+8)*xq - 8*xqs      (the stored nibble is already q+8)
//
// with xq the activations quantized per block (quantizeXQ8, quantizeXQ4) and
// xqs their block sums, then per group
//
//	S = cvt(dw) * dx;  acc += cvt(D) * S
//
// and finally y = hsum(acc). The matrix-vector kernels (vnniRows<q>_<nr>,
// vnniRowStream<q>; vnnirows.go) get D by reducing the VPDPBUSD lanes of a
// group's units with in-lane unpacks and permutes; the matrix-product
// kernels (vnniTile<q>_<mr>x<nr>; vnnitile.go) transpose weights and
// activations so that VPDPBUSD accumulates D directly, starting from
// -offset*xqs. Integer sums are exact, so both do the same float operations
// on the same values: bit-identical outputs.

// vnniFrame is the frame shared by the q8 and q4 matrix-vector kernels: the
// parameter registers, the accumulators, and for the row-stream form the
// loop over rows.
type vnniFrame struct {
	q                                string
	xp, nb, dxp, xqsp, ldw, bo, qoff Register
	wr                               []Register
	stream                           bool
	y, n                             Register // stream only
	kick, kt                         Register // stream only: see pageKick
	// facc[j] accumulates row j; S[j] holds its scales times dx for the
	// group, C the group's offset times xqs.
	facc, S []VecPhysical
	C       VecPhysical
}

// vnniRowsFrame emits the prologue of vnniRows<q>_<nr> (or, with stream,
// vnniRowStream<q>, whose extra parameter n counts the rows) up to the start
// of a row: bo = 0 (block index) and qoff = 2*nb (the quants after the scales).
func vnniRowsFrame(q string, nr int, stream bool) *vnniFrame {
	name := fmt.Sprintf("vnniRows%s_%d", q, nr)
	sig := "func(xq *byte, dx *float32, xqs *float32, w *byte, ldw int, nb int, y *float32)"
	if stream {
		name = "vnniRowStream" + q
		sig = "func(xq *byte, dx *float32, xqs *float32, w *byte, ldw int, nb int, y *float32, n int)"
	}
	text(name, NOSPLIT, sig)
	Doc(fmt.Sprintf("%s computes %s dot products with VPDPBUSD (see vnnirows.go in asmgen).", name, strings.ToLower(q)))
	f := &vnniFrame{q: q, xp: GP64(), nb: GP64(), stream: stream, facc: zr[0:nr], S: zr[20:24], C: Z4}
	if stream {
		f.y, f.n = Load(Param("y"), GP64()), Load(Param("n"), GP64())
	} else {
		Load(Param("xq"), f.xp)
		Load(Param("nb"), f.nb)
	}
	f.dxp = Load(Param("dx"), GP64())
	f.xqsp = Load(Param("xqs"), GP64())
	f.ldw = Load(Param("ldw"), GP64())
	f.wr = make([]Register, nr)
	f.wr[0] = Load(Param("w"), GP64())
	for j := 1; j < nr; j++ {
		f.wr[j] = GP64()
		LEAQ(Mem{Base: f.wr[j-1], Index: f.ldw, Scale: 1}, f.wr[j])
	}
	f.bo, f.qoff = GP64(), GP64()
	if stream {
		f.kick, f.kt = GP64(), GP64()
		initPageKick(f.wr[0], f.kick)
		Label("row")
		TESTQ(f.n, f.n)
		JZ(LabelRef("done"))
		Load(Param("xq"), f.xp) // from the frame each row: registers are short
		Load(Param("nb"), f.nb)
	}
	XORQ(f.bo, f.bo)
	LEAQ(Mem{Base: f.nb, Index: f.nb, Scale: 1}, f.qoff)
	return f
}

// offsetShift is log2 of the offset that makes the weights unsigned.
func offsetShift(q string) uint8 {
	if q == "Q4" {
		return 3 // 8
	}
	return 7 // 128
}

// groups emits a row's loop over its groups of 16 blocks: whole groups
// (whole), then the last, partial one (tail, with K1 masking its blocks),
// then the row's end. whole and tail find the group's scales in S and C.
func (f *vnniFrame) groups(whole, tail func()) {
	for _, a := range f.facc {
		VXORPS(a, a, a)
	}
	Label("group")
	CMPQ(f.nb, U8(16))
	JL(LabelRef("tail"))
	f.loadScales(false)
	whole()
	ADDQ(U32(16*32), f.xp)
	ADDQ(U8(16), f.bo)
	ADDQ(U32(16*qbytes(f.q)), f.qoff)
	SUBQ(U8(16), f.nb)
	JMP(LabelRef("group"))

	Label("tail")
	TESTQ(f.nb, f.nb)
	JZ(LabelRef("reduce"))
	lowMask(f.nb, K1)
	f.loadScales(true)
	tail()

	Label("reduce")
	f.end()
}

// loadScales sets S[j] to the scales of row j's group (masked: only the
// blocks K1 selects) times dx, and C to the offset times xqs.
func (f *vnniFrame) loadScales(masked bool) {
	for j := range f.facc {
		m := Mem{Base: f.wr[j], Index: f.bo, Scale: 2}
		if masked {
			VCVTPH2PS_Z(m, K1, f.S[j])
		} else {
			VCVTPH2PS(m, f.S[j])
		}
		VMULPS(Mem{Base: f.dxp, Index: f.bo, Scale: 4}, f.S[j], f.S[j])
	}
	VCVTPS2DQ(Mem{Base: f.xqsp, Index: f.bo, Scale: 4}, f.C)
	VPSLLD(U8(offsetShift(f.q)), f.C, f.C)
}

// accumulate adds row j's group, the integer dot products d (one block a
// lane, before the offset), to its accumulator.
func (f *vnniFrame) accumulate(j int, d VecPhysical) {
	VPSUBD(f.C, d, d)
	VCVTDQ2PS(d, d)
	VFMADD231PS(f.S[j], d, f.facc[j])
}

// pageKick emits the page-start prefetch of a row stream (see pageKick).
// It is emitted once per function.
func (f *vnniFrame) pageKick(pos Mem) { pageKick(pos, f.kick, f.kt, "nokick") }

// end stores the row sums and returns, or with stream moves on to the next
// row.
func (f *vnniFrame) end() {
	y := f.y
	if !f.stream {
		y = Load(Param("y"), GP64())
	}
	for j, a := range f.facc {
		hsum(a, Z31)
		VMOVSS(a.AsX(), Mem{Base: y, Disp: 4 * j})
	}
	if f.stream {
		nextRow(y, f.wr[0], f.ldw, f.n)
		return
	}
	VZEROUPPER()
	RET()
}

// sumLanes4 sums, within each 128-bit lane, the dwords of a, b, c and d so
// that dword i of a's 128-bit lane holds the sum of the four dwords of that
// lane of the i-th of them, using e0 and e1.
func sumLanes4(a, b, c, d, e0, e1 VecPhysical) {
	VPUNPCKLDQ(b, a, e0)
	VPUNPCKHDQ(b, a, a)
	VPADDD(e0, a, a) // a02 b02 a13 b13
	VPUNPCKLDQ(d, c, e1)
	VPUNPCKHDQ(d, c, c)
	VPADDD(e1, c, c) // c02 d02 c13 d13
	VPUNPCKLQDQ(c, a, e0)
	VPUNPCKHQDQ(c, a, a)
	VPADDD(e0, a, a)
}

// lowMask sets the opmask k to the low n bits (n <= 16).
func lowMask(n Register, k Op) {
	m := GP64()
	MOVQ(U32(1), m)
	SHLXQ(n, m, m)
	DECQ(m)
	KMOVW(m.As32(), k)
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
		CMOVQGT(cu, v) // BZHI reads only the low 8 bits of the index
		BZHIQ(v, ones, v)
		MOVQ(v, m.Offset(8*u))
	}
}
