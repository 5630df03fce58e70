//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genDots emits dotsAVX512: out[r] = q · row r for rows rows ld bytes apart,
// each with exactly the operations of dotAVX512 (dotF32Body), so a batch
// equals per-row calls bit for bit. Attention uses it to score all keys of a
// head in one call; float16 caches use dotsF16x1 (genDotsF16N).
func genDots() {
	text("dotsAVX512", NOSPLIT, "func(out *float32, q *float32, k *float32, ld int, n16 int, rows int)")
	Doc("dotsAVX512 sets out[r] = dotAVX512(q, k + r*ld bytes, n16) for r < rows.")
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
	dotF32Body(avx512, a, b, n)
	VMOVSS(X0, Mem{Base: out})
	ADDQ(U8(4), out)
	ADDQ(ld, k)
	DECQ(rows)
	JMP(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// attnPrefetchRows is how many cache rows ahead the binary16 attention
// kernels prefetch (NTA) the row they will read: a decode's keys and values
// of one head are short streams (40 KB at 160 tokens) that the hardware
// prefetcher barely ramps up on. Measured over a Qwen3-0.6B layout (28 layers
// × 8 heads, 9 interleaved rounds): 160 rows 18-19 → 25-26 GB/s, 1920 rows
// 26-28 → 26-28; 4 or 8 rows ahead, or T0, gained less. Both kernels also
// take the row streams' page-start prefetch (pageKick, ahead of the
// prefetched row): Qwen3-0.6B q4 decode with 1920 tokens cached, 1 and 2
// threads, 12 alternating pairs: per-pair ratios 0.94-1.18, median 1.05
// (a first version, 14 pairs: median 1.08).
const attnPrefetchRows = 16

// attnPrefetchOffset returns a register holding attnPrefetchRows*ld.
func attnPrefetchOffset(ld Register) Register {
	pf := GP64()
	IMUL3Q(U8(attnPrefetchRows), ld, pf)
	return pf
}

// genDotsF16N emits dotsF16x<nq>: the scores of nq query vectors (ldq bytes
// apart) against the same rows of a binary16 cache, stored at out + qi*ldo
// bytes + 4r, each dot with exactly the operations of dotF16AVX512.
// Grouped-query attention scores the heads that share a key/value head in
// one pass over the keys.
func genDotsF16N(nq int) {
	name := fmt.Sprintf("dotsF16x%d", nq)
	text(name, NOSPLIT, "func(out *float32, ldo int, q *float32, ldq int, k *uint16, ld int, n16 int, rows int)")
	Doc(name + fmt.Sprintf(" sets out[qi*ldo bytes + 4r] = dotF16AVX512(q + qi*ldq bytes, k + r*ld bytes, n16) for qi < %d, r < rows.", nq))
	out := Load(Param("out"), GP64())
	ldo := Load(Param("ldo"), GP64())
	qp := make([]Register, nq)
	qp[0] = Load(Param("q"), GP64())
	ldq := Load(Param("ldq"), GP64())
	for i := 1; i < nq; i++ {
		qp[i] = GP64()
		LEAQ(Mem{Base: qp[i-1], Index: ldq, Scale: 1}, qp[i])
	}
	k := Load(Param("k"), GP64())
	ld := Load(Param("ld"), GP64())
	bytes := Load(Param("n16"), GP64())
	SHLQ(U8(1), bytes) // bytes of a binary16 row
	end32 := GP64()
	LEAQ(Mem{Base: bytes, Disp: -64}, end32)
	rows := Load(Param("rows"), GP64())
	off, tmp := GP64(), GP64()
	accA := func(i int) VecPhysical { return zr[2*i] }
	accB := func(i int) VecPhysical { return zr[2*i+1] }
	t0, t1 := Z10, Z11
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
		VXORPS(accA(i), accA(i), accA(i))
		VXORPS(accB(i), accB(i), accB(i))
	}
	Label("loop32")
	CMPQ(off, end32)
	JG(LabelRef("loop16"))
	VCVTPH2PS(Mem{Base: k, Index: off, Scale: 1}, t0)
	VCVTPH2PS(Mem{Base: k, Index: off, Scale: 1, Disp: 32}, t1)
	for i := 0; i < nq; i++ {
		VFMADD231PS(Mem{Base: qp[i], Index: off, Scale: 2}, t0, accA(i))
		VFMADD231PS(Mem{Base: qp[i], Index: off, Scale: 2, Disp: 64}, t1, accB(i))
	}
	ADDQ(U8(64), off)
	JMP(LabelRef("loop32"))
	Label("loop16")
	CMPQ(off, bytes)
	JGE(LabelRef("sum"))
	VCVTPH2PS(Mem{Base: k, Index: off, Scale: 1}, t0)
	for i := 0; i < nq; i++ {
		VFMADD231PS(Mem{Base: qp[i], Index: off, Scale: 2}, t0, accA(i))
	}
	Label("sum")
	MOVQ(out, tmp)
	for i := 0; i < nq; i++ {
		VADDPS(accB(i), accA(i), accA(i))
		hsum(accA(i), t1)
		VMOVSS(accA(i).AsX(), Mem{Base: tmp})
		if i+1 < nq {
			ADDQ(ldo, tmp)
		}
	}
	ADDQ(U8(4), out)
	ADDQ(ld, k)
	DECQ(rows)
	JMP(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// genAxpysN emits name: for qi < nq, y_qi += sum_r p_qi[r] * row r of a
// float32 or binary16 cache (y_qi at y + qi*ldy bytes, p_qi at p + qi*ldp
// bytes), in order of r with the operations of axpyAVX512 / axpyF16AVX512
// (bit-identical to per-row calls), holding up to 8 vectors of each y_qi (a
// head of 128) in registers across the rows so that each row is read, and
// converted, once for all nq heads. Attention uses them for the
// probability-weighted sum of the values.
func genAxpysN(name string, nq int, f16 bool) {
	vt := "float32"
	esize := 4
	if f16 {
		vt, esize = "uint16", 2
	}
	text(name, NOSPLIT, "func(y *float32, ldy int, p *float32, ldp int, v *"+vt+", ld int, n16 int, rows int)")
	Doc(name + fmt.Sprintf(" adds p_qi[r] * row r (rows ld bytes apart) to y_qi[:n16] for qi < %d, r < rows, in order.", nq))
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	pb := make([]Register, nq)
	pb[0] = Load(Param("p"), GP64())
	ldp := Load(Param("ldp"), GP64())
	for i := 1; i < nq; i++ {
		pb[i] = GP64()
		LEAQ(Mem{Base: pb[i-1], Index: ldp, Scale: 1}, pb[i])
	}
	v := Load(Param("v"), GP64())
	ld := Load(Param("ld"), GP64())
	n := Load(Param("n16"), GP64())
	rows := Load(Param("rows"), GP64())
	vp, rr, tmp := GP64(), GP64(), GP64()
	var pf Register
	var kick, kt Register
	if f16 {
		pf = attnPrefetchOffset(ld)
		kick, kt = GP64(), GP64()
	}
	w := 4
	if nq <= 2 {
		w = 8
	}
	acc := func(i, u int) VecPhysical { return zr[i*w+u] }
	T := zr[nq*w : nq*w+w]
	B := zr[nq*w+w : nq*w+w+nq]
	chunk := func(w int, lbl, next string) {
		Label(lbl)
		CMPQ(n, U8(16*w))
		JL(LabelRef(next))
		MOVQ(y, tmp)
		for i := 0; i < nq; i++ {
			for u := 0; u < w; u++ {
				VMOVUPS(Mem{Base: tmp, Disp: 64 * u}, acc(i, u))
			}
			if i+1 < nq {
				ADDQ(ldy, tmp)
			}
		}
		MOVQ(v, vp)
		if f16 {
			initPageKick(vp, kick) // each pass reads the rows again
		}
		XORQ(rr, rr)
		Label(lbl + "row")
		CMPQ(rr, rows)
		JGE(LabelRef(lbl + "store"))
		if f16 {
			for u := 0; u < w/2; u++ {
				PREFETCHNTA(Mem{Base: vp, Index: pf, Scale: 1, Disp: 64 * u})
			}
			pageKick(Mem{Base: vp, Index: pf, Scale: 1}, kick, kt, lbl+"kick")
			for u := 0; u < w; u++ {
				VCVTPH2PS(Mem{Base: vp, Disp: 32 * u}, T[u])
			}
		}
		for i := 0; i < nq; i++ {
			VBROADCASTSS(Mem{Base: pb[i], Index: rr, Scale: 4}, B[i])
			for u := 0; u < w; u++ {
				if f16 {
					VFMADD231PS(T[u], B[i], acc(i, u))
				} else {
					VFMADD231PS(Mem{Base: vp, Disp: 64 * u}, B[i], acc(i, u))
				}
			}
		}
		ADDQ(ld, vp)
		INCQ(rr)
		JMP(LabelRef(lbl + "row"))
		Label(lbl + "store")
		MOVQ(y, tmp)
		for i := 0; i < nq; i++ {
			for u := 0; u < w; u++ {
				VMOVUPS(acc(i, u), Mem{Base: tmp, Disp: 64 * u})
			}
			if i+1 < nq {
				ADDQ(ldy, tmp)
			}
		}
		ADDQ(U32(64*w), y)
		ADDQ(U32(16*esize*w), v)
		SUBQ(U8(16*w), n)
		JMP(LabelRef(lbl))
	}
	if w == 8 {
		chunk(8, "c8", "c4")
	}
	chunk(4, "c4", "c1")
	chunk(1, "c1", "done")
	Label("done")
	VZEROUPPER()
	RET()
}
