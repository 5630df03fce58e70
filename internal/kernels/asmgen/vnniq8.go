//go:build asmgen

package main

import (
	"fmt"
	"sort"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The q8 VNNI kernels compute, per group of 16 blocks, the exact integer
// dot product D[b] = sum (w+128)*xq - 128*xqs of each block (weights made
// unsigned by xor 0x80, xqs the block sum of xq) in one vector lane per
// block, then per group
//
//	S = cvt(dw) * dx;  acc += cvt(D) * S
//
// and finally y = hsum(acc). The matrix-vector kernel (vnniRowsQ8_<nr>)
// gets D by reducing the VPDPBUSD lanes of the 8 units of a group with
// in-lane unpacks, two permutes and integer adds; the matrix-product kernel
// (vnniTileQ8_<mr>x<nr>) transposes weights and activations so that
// VPDPBUSD accumulates D directly, starting from -128*xqs. Integer sums are
// exact, so both give the same float operations on the same values:
// bit-identical outputs.

// q8Prefetch is as q4Prefetch, for q8 weights (SmolLM2-135M q8 decode on
// 1 thread: 112 tok/s without, ~130 at 4096, ~145 at 8192, ~128 at 16384).
const q8Prefetch = 8192

// q8EvenOdd holds the two permutes that pair half-block sums (see genQ8Tables).
var q8EvenOdd Mem

// q8Transpose holds the permute indices of the 3-level transpose.
var q8Transpose Mem

type q8Pair struct{ a, b, p, q int } // inputs a, b; outputs p (low k), q (high k)

// q8TransposePlan simulates the transpose of 8 vectors N_u (lane l holds
// block 2u+l/8, dword l%8) into 8 vectors holding dword k of blocks 0..15
// in lane b. It returns, per level, the pairs and the index of each
// output's permute table, the tables, and which vector ends with which k.
func q8TransposePlan() (levels [3][4]q8Pair, tables [][16]uint32, final [8]int) {
	type elem struct{ b, k int }
	vecs := make([][16]elem, 8)
	for u := range 8 {
		for l := range 16 {
			vecs[u][l] = elem{2*u + l/8, l % 8}
		}
	}
	kset := func(v [16]elem) (lo, hi int) {
		lo, hi = 99, -1
		for _, e := range v {
			lo, hi = min(lo, e.k), max(hi, e.k)
		}
		return
	}
	bset := func(v [16]elem) int {
		m := 0
		for _, e := range v {
			m |= 1 << e.b
		}
		return m
	}
	find := func(t [16]uint32) int {
		for i, x := range tables {
			if x == t {
				return i
			}
		}
		tables = append(tables, t)
		return len(tables) - 1
	}
	for lv := range 3 {
		used := make([]bool, 8)
		next := make([][16]elem, 8)
		np := 0
		for a := range 8 {
			if used[a] {
				continue
			}
			for b := a + 1; b < 8; b++ {
				la, ha := kset(vecs[a])
				lb, hb := kset(vecs[b])
				if used[b] || la != lb || ha != hb || bset(vecs[a])&bset(vecs[b]) != 0 {
					continue
				}
				used[a], used[b] = true, true
				mid := (la + ha + 1) / 2
				all := append(vecs[a][:], vecs[b][:]...)
				for half := range 2 {
					var sel []int
					for i, e := range all {
						if (e.k < mid) == (half == 0) {
							sel = append(sel, i)
						}
					}
					sort.Slice(sel, func(x, y int) bool {
						ex, ey := all[sel[x]], all[sel[y]]
						return ex.k < ey.k || ex.k == ey.k && ex.b < ey.b
					})
					var t [16]uint32
					var out [16]elem
					for l, i := range sel {
						t[l] = uint32(i)
						out[l] = all[i]
					}
					// outputs go to slots a (low) and b (high)
					slot := a
					if half == 1 {
						slot = b
					}
					next[slot] = out
					ti := find(t)
					if half == 0 {
						levels[lv][np].p = ti
					} else {
						levels[lv][np].q = ti
					}
				}
				levels[lv][np].a, levels[lv][np].b = a, b
				np++
				break
			}
		}
		if np != 4 {
			panic("q8 transpose plan: unpaired vectors")
		}
		vecs = next
	}
	for s, v := range vecs {
		for l, e := range v {
			if e.b != l || e.k != v[0].k {
				panic("q8 transpose plan: wrong final layout")
			}
		}
		final[s] = v[0].k
	}
	return
}

func genQ8Tables() {
	q8EvenOdd = GLOBL("vnniQ8EvenOdd", RODATA|NOPTR)
	// lane b of the reduced vector sums the two half-block sums of block b:
	// after the in-lane reduction, 128-bit lane L of vector h holds dword
	// v = unit%4 of units 4h..4h+3, half L%2 of block 2*unit + L/2.
	for l := range 32 {
		b, half := l%16, l/16
		DATA(4*l, U32(16*(b/8)+4*(2*(b%2)+half)+(b%8)/2))
	}
	_, tables, _ := q8TransposePlan()
	q8Transpose = GLOBL("vnniQ8Transpose", RODATA|NOPTR)
	for t, tab := range tables {
		for l, v := range tab {
			DATA(64*t+4*l, U32(v))
		}
	}
}

// q8Masks stores at m (8 qwords) the byte masks of the 8 units of a group
// holding cnt blocks: unit u has clamp(32*cnt - 64u, 0, 64) valid bytes.
func q8Masks(cnt Register, m Mem) {
	v, ones, z, c64 := GP64(), GP64(), GP64(), GP64()
	XORQ(z, z)
	MOVQ(z, ones)
	NOTQ(ones)
	MOVQ(U32(64), c64)
	for u := range 8 {
		MOVQ(cnt, v)
		SHLQ(U8(5), v)
		SUBQ(U32(64*u), v)
		CMOVQLT(z, v)
		CMPQ(v, c64)
		CMOVQGT(c64, v) // BZHI reads only the low 8 bits of the index
		BZHIQ(v, ones, v)
		MOVQ(v, m.Offset(8*u))
	}
}

// loadQ8Unit loads unit u (64 bytes) of a weight row, made unsigned. masks
// (when not nil) holds the byte masks of q8Masks.
func loadQ8Unit(src Mem, masks *Mem, u int, c80, dst VecPhysical) {
	if masks != nil {
		KMOVQ(masks.Offset(8*u), K2)
		VMOVDQU8_Z(src, K2, dst)
		VPXORD(c80, dst, dst)
	} else {
		VPXORD(src, c80, dst)
	}
}

// genVNNIRowsQ8 emits vnniRowsQ8_<nr>(xq, dx, xqs, w, ldw, nb, y): for
// j < nr, y[j] = q8 weight row j (ldw bytes apart, nb blocks: scales then
// quants) dotted with activations quantized by quantizeXQ8 (padded with
// zero blocks to a multiple of 16).
func genVNNIRowsQ8(nr int) { genVNNIRowsQ8Body(nr, false) }

// vnniFrame is the frame shared by the q8 and q4 matrix-vector kernels: the
// parameter registers, and for the row-stream form the loop over rows.
type vnniFrame struct {
	xp, nb, dxp, xqsp, ldw, bo, qoff Register
	wr                               []Register
	stream                           bool
	y, n                             Register // stream only
	kick, kt                         Register // stream only: see pageKick
}

// pageKickAhead is how far ahead of the quants being read (bytes) the row
// streams touch the start of the next 4 KiB page (see pageKick). Qwen3-0.6B
// q8 decode on 1 thread, 3 alternating rounds of each binary: 43 tok/s
// without; 56-58 at 1024, 54-58 at 2048, 54-58 at 4096 (T0 instead of NTA:
// 52-55); 45-47 at 8192, the distance of the per-line prefetch, where it
// adds nothing. The per-line prefetch stays: without it the kick alone gave
// 46-47.
const pageKickAhead = 2048

// pageKick emits the page-start prefetch of a row stream: when the stream
// position pos comes within pageKickAhead bytes of the next 4 KiB page
// boundary (f.kick), the first two lines of that page are prefetched and
// f.kick moves to the page after pos+pageKickAhead. The per-line
// prefetches further ahead do not bring a page's first lines early enough
// on this machine (AMD Zen 5; the float streams' row-start hint is the same
// idea). It is emitted once per function.
func (f *vnniFrame) pageKick(pos Mem) { pageKick(pos, f.kick, f.kt, "nokick") }

// pageKick emits the page-start prefetch at stream position pos (see
// vnniFrame.pageKick); kick holds the next page boundary, t is scratch, and
// label names the skip target (unique per function).
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
	Doc(fmt.Sprintf("%s computes %s dot products with VPDPBUSD (see vnni%s.go in asmgen).", name, strings.ToLower(q), strings.ToLower(q)))
	f := &vnniFrame{xp: GP64(), nb: GP64(), stream: stream}
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

// end stores the row sums of facc and returns, or with stream moves on to
// the next row.
func (f *vnniFrame) end(facc []VecPhysical) {
	y := f.y
	if !f.stream {
		y = Load(Param("y"), GP64())
	}
	for j, a := range facc {
		hsum(a, Z31)
		VMOVSS(a.AsX(), Mem{Base: y, Disp: 4 * j})
	}
	if f.stream {
		ADDQ(U8(4), y)
		ADDQ(f.ldw, f.wr[0])
		DECQ(f.n)
		JMP(LabelRef("row"))
		Label("done")
	}
	VZEROUPPER()
	RET()
}

// genVNNIRowStreamQ8 emits vnniRowStreamQ8(xq, dx, xqs, w, ldw, nb, y, n):
// vnniRowsQ8_1 for n weight rows one after another in one call, so that the
// weights are read as one sequential stream.
func genVNNIRowStreamQ8() { genVNNIRowsQ8Body(1, true) }

func genVNNIRowsQ8Body(nr int, stream bool) {
	f := vnniRowsFrame("Q8", nr, stream)
	xp, nb, dxp, xqsp, wr, bo, qoff := f.xp, f.nb, f.dxp, f.xqsp, f.wr, f.bo, f.qoff
	t := GP32()
	MOVL(U32(0x80808080), t)
	c80 := Z10
	VPBROADCASTD(t, c80)
	idxE, idxO := Z8, Z9
	VMOVDQU32(q8EvenOdd, idxE)
	VMOVDQU32(q8EvenOdd.Offset(64), idxO)
	facc, S, C := zr[0:4], zr[20:24], Z4 // C: 128*xqs of the group
	for j := 0; j < nr; j++ {
		VXORPS(facc[j], facc[j], facc[j])
	}
	T := []VecPhysical{Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18}
	E := []VecPhysical{Z19, Z24, Z25, Z26}
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
		VPSLLD(U8(7), C, C)
	}
	// group handles cnt blocks (16 for a whole group); units past the
	// blocks are zero, and a last half unit is loaded as 32 bytes.
	group := func(cnt int) {
		nu := (cnt + 1) / 2
		if stream && cnt == 16 {
			f.pageKick(Mem{Base: wr[0], Index: qoff, Scale: 1})
		}
		for j := 0; j < nr; j++ {
			for u := range 8 {
				if u >= nu {
					VPXORD(T[u], T[u], T[u])
					continue
				}
				wv := []VecPhysical{Z27, Z28}[u%2]
				src := Mem{Base: wr[j], Index: qoff, Scale: 1, Disp: 64 * u}
				if cnt == 16 {
					PREFETCHNTA(src.Offset(q8Prefetch))
				}
				if 2*u+1 == cnt {
					VMOVDQU32(src, wv.AsY())
					VPXORD(c80, wv, wv)
				} else {
					VPXORD(src, c80, wv)
				}
				VPXORD(T[u], T[u], T[u])
				VPDPBUSD(Mem{Base: xp, Disp: 64 * u}, wv, T[u])
			}
			// reduce 8 vectors of 8 dword partials per block to one lane
			// per block: in-lane unpacks sum each 128-bit lane, then two
			// permutes pair the half-block sums
			for h := range 2 {
				if h == 1 && nu <= 4 {
					break // T[4] is zero
				}
				a, b, c, d := T[4*h], T[4*h+1], T[4*h+2], T[4*h+3]
				e0, e1 := E[0], E[1]
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
			r := T[0]
			VMOVDQA64(T[0], E[2])
			VPERMT2D(T[4], idxE, E[2])
			VPERMT2D(T[4], idxO, r)
			VPADDD(E[2], r, r)
			VPSUBD(C, r, r)
			VCVTDQ2PS(r, r)
			VFMADD231PS(S[j], r, facc[j])
		}
	}
	Label("group")
	CMPQ(nb, U8(16))
	JL(LabelRef("tail"))
	loadScales(false)
	group(16)
	ADDQ(U32(16*32), xp)
	ADDQ(U8(16), bo)
	ADDQ(U32(16*32), qoff)
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
	for cnt := 1; cnt < 16; cnt++ {
		Label(fmt.Sprintf("tail%d", cnt))
		if cnt < 15 {
			CMPQ(nb, U8(cnt))
			JNE(LabelRef(fmt.Sprintf("tail%d", cnt+1)))
		}
		group(cnt)
		JMP(LabelRef("reduce"))
	}

	Label("reduce")
	f.end(facc[:nr])
}

// q8TransposeUnits transposes N (8 vectors, unit u of a group in N[u])
// in place so that N[s] holds dword final[s] of blocks 0..15, using M[0:3].
// The permute tables are preloaded in idx.
func q8TransposeUnits(N, M, idx []VecPhysical) [8]int {
	levels, _, final := q8TransposePlan()
	for _, lv := range levels {
		for _, pr := range lv {
			a, b := N[pr.a], N[pr.b]
			VMOVDQA64(a, M[2])
			VPERMT2D(b, idx[pr.p], M[2]) // low k: from (a, b)
			VPERMT2D(b, idx[pr.q], a)    // high k
			VMOVDQA64(a, b)
			VMOVDQA64(M[2], a)
		}
	}
	return final
}

// genTransposeWQ8 emits transposeWQ8(w, nb, dst): the quants of one q8
// weight row (nb blocks; scales first) made unsigned (xor 0x80) and
// transposed per group of 16 blocks for vnniTileQ8 (vector k of a group
// holds dword k of block b in lane b); dst holds ceil(nb/16)*512 bytes,
// blocks past nb are 0x80.
func genTransposeWQ8() {
	text("transposeWQ8", NOSPLIT, "func(w *byte, nb int, dst *byte)")
	Doc("transposeWQ8 lays out one q8 weight row for vnniTileQ8 (see genTransposeWQ8).")
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
	MOVL(U32(0x80808080), t)
	c80 := Z31
	VPBROADCASTD(t, c80)
	N, M := zr[16:24], zr[24:30]
	group := func(mk *Mem) {
		for u := range 8 {
			loadQ8Unit(Mem{Base: qp, Disp: 64 * u}, mk, u, c80, N[u])
		}
		final := q8TransposeUnits(N, M, idx)
		for s := range 8 {
			VMOVDQU64(N[s], Mem{Base: dst, Disp: 64 * final[s]})
		}
		ADDQ(U32(512), qp)
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
	q8Masks(nb, masks)
	group(&masks)
	Label("done")
	VZEROUPPER()
	RET()
}

// genVNNITileQ8 emits vnniTileQ8_<mr>x<nr>(xq, ldx, dx, xqs, ldd, w, ldw,
// wt, nb, y, ldy): the matrix product of mr activation rows quantized by
// quantizeXQ8 (ldx bytes apart; their scales and block sums ldd bytes apart)
// with nr weight rows (ldw bytes apart), storing y[i*ldy+4j]. xq is in
// the transposed layout of transposeXQ8 (per group of 16 blocks, 8
// vectors: vector k holds dword k of block b in lane b), and the weight
// quants come from wt (rows ldwt = ldx bytes apart) as transposeWQ8 writes
// them; w still supplies the scales. Accumulators stay in registers:
// mr*nr integer sums and mr*nr float sums.
// It also emits vnniTileQ4_<mr>x<nr> (q = "Q4"), for weights laid out by
// transposeWQ4, whose offset is 8 instead of 128.
func genVNNITileQ8(q string, mr, nr int) {
	name := fmt.Sprintf("vnniTile%s_%dx%d", q, mr, nr)
	shift := 7 // offset 128
	if q == "Q4" {
		shift = 3 // offset 8
	}
	text(name, NOSPLIT, "func(xq *byte, ldx int, dx *float32, xqs *float32, ldd int, w *byte, ldw int, wt *byte, nb int, y *float32, ldy int)")
	Doc(name + " is an int8 matrix-product micro-kernel (see vnniq8.go in asmgen).")
	np := mr * nr
	acc, facc := zr[0:np], zr[12:12+np]
	W := zr[24 : 24+nr]
	xv := Z27
	C := zr[28:32]
	for p := range np {
		VXORPS(facc[p], facc[p], facc[p])
	}
	// activation rows and transposed weight rows are both ldx bytes apart
	xb := Load(Param("xq"), GP64())
	wb := Load(Param("wt"), GP64())
	ldx := Load(Param("ldx"), GP64())
	l3 := GP64()
	LEAQ(Mem{Base: ldx, Index: ldx, Scale: 2}, l3)
	row := func(base Register, i, disp int) Mem {
		switch i {
		case 0:
			return Mem{Base: base, Disp: disp}
		case 3:
			return Mem{Base: base, Index: l3, Scale: 1, Disp: disp}
		}
		return Mem{Base: base, Index: ldx, Scale: uint8(i), Disp: disp}
	}
	bo2 := GP64() // 2 * blocks done
	XORQ(bo2, bo2)

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
	// integer sums start at -offset*xqs of their activation row
	xsp := Load(Param("xqs"), GP64())
	var ldd Register
	if mr > 1 {
		ldd = Load(Param("ldd"), GP64())
	}
	VPXORD(xv, xv, xv)
	for i := range mr {
		VCVTPS2DQ(Mem{Base: xsp, Index: bo2, Scale: 2}, C[i])
		VPSLLD(U8(shift), C[i], C[i])
		VPSUBD(C[i], xv, C[i])
		if i+1 < mr {
			ADDQ(ldd, xsp)
		}
		for j := range nr {
			VMOVDQA64(C[i], acc[i*nr+j])
		}
	}
	for k := range 8 {
		for j := range nr {
			VMOVDQU64(row(wb, j, 64*k), W[j])
		}
		for i := range mr {
			VMOVDQU64(row(xb, i, 64*k), xv)
			for j := range nr {
				VPDPBUSD(xv, W[j], acc[i*nr+j])
			}
		}
	}
	// scales: acc += cvt(D) * (dw*dx)
	ws := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	for j := range nr {
		VCVTPH2PS_Z(Mem{Base: ws, Index: bo2, Scale: 1}, K1, W[j])
		if j+1 < nr {
			ADDQ(ldw, ws)
		}
	}
	dxp := Load(Param("dx"), GP64())
	for i := range mr {
		for j := range nr {
			p := i*nr + j
			VCVTDQ2PS(acc[p], acc[p])
			VMULPS(Mem{Base: dxp, Index: bo2, Scale: 2}, W[j], C[j%4])
			VFMADD231PS(C[j%4], acc[p], facc[p])
		}
		if i+1 < mr {
			ADDQ(ldd, dxp)
		}
	}
	ADDQ(U32(512), xb)
	ADDQ(U32(512), wb)
	ADDQ(U8(32), bo2)
	JMP(LabelRef("group"))

	Label("reduce")
	y := Load(Param("y"), GP64())
	var ldy Register
	if mr > 1 {
		ldy = Load(Param("ldy"), GP64())
	}
	for i := range mr {
		for j := range nr {
			hsum(facc[i*nr+j], Z31)
			VMOVSS(facc[i*nr+j].AsX(), Mem{Base: y, Disp: 4 * j})
		}
		if i+1 < mr {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}
