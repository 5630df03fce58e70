//go:build asmgen

package main

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// q8Transpose holds the permute indices of the 3-level transpose.
var q8Transpose Mem

type q8Pair struct{ a, b, p, q int } // inputs a, b; outputs p (low k), q (high k)

// q8TransposePlan simulates the transpose of 8 vectors N_u (lane l holds
// block 2u+l/8, dword l%8) into 8 vectors holding dword k of blocks 0..15
// in lane b. It returns, per level, the pairs and the index of each
// output's permute table, the tables, and which vector ends with which k.
func q8TransposePlan() (levels [][4]q8Pair, tables [][16]uint32, final [8]int) {
	return transposePlan(func(u, l int) (int, int) { return 2*u + l/8, l % 8 })
}

// transposePlan is q8TransposePlan for any start: lane l of vector u holds
// dword k of block b, (b, k) = at(u, l). Levels pair vectors with the same
// dwords of different blocks until each vector holds one dword.
func transposePlan(at func(u, l int) (b, k int)) (levels [][4]q8Pair, tables [][16]uint32, final [8]int) {
	type elem struct{ b, k int }
	vecs := make([][16]elem, 8)
	for u := range 8 {
		for l := range 16 {
			b, k := at(u, l)
			vecs[u][l] = elem{b, k}
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
	single := func() bool {
		for _, v := range vecs {
			if lo, hi := kset(v); lo != hi {
				return false
			}
		}
		return true
	}
	for lv := 0; !single(); lv++ {
		levels = append(levels, [4]q8Pair{})
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

func genQ8Transpose() {
	genTileStore()
	_, tables, _ := q8TransposePlan()
	q8Transpose = GLOBL("vnniQ8Transpose", RODATA|NOPTR)
	for t, tab := range tables {
		for l, v := range tab {
			DATA(64*t+4*l, U32(v))
		}
	}
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

// tileRowsAhead is how many weight rows ahead transposeW<q> prefetches: the
// panel height of vnniTileRowsQ8 (vnniTileQ8N).
const tileRowsAhead = 3

// genTransposeW emits transposeW<q>(w, nb, dst): the quants of one q8 or
// q4 weight row (nb blocks; scales first) made unsigned (q8: xor 0x80; q4:
// the nibbles expanded to bytes in element order, already q+8) and
// transposed per group of 16 blocks for vnniTile<q> (vector k of a group
// holds dword k of block b in lane b); dst holds ceil(nb/16)*512 bytes,
// blocks past nb are 0x80 (q8) or zero (q4).
func genTransposeW(q string) {
	name := "transposeW" + q
	text(name, NOSPLIT, "func(w *byte, nb int, dst *byte)")
	Doc(fmt.Sprintf("%s lays out one %s weight row for vnniTile%s (see genTransposeW).", name, strings.ToLower(q), q))
	masks := AllocLocal(64)
	nb := Load(Param("nb"), GP64())
	qp := Load(Param("w"), GP64())
	// The row tileRowsAhead rows on (the same row of the next panel of vnniTileRowsQ8,
	// whose rows are contiguous) is prefetched while this one is read: a panel's tiles
	// are short, and without it each panel began with its weights' misses.
	sp, pf := GP64(), GP64()
	MOVQ(qp, sp)
	IMUL3Q(U32(tileRowsAhead*(2+qbytes(q))), nb, pf)
	LEAQ(Mem{Base: qp, Index: nb, Scale: 2}, qp)
	dst := Load(Param("dst"), GP64())
	_, tables, _ := q8TransposePlan()
	idx := zr[0:len(tables)]
	for t := range tables {
		VMOVDQU32(q8Transpose.Offset(64*t), idx[t])
	}
	c := Z31 // q8: 0x80 in every byte; q4: 0x0f
	N, M := zr[16:24], zr[24:30]
	unitBytes := 2 * qbytes(q) // quant bytes of a unit of two blocks
	loadUnit := func(src Mem, mk *Mem, u int) { loadWeightUnit(q, src, mk, u, N[u], Z30, c) }
	splatUnitMask(q, c)
	group := func(mk *Mem) {
		if mk == nil {
			for l := range 8 * unitBytes / 64 {
				PREFETCHT0(Mem{Base: qp, Index: pf, Scale: 1, Disp: 64 * l})
			}
			PREFETCHT0(Mem{Base: sp, Index: pf, Scale: 1})
			ADDQ(U8(32), sp)
		}
		for u := range 8 {
			loadUnit(Mem{Base: qp, Disp: unitBytes * u}, mk, u)
		}
		final := q8TransposeUnits(N, M, idx)
		for s := range 8 {
			VMOVDQU64(N[s], Mem{Base: dst, Disp: 64 * final[s]})
		}
		ADDQ(U32(8*unitBytes), qp)
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
	unitMasks(nb, masks, 8, bits.TrailingZeros(uint(qbytes(q))), unitBytes)
	group(&masks)
	Label("done")
	VZEROUPPER()
	RET()
}

// splatUnitMask sets c to what loadWeightUnit needs: 0x80 in every byte
// (q8) or 0x0f (q4).
func splatUnitMask(q string, c VecPhysical) {
	if q == "Q8" {
		avx512.splat(0x80808080, c)
	} else {
		avx512.splat(0x0f0f0f0f, c)
	}
}

// loadWeightUnit loads unit u (two blocks' quants, at src; mk, when not
// nil, holds unitMasks' byte masks) into dst as unsigned bytes in element
// order: q8 xor 0x80, q4 nibbles expanded to bytes (already q+8). tmp is
// scratch (q4), c is set by splatUnitMask.
func loadWeightUnit(q string, src Mem, mk *Mem, u int, dst, tmp, c VecPhysical) {
	if mk != nil {
		KMOVQ(mk.Offset(8*u), K2)
	}
	if q == "Q8" {
		if mk != nil {
			VMOVDQU8_Z(src, K2, dst)
			VPXORD(c, dst, dst)
		} else {
			VPXORD(src, c, dst)
		}
		return
	}
	lo, hi := dst.AsY(), tmp.AsY()
	if mk != nil {
		VMOVDQU8_Z(src, K2, lo)
	} else {
		VMOVDQU64(src, lo)
	}
	VPSRLW(U8(4), lo, hi)
	VPANDD(c.AsY(), hi, hi)
	VPANDD(c.AsY(), lo, lo)
	VINSERTI64X4(U8(1), hi, dst, dst)   // lo0 lo1 hi0 hi1
	VSHUFI64X2(U8(0xd8), dst, dst, dst) // lo0 hi0 lo1 hi1
}

// genVNNITile emits vnniTile<q>_<mr>x<nr>(xq, ldx, dx, xqs, ldd, w, ldw,
// wt, nb, y, ldy): the matrix product of mr activation rows quantized by
// quantizeXQ8 (ldx bytes apart; their scales and block sums ldd bytes apart)
// with nr q8 or q4 weight rows (ldw bytes apart), storing y[i*ldy+4j]. xq is
// in the transposed layout of transposeXQ8 (per group of 16 blocks, 8
// vectors: vector k holds dword k of block b in lane b), and the weight
// quants come from wt (rows ldwt = ldx bytes apart) as transposeW<q> writes
// them; w still supplies the scales. Accumulators stay in registers: mr*nr
// integer sums and mr*nr float sums.
func genVNNITile(q string, mr, nr int) {
	name := fmt.Sprintf("vnniTile%s_%dx%d", q, mr, nr)
	text(name, NOSPLIT, "func(xq *byte, ldx int, dx *float32, xqs *float32, ldd int, w *byte, ldw int, wt *byte, nb int, y *float32, ldy int)")
	Doc(name + " is an int8 matrix-product micro-kernel (see vnnitile.go in asmgen).")
	np := mr * nr
	t := &vnniTile{q: q, mr: mr, nr: nr, acc: zr[0:np], facc: zr[12 : 12+np], W: zr[24 : 24+nr], xv: Z27, C: zr[28:32]}
	for _, a := range t.facc {
		VXORPS(a, a, a)
	}
	// activation rows and transposed weight rows are both ldx bytes apart
	xb := Load(Param("xq"), GP64())
	wb := Load(Param("wt"), GP64())
	t.ldx = Load(Param("ldx"), GP64())
	t.l3 = GP64()
	LEAQ(Mem{Base: t.ldx, Index: t.ldx, Scale: 2}, t.l3)
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
	lowMask(cnt, K1)
	t.startSums(bo2)
	t.sums(xb, wb)
	t.scale(bo2)
	ADDQ(U32(512), xb)
	ADDQ(U32(512), wb)
	ADDQ(U8(32), bo2)
	JMP(LabelRef("group"))

	Label("reduce")
	t.store()
}

// vnniTile is the state of genVNNITile's body.
type vnniTile struct {
	q       string
	mr, nr  int
	acc     []VecPhysical // integer sums, mr*nr
	facc    []VecPhysical // float sums, mr*nr
	W       []VecPhysical // one weight vector per row
	xv      VecPhysical   // an activation vector
	C       []VecPhysical // offset*xqs of each activation row
	ldx, l3 Register      // row stride and 3 times it
	ldd     Register      // stride of the activation rows' scales (mr > 1)
}

// row is the address of row i (0-3) at base, ldx bytes apart, plus disp.
func (t *vnniTile) row(base Register, i, disp int) Mem {
	switch i {
	case 0:
		return Mem{Base: base, Disp: disp}
	case 3:
		return Mem{Base: base, Index: t.l3, Scale: 1, Disp: disp}
	}
	return Mem{Base: base, Index: t.ldx, Scale: uint8(i), Disp: disp}
}

// startSums starts the integer sums of the group at -offset*xqs of their
// activation row (and loads ldd).
func (t *vnniTile) startSums(bo2 Register) {
	xsp := Load(Param("xqs"), GP64())
	if t.mr > 1 {
		t.ldd = Load(Param("ldd"), GP64())
	}
	VPXORD(t.xv, t.xv, t.xv)
	for i := range t.mr {
		VCVTPS2DQ(Mem{Base: xsp, Index: bo2, Scale: 2}, t.C[i])
		VPSLLD(U8(offsetShift(t.q)), t.C[i], t.C[i])
		VPSUBD(t.C[i], t.xv, t.C[i])
		if i+1 < t.mr {
			ADDQ(t.ldd, xsp)
		}
		for j := range t.nr {
			VMOVDQA64(t.C[i], t.acc[i*t.nr+j])
		}
	}
}

// sums accumulates the group's integer dot products: dword k of every block
// of an activation row times the same of a weight row, for k < 8.
func (t *vnniTile) sums(xb, wb Register) {
	for k := range 8 {
		for j := range t.nr {
			VMOVDQU64(t.row(wb, j, 64*k), t.W[j])
		}
		for i := range t.mr {
			VMOVDQU64(t.row(xb, i, 64*k), t.xv)
			for j := range t.nr {
				VPDPBUSD(t.xv, t.W[j], t.acc[i*t.nr+j])
			}
		}
	}
}

// scale adds the group's sums to the float sums: facc += cvt(D) * (dw*dx).
func (t *vnniTile) scale(bo2 Register) {
	ws := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	for j := range t.nr {
		VCVTPH2PS_Z(Mem{Base: ws, Index: bo2, Scale: 1}, K1, t.W[j])
		if j+1 < t.nr {
			ADDQ(ldw, ws)
		}
	}
	dxp := Load(Param("dx"), GP64())
	for i := range t.mr {
		for j := range t.nr {
			p := i*t.nr + j
			VCVTDQ2PS(t.acc[p], t.acc[p])
			VMULPS(Mem{Base: dxp, Index: bo2, Scale: 2}, t.W[j], t.C[j%4])
			VFMADD231PS(t.C[j%4], t.acc[p], t.facc[p])
		}
		if i+1 < t.mr {
			ADDQ(t.ldd, dxp)
		}
	}
}

// store writes the float sums' totals to y: the mr*nr vectors reduced
// together (tileReducePlan) into one whose lanes hold the totals, permuted
// (vnniTileStore) so that row i's nr totals are lanes 4i.., then stored a
// value at a time (masked stores of the rows were slower on Zen 5). Each total is the same sum, in the
// same order, as hsum's of its vector alone (the matrix-vector kernels'),
// which tileReducePlan checks: a few shuffles per pair of vectors instead of
// nine instructions per vector.
func (t *vnniTile) store() {
	y := Load(Param("y"), GP64())
	var ldy Register
	if t.mr > 1 {
		ldy = Load(Param("ldy"), GP64())
	}
	plan := tileReducePlan(t.mr * t.nr)
	lo, hi, zero := zr[0], zr[1], zr[2]
	VXORPS(zero, zero, zero)
	reg := func(v int) VecPhysical {
		if v < 0 {
			return zero
		}
		return t.facc[v]
	}
	for _, st := range plan.steps {
		a, b := reg(st.a), reg(st.b)
		switch st.level {
		case 0:
			VSHUFF64X2(U8(0x44), b, a, lo)
			VSHUFF64X2(U8(0xee), b, a, hi)
		case 1:
			VSHUFF64X2(U8(0x88), b, a, lo)
			VSHUFF64X2(U8(0xdd), b, a, hi)
		case 2:
			VUNPCKLPD(b, a, lo)
			VUNPCKHPD(b, a, hi)
		case 3:
			VSHUFPS(U8(0x88), b, a, lo)
			VSHUFPS(U8(0xdd), b, a, hi)
		}
		VADDPS(hi, lo, a)
	}
	res := reg(plan.result)
	VMOVDQU32(tileStore.Offset(64*tileStoreIndex(t.mr, t.nr)), lo)
	VPERMPS(res, lo, res)
	for i := range t.mr {
		x := res.AsX()
		if i > 0 {
			ADDQ(ldy, y)
			x = hi.AsX()
			VEXTRACTF32X4(U8(i), res, x)
		}
		for j := range t.nr {
			if j == 0 {
				VMOVSS(x, Mem{Base: y})
			} else {
				VEXTRACTPS(U8(j), x, Mem{Base: y, Disp: 4 * j})
			}
		}
	}
	VZEROUPPER()
	RET()
}

// tileStore holds, per tile shape (tileStoreIndex), the VPERMPS indices
// that move the totals of store's reduction to lane 4i+j for row i and
// weight row j.
var tileStore Mem

func tileStoreIndex(mr, nr int) int { return (mr-1)*vnniTileN + nr - 1 }

// vnniTileM and vnniTileN bound the tile shapes genVNNITile is called with.
const (
	vnniTileM = 4
	vnniTileN = 3
)

func genTileStore() {
	tileStore = GLOBL("vnniTileStore", RODATA|NOPTR)
	for mr := 1; mr <= vnniTileM; mr++ {
		for nr := 1; nr <= vnniTileN; nr++ {
			plan := tileReducePlan(mr * nr)
			var idx [16]uint32
			for l, v := range plan.lane {
				if v >= 0 {
					idx[4*(v/nr)+v%nr] = uint32(l)
				}
			}
			for l, x := range idx {
				DATA(64*tileStoreIndex(mr, nr)+4*l, U32(x))
			}
		}
	}
}

// reduceStep combines vectors a and b (-1: a zero vector) at a level of
// the reduction into a's register: level 0 adds lanes l and l+8 of each,
// 1 lanes l and l+4 of each half, 2 l and l+2 of each quarter, 3 l and l+1.
type reduceStep struct{ level, a, b int }

// reducePlan reduces n vectors of 16 lanes to their totals, all in vector
// result: lane l holds the total of vector lane[l] (-1: none).
type reducePlan struct {
	steps  []reduceStep
	result int
	lane   [16]int
}

// tileReducePlan pairs n vectors level by level and checks, by simulating
// the shuffles on the expressions the lanes hold, that each total is
// hsum's: ((v[l]+v[l+8]) + (..+..)) folded the same way, up to the order
// of each addition's operands.
func tileReducePlan(n int) reducePlan {
	type vec [16]string
	vals := make([]vec, n)
	for v := range vals {
		for l := range 16 {
			vals[v][l] = fmt.Sprintf("v%d.%d", v, l)
		}
	}
	var zero vec
	for l := range zero {
		zero[l] = "0"
	}
	add := func(x, y string) string {
		if y < x {
			x, y = y, x
		}
		return "(" + x + "+" + y + ")"
	}
	chunk := func(a, b vec, imm int) (o vec) { // VSHUFF64X2: chunks 0-1 from a, 2-3 from b
		for c := range 4 {
			src, sel := a, imm>>(2*c)&3
			if c >= 2 {
				src = b
			}
			copy(o[4*c:4*c+4], src[4*sel:4*sel+4])
		}
		return
	}
	within := func(a, b vec, sel [4]int) (o vec) { // per 128 bits: a[sel0], a[sel1], b[sel2], b[sel3]
		for c := range 4 {
			o[4*c], o[4*c+1], o[4*c+2], o[4*c+3] = a[4*c+sel[0]], a[4*c+sel[1]], b[4*c+sel[2]], b[4*c+sel[3]]
		}
		return
	}
	var p reducePlan
	live := make([]int, n)
	for v := range live {
		live[v] = v
	}
	for level := range 4 {
		var next []int
		for k := 0; k < len(live); k += 2 {
			a, b := live[k], -1
			bv := zero
			if k+1 < len(live) {
				b = live[k+1]
				bv = vals[b]
			}
			av := vals[a]
			var lo, hi vec
			switch level {
			case 0:
				lo, hi = chunk(av, bv, 0x44), chunk(av, bv, 0xee)
			case 1:
				lo, hi = chunk(av, bv, 0x88), chunk(av, bv, 0xdd)
			case 2:
				lo, hi = within(av, bv, [4]int{0, 1, 0, 1}), within(av, bv, [4]int{2, 3, 2, 3})
			case 3:
				lo, hi = within(av, bv, [4]int{0, 2, 0, 2}), within(av, bv, [4]int{1, 3, 1, 3})
			}
			for l := range 16 {
				vals[a][l] = add(lo[l], hi[l])
			}
			p.steps = append(p.steps, reduceStep{level, a, b})
			next = append(next, a)
		}
		live = next
	}
	if len(live) != 1 {
		panic("tile reduction: more than one vector left")
	}
	p.result = live[0]
	// hsum's total of vector v (isa.go): halves, quarters, pairs, then lanes 0 and 1.
	want := func(v int) string {
		x := make([]string, 16)
		for l := range x {
			x[l] = fmt.Sprintf("v%d.%d", v, l)
		}
		for w := 8; w >= 1; w /= 2 {
			for l := range w {
				x[l] = add(x[l], x[l+w])
			}
		}
		return x[0]
	}
	for l := range p.lane {
		p.lane[l] = -1
	}
	for v := range n {
		found := false
		for l, e := range vals[p.result] {
			if e == want(v) {
				p.lane[l], found = v, true
			}
		}
		if !found {
			panic(fmt.Sprintf("tile reduction of %d vectors: no lane holds hsum's total of vector %d", n, v))
		}
	}
	return p
}
