//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// tileLimits are the register tiles of an ISA: up to mr input rows by nr
// weight rows (the register file holds mr*nr accumulators, mr input vectors
// and nr weight vectors), and prefetchMR, the most input rows for which a
// tile prefetches (0: never).
type tileLimits struct{ mr, nr, prefetchMR int }

var (
	// Matrix-vector tiles (one or two input rows) are memory-bound: they
	// prefetch the same columns of the next tile's weight rows, which the
	// hardware prefetcher would only find after crossing into each of their
	// pages; larger tiles are compute-bound.
	tilesAVX512 = tileLimits{mr: 4, nr: 5, prefetchMR: 2}
	tilesAVX2   = tileLimits{mr: 4, nr: 3}
)

// genTiles emits every float tile of an ISA (see genTile), and on AVX2
// their carrying forms.
func genTiles(s isa, lim tileLimits, wt string) {
	for _, carry := range []bool{false, true} {
		if carry && s.lanes != 8 {
			continue
		}
		for mr := 1; mr <= lim.mr; mr++ {
			for nr := 1; nr <= lim.nr; nr++ {
				genTile(s, lim, wt, mr, nr, carry)
			}
		}
	}
}

// genTile emits tile<wt><matSuffix>_<mr>x<nr>(x, ldx, w, ldw, k, y, ldy):
// for i < mr, j < nr, y[i*ldy+j] += sum_{c<k} x[i*ldx+c] * w_j[c], where
// w_j starts ldw bytes after w_{j-1} and holds float32, binary16 or bfloat16
// values, and k is a multiple of the lanes. Its carrying form
// tile<wt><matSuffix>C_<mr>x<nr>(x, ldx, w, ldw, k, acc, flags, y, ldy) takes
// the columns of a row in blocks, the mr*nr accumulators carried between
// calls in memory at acc (loaded when flags&1, else zero; stored unless
// flags&2, which ends the rows as the plain form does): the same additions
// in the same order per lane, so the same results, with each block's rows
// small enough for L1.
func genTile(s isa, lim tileLimits, wt string, mr, nr int, carry bool) {
	name := fmt.Sprintf("tile%s%s_%dx%d", wt, s.matSuffix, mr, nr)
	k := fmt.Sprintf("k%d", s.lanes)
	sig := "func(x *float32, ldx int, w *byte, ldw int, " + k + " int, y *float32, ldy int)"
	if carry {
		name = fmt.Sprintf("tile%s%sC_%dx%d", wt, s.matSuffix, mr, nr)
		sig = "func(x *float32, ldx int, w *byte, ldw int, " + k + " int, acc *float32, flags int, y *float32, ldy int)"
	}
	text(name, NOSPLIT, sig)
	Doc(name + " accumulates a register tile of dot products (see genTile).")
	wsize := weightSize(wt)
	t := &tile{s: s, wt: wt, mr: mr, nr: nr, carry: carry}
	t.xp, _ = rowPointers("x", "ldx", 2, mr)
	var ldw Register
	t.wp, ldw = rowPointers("w", "ldw", 0, nr)
	end := Load(Param(k), GP64())
	SHLQ(U8(wsize/2), end) // elements to bytes
	t.off = GP64()
	XORQ(t.off, t.off)
	if mr <= lim.prefetchMR {
		t.pf = GP64() // the next tile's weight rows: nr*ldw bytes ahead
		IMUL3Q(U8(nr), ldw, t.pf)
	}
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			VXORPS(t.acc(i, j), t.acc(i, j), t.acc(i, j))
		}
	}
	if carry {
		t.accp = Load(Param("acc"), GP64())
		fl := Load(Param("flags"), GP64())
		TESTQ(U32(1), fl)
		JZ(LabelRef("fresh"))
		for p := range mr * nr {
			VMOVUPS(Mem{Base: t.accp, Disp: s.bytes() * p}, s.vr[p])
		}
		Label("fresh")
	}
	// One vector register per input row, or (AVX2's 4×3: 12 accumulators
	// and 3 weight vectors leave one of 16) one for all rows, loaded before
	// each row's products.
	na := lim.mr * lim.nr
	nx := lim.mr
	if na+nx+lim.nr > len(s.vr) {
		nx = 1
	}
	t.xs = make([]VecPhysical, lim.mr)
	for i := range t.xs {
		t.xs[i] = s.vr[na+i%nx]
	}
	ws := s.vr[na+nx : na+nx+lim.nr]
	cb := s.lanes * wsize // weight bytes of a chunk
	if t.pf != nil {
		// Two chunks per iteration (the same order of additions into each
		// accumulator: results do not depend on the unrolling); the second
		// takes its weights into accumulators no prefetching tile uses.
		ws2 := s.vr[lim.prefetchMR*lim.nr : (lim.prefetchMR+1)*lim.nr]
		end2 := GP64()
		LEAQ(Mem{Base: end, Disp: -2 * cb}, end2)
		Label("loop2")
		CMPQ(t.off, end2)
		JG(LabelRef("loop"))
		t.chunk(0, ws)
		t.chunk(cb, ws2)
		t.advance(2 * cb)
		JMP(LabelRef("loop2"))
	}
	Label("loop")
	CMPQ(t.off, end)
	JGE(LabelRef("reduce"))
	t.chunk(0, ws)
	t.advance(cb)
	JMP(LabelRef("loop"))
	Label("reduce")
	t.store()
}

// tile is the state of genTile's body: the input and weight row pointers,
// the byte offset into the weight rows, and the prefetch offset (nil when
// the tile does not prefetch).
type tile struct {
	s       isa
	wt      string
	mr, nr  int
	carry   bool     // the carrying form
	accp    Register // its accumulators' memory
	xp, wp  []Register
	off, pf Register
	xs      []VecPhysical // one input vector per row
}

// acc is the accumulator of input row i and weight row j.
func (t *tile) acc(i, j int) VecPhysical { return t.s.vr[i*t.nr+j] }

// chunk multiplies one vector of columns at byte offset off+disp of the
// weight rows, using wr for the weights; a chunk that starts a cache line
// prefetches it in the next tile.
func (t *tile) chunk(disp int, wr []VecPhysical) {
	xscale := uint8(4 / weightSize(t.wt))
	for j := 0; j < t.nr; j++ {
		loadWeights(t.wt, Mem{Base: t.wp[j], Index: t.off, Scale: 1, Disp: disp}, wr[j])
		if t.pf != nil && disp%64 == 0 {
			PREFETCHT0(Mem{Base: t.wp[j], Index: t.pf, Scale: 1, Disp: disp})
		}
	}
	for i := 0; i < t.mr; i++ {
		VMOVUPS(Mem{Base: t.xp[i], Index: t.off, Scale: xscale, Disp: disp * int(xscale)}, t.xs[i])
		for j := 0; j < t.nr; j++ {
			VFMADD231PS(wr[j], t.xs[i], t.acc(i, j))
		}
	}
}

// advance moves the offsets on by n bytes of weights.
func (t *tile) advance(n int) {
	ADDQ(U8(n), t.off)
	if t.pf != nil {
		ADDQ(U8(n), t.pf)
	}
}

// store adds each accumulator's sum to its output (the carrying form,
// unless told it ends the rows: stores the accumulators).
func (t *tile) store() {
	if t.carry {
		fl := Load(Param("flags"), GP64())
		TESTQ(U32(2), fl)
		JNZ(LabelRef("final"))
		for p := range t.mr * t.nr {
			VMOVUPS(t.s.vr[p], Mem{Base: t.accp, Disp: t.s.bytes() * p})
		}
		VZEROUPPER()
		RET()
		Label("final")
	}
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	for i := 0; i < t.mr; i++ {
		for j := 0; j < t.nr; j++ {
			a := t.acc(i, j)
			hsum(a, t.s.last())
			VADDSS(Mem{Base: y, Disp: 4 * j}, a.AsX(), a.AsX())
			VMOVSS(a.AsX(), Mem{Base: y, Disp: 4 * j})
		}
		if i+1 < t.mr {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}
