//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genDots emits dots<suffix>: out[r] = q · row r for rows rows ld bytes
// apart, each with exactly the operations of dot<suffix> (dotF32Body), so a
// batch equals per-row calls bit for bit. Attention uses it to score all keys
// of a head in one call; float16 caches use dotsF16x1 (genDotsF16N).
func genDots(s isa) {
	name := "dots" + s.suffix
	text(name, NOSPLIT, "func(out *float32, q *float32, k *float32, ld int, n16 int, rows int)")
	Doc(fmt.Sprintf("%s sets out[r] = dot%s(q, k + r*ld bytes, n16) for r < rows (n16 a multiple of %d).", name, s.suffix, s.lanes))
	out := Load(Param("out"), GP64())
	q := Load(Param("q"), GP64())
	k := Load(Param("k"), GP64())
	ld := Load(Param("ld"), GP64())
	n16 := Load(Param("n16"), GP64())
	rows := Load(Param("rows"), GP64())
	a, b, n := GP64(), GP64(), GP64()
	Label("row")
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	MOVQ(q, a)
	MOVQ(k, b)
	MOVQ(n16, n)
	dotF32Body(s, a, b, n)
	VMOVSS(X0, Mem{Base: out})
	nextRow(out, k, ld, rows)
}

// attnPrefetchRows is how many cache rows ahead the binary16 attention
// kernels prefetch (NTA) the row they will read: a decode's keys and values
// of one head are short streams that the hardware prefetcher barely ramps up
// on. Both kernels also take the row streams' page-start prefetch (pageKick,
// ahead of the prefetched row). Measured in docs/performance.md, "Tuning
// constants".
const attnPrefetchRows = 16

// attnPrefetchOffset returns a register holding attnPrefetchRows*ld.
func attnPrefetchOffset(ld Register) Register {
	pf := GP64()
	IMUL3Q(U8(attnPrefetchRows), ld, pf)
	return pf
}

// genDotsF16N emits dotsF16x<nq><matSuffix>: the scores of nq query vectors
// (ldq bytes apart) against the same rows of a binary16 cache, stored at out
// + qi*ldo bytes + 4r, each dot with exactly the operations of
// dotF16<suffix> (chains accumulators, as genDotF16). Grouped-query attention
// scores the heads that share a key/value head in one pass over the keys.
func genDotsF16N(s isa, nq, chains int) {
	name := fmt.Sprintf("dotsF16x%d%s", nq, s.matSuffix)
	text(name, NOSPLIT, "func(out *float32, ldo int, q *float32, ldq int, k *uint16, ld int, n16 int, rows int)")
	Doc(name + fmt.Sprintf(" sets out[qi*ldo bytes + 4r] = dotF16%s(q + qi*ldq bytes, k + r*ld bytes, n16) for qi < %d, r < rows.", s.suffix, nq))
	out := Load(Param("out"), GP64())
	ldo := Load(Param("ldo"), GP64())
	qp, _ := rowPointers("q", "ldq", 0, nq)
	k := Load(Param("k"), GP64())
	ld := Load(Param("ld"), GP64())
	bytes := Load(Param("n16"), GP64())
	SHLQ(U8(1), bytes) // bytes of a binary16 row
	var end32 Register
	if chains > 1 {
		end32 = GP64()
		LEAQ(Mem{Base: bytes, Disp: -chains * s.bytes() / 2}, end32)
	}
	rows := Load(Param("rows"), GP64())
	off, tmp := GP64(), GP64()
	// acc(i, c) is chain c of query i; t[c] holds a converted key vector
	acc := func(i, c int) VecPhysical { return s.vr[chains*i+c] }
	t := s.vr[10:12]
	hb := s.bytes() / 2 // key bytes of a vector
	pf := attnPrefetchOffset(ld)
	kick, kt := GP64(), GP64()
	initPageKick(k, kick)
	Label("row")
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	for u := range 4 { // a head of 128 binary16 values
		PREFETCHNTA(Mem{Base: k, Index: pf, Scale: 1, Disp: 64 * u})
	}
	pageKick(Mem{Base: k, Index: pf, Scale: 1}, kick, kt, "nokick")
	XORQ(off, off)
	for i := 0; i < nq; i++ {
		for c := range chains {
			VXORPS(acc(i, c), acc(i, c), acc(i, c))
		}
	}
	// chains vectors at a time, vector c into chain c; then (chains > 1)
	// at most one more, into chain 0
	loop := fmt.Sprintf("loop%d", chains*s.lanes)
	Label(loop)
	if chains > 1 {
		CMPQ(off, end32)
		JG(LabelRef(fmt.Sprintf("loop%d", s.lanes)))
	} else {
		CMPQ(off, bytes)
		JGE(LabelRef("sum"))
	}
	for c := range chains {
		VCVTPH2PS(Mem{Base: k, Index: off, Scale: 1, Disp: hb * c}, t[c])
	}
	for i := 0; i < nq; i++ {
		for c := range chains {
			VFMADD231PS(Mem{Base: qp[i], Index: off, Scale: 2, Disp: 2 * hb * c}, t[c], acc(i, c))
		}
	}
	ADDQ(U8(chains*hb), off)
	JMP(LabelRef(loop))
	if chains > 1 {
		Label(fmt.Sprintf("loop%d", s.lanes))
		CMPQ(off, bytes)
		JGE(LabelRef("sum"))
		VCVTPH2PS(Mem{Base: k, Index: off, Scale: 1}, t[0])
		for i := 0; i < nq; i++ {
			VFMADD231PS(Mem{Base: qp[i], Index: off, Scale: 2}, t[0], acc(i, 0))
		}
	}
	Label("sum")
	MOVQ(out, tmp)
	for i := 0; i < nq; i++ {
		if chains > 1 {
			VADDPS(acc(i, 1), acc(i, 0), acc(i, 0))
		}
		hsum(acc(i, 0), t[1])
		VMOVSS(acc(i, 0).AsX(), Mem{Base: tmp})
		if i+1 < nq {
			ADDQ(ldo, tmp)
		}
	}
	nextRow(out, k, ld, rows)
}

// genAxpysN emits name: for qi < nq, y_qi += sum_r p_qi[r] * row r of a
// float32 or binary16 cache (y_qi at y + qi*ldy bytes, p_qi at p + qi*ldp
// bytes), in order of r with the operations of axpy<suffix> /
// axpyF16<suffix> (bit-identical to per-row calls), holding up to 8 vectors
// of each y_qi (a head of 128 on AVX-512; 4 or 2 of AVX2's 16 registers) in
// registers across the rows so that each row is read, and converted, once for
// all nq heads. Attention uses them for the probability-weighted sum of the
// values.
func genAxpysN(s isa, name string, nq int, f16 bool) {
	vt := "float32"
	if f16 {
		vt = "uint16"
	}
	text(name, NOSPLIT, "func(y *float32, ldy int, p *float32, ldp int, v *"+vt+", ld int, n16 int, rows int)")
	Doc(name + fmt.Sprintf(" adds p_qi[r] * row r (rows ld bytes apart) to y_qi[:n16] for qi < %d, r < rows, in order.", nq))
	a := &axpys{s: s, nq: nq, f16: f16, y: Load(Param("y"), GP64()), ldy: Load(Param("ldy"), GP64())}
	a.pb, _ = rowPointers("p", "ldp", 0, nq)
	a.v = Load(Param("v"), GP64())
	a.ld = Load(Param("ld"), GP64())
	a.n = Load(Param("n16"), GP64())
	a.rows = Load(Param("rows"), GP64())
	a.vp, a.rr, a.tmp = GP64(), GP64(), GP64()
	if f16 {
		a.pf = attnPrefetchOffset(a.ld)
		a.kick, a.kt = GP64(), GP64()
	}
	a.w = 4
	if nq <= 2 {
		a.w = 8
	}
	if s.lanes == 8 {
		a.w /= 2
	}
	a.T = s.vr[nq*a.w : nq*a.w+a.w]
	a.B = s.vr[nq*a.w+a.w : nq*a.w+a.w+nq]
	sizes := []int{a.w}
	if a.w == 8 {
		sizes = append(sizes, 4)
	}
	sizes = append(sizes, 1)
	for c, w := range sizes {
		next := "done"
		if c+1 < len(sizes) {
			next = fmt.Sprintf("c%d", sizes[c+1])
		}
		a.chunk(w, fmt.Sprintf("c%d", w), next)
	}
	Label("done")
	VZEROUPPER()
	RET()
}

// axpys is the state of genAxpysN's body.
type axpys struct {
	s                      isa
	nq, w                  int  // heads, and the most vectors of each held in registers
	f16                    bool // binary16 rows
	y, ldy, v, ld, n, rows Register
	pb                     []Register // p_qi
	vp, rr, tmp            Register   // row pointer, row index, scratch
	pf, kick, kt           Register   // f16: prefetch offset and page kick
	T, B                   []VecPhysical
}

// acc is the register holding vector u of y_i.
func (a *axpys) acc(i, u int) VecPhysical { return a.s.vr[i*a.w+u] }

// chunk emits the pass over all rows for the next w vectors of every y_i
// (label lbl; next is the next chunk's label): load them, add every row's
// share, store them.
func (a *axpys) chunk(w int, lbl, next string) {
	s := a.s
	Label(lbl)
	CMPQ(a.n, U8(s.lanes*w))
	JL(LabelRef(next))
	a.each(w, func(i, u int, m Mem) { VMOVUPS(m, a.acc(i, u)) })
	MOVQ(a.v, a.vp)
	if a.f16 {
		initPageKick(a.vp, a.kick) // each pass reads the rows again
	}
	XORQ(a.rr, a.rr)
	Label(lbl + "row")
	CMPQ(a.rr, a.rows)
	JGE(LabelRef(lbl + "store"))
	if a.f16 {
		for u := range w * s.lanes * 2 / 64 { // the whole lines of w vectors
			PREFETCHNTA(Mem{Base: a.vp, Index: a.pf, Scale: 1, Disp: 64 * u})
		}
		pageKick(Mem{Base: a.vp, Index: a.pf, Scale: 1}, a.kick, a.kt, lbl+"kick")
		for u := 0; u < w; u++ {
			VCVTPH2PS(Mem{Base: a.vp, Disp: s.bytes() / 2 * u}, a.T[u])
		}
	}
	for i := 0; i < a.nq; i++ {
		VBROADCASTSS(Mem{Base: a.pb[i], Index: a.rr, Scale: 4}, a.B[i])
		for u := 0; u < w; u++ {
			if a.f16 {
				VFMADD231PS(a.T[u], a.B[i], a.acc(i, u))
			} else {
				VFMADD231PS(Mem{Base: a.vp, Disp: s.bytes() * u}, a.B[i], a.acc(i, u))
			}
		}
	}
	ADDQ(a.ld, a.vp)
	INCQ(a.rr)
	JMP(LabelRef(lbl + "row"))
	Label(lbl + "store")
	a.each(w, func(i, u int, m Mem) { VMOVUPS(a.acc(i, u), m) })
	esize := 4
	if a.f16 {
		esize = 2
	}
	ADDQ(U32(s.bytes()*w), a.y)
	ADDQ(U32(s.lanes*esize*w), a.v)
	SUBQ(U8(s.lanes*w), a.n)
	JMP(LabelRef(lbl))
}

// each calls f for vector u < w of each y_i, at m.
func (a *axpys) each(w int, f func(i, u int, m Mem)) {
	MOVQ(a.y, a.tmp)
	for i := 0; i < a.nq; i++ {
		for u := 0; u < w; u++ {
			f(i, u, Mem{Base: a.tmp, Disp: a.s.bytes() * u})
		}
		if i+1 < a.nq {
			ADDQ(a.ldy, a.tmp)
		}
	}
}
