//go:build asmgen

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genDots emits dotsAVX512 and dotsF16AVX512: out[r] = q · row r for rows
// rows ld bytes apart, each with exactly the operations of dotAVX512 /
// dotF16AVX512 (so a batch equals per-row calls bit for bit). Attention uses
// them to score all keys of a head in one call.
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
	for i := 0; i < 4; i++ {
		VXORPS(zr[i], zr[i], zr[i])
	}
	Label("loop64")
	CMPQ(n, U8(64))
	JL(LabelRef("loop16"))
	for i := 0; i < 4; i++ {
		VMOVUPS(Mem{Base: a, Disp: 64 * i}, zr[4+i])
		VFMADD231PS(Mem{Base: b, Disp: 64 * i}, zr[4+i], zr[i])
	}
	ADDQ(U32(256), a)
	ADDQ(U32(256), b)
	SUBQ(U8(64), n)
	JMP(LabelRef("loop64"))
	Label("loop16")
	CMPQ(n, U8(16))
	JL(LabelRef("sum"))
	VMOVUPS(Mem{Base: a}, Z4)
	VFMADD231PS(Mem{Base: b}, Z4, Z0)
	ADDQ(U8(64), a)
	ADDQ(U8(64), b)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop16"))
	Label("sum")
	VADDPS(Z1, Z0, Z0)
	VADDPS(Z3, Z2, Z2)
	VADDPS(Z2, Z0, Z0)
	hsum(Z0, Z1)
	VMOVSS(X0, Mem{Base: out})
	ADDQ(U8(4), out)
	ADDQ(ld, k)
	DECQ(rows)
	JMP(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()

	text("dotsF16AVX512", NOSPLIT, "func(out *float32, q *float32, k *uint16, ld int, n16 int, rows int)")
	Doc("dotsF16AVX512 sets out[r] = dotF16AVX512(q, k + r*ld bytes, n16) for r < rows.")
	out = Load(Param("out"), GP64())
	q = Load(Param("q"), GP64())
	k = Load(Param("k"), GP64())
	ld = Load(Param("ld"), GP64())
	n16 = Load(Param("n16"), GP64())
	rows = Load(Param("rows"), GP64())
	a, b, n = GP64(), GP64(), GP64()
	Label("row")
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	MOVQ(q, a)
	MOVQ(k, b)
	MOVQ(n16, n)
	VXORPS(Z0, Z0, Z0)
	VXORPS(Z1, Z1, Z1)
	Label("loop32")
	CMPQ(n, U8(32))
	JL(LabelRef("loop16"))
	VCVTPH2PS(Mem{Base: b}, Z2)
	VCVTPH2PS(Mem{Base: b, Disp: 32}, Z3)
	VFMADD231PS(Mem{Base: a}, Z2, Z0)
	VFMADD231PS(Mem{Base: a, Disp: 64}, Z3, Z1)
	ADDQ(U32(128), a)
	ADDQ(U8(64), b)
	SUBQ(U8(32), n)
	JMP(LabelRef("loop32"))
	Label("loop16")
	CMPQ(n, U8(16))
	JL(LabelRef("sum"))
	VCVTPH2PS(Mem{Base: b}, Z2)
	VFMADD231PS(Mem{Base: a}, Z2, Z0)
	Label("sum")
	VADDPS(Z1, Z0, Z0)
	hsum(Z0, Z1)
	VMOVSS(X0, Mem{Base: out})
	ADDQ(U8(4), out)
	ADDQ(ld, k)
	DECQ(rows)
	JMP(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// genAxpys emits axpysAVX512 and axpysF16AVX512: o += sum_r p[r] * row r,
// accumulated in the order of r with the operations of axpyAVX512 /
// axpyF16AVX512 (bit-identical to per-row calls), but holding up to 8
// vectors of o (a head of 128) in registers across the rows, so each row
// is read once. Attention uses them for the
// probability-weighted sum of a head's values.
func genAxpys(f16 bool) {
	name, sig := "axpysAVX512", "func(o *float32, p *float32, v *float32, ld int, n16 int, rows int)"
	if f16 {
		name, sig = "axpysF16AVX512", "func(o *float32, p *float32, v *uint16, ld int, n16 int, rows int)"
	}
	text(name, NOSPLIT, sig)
	Doc(name + " adds p[r] * row r (rows ld bytes apart) to o[:n16] for r < rows, in order.")
	o := Load(Param("o"), GP64())
	p := Load(Param("p"), GP64())
	v := Load(Param("v"), GP64())
	ld := Load(Param("ld"), GP64())
	n := Load(Param("n16"), GP64())
	rows := Load(Param("rows"), GP64())
	pp, vp, r := GP64(), GP64(), GP64()
	esize := 4
	if f16 {
		esize = 2
	}
	// chunk updates w vectors of o starting at o (and at v within rows).
	chunk := func(w int, lbl, next string) {
		Label(lbl)
		CMPQ(n, U8(16*w))
		JL(LabelRef(next))
		for i := 0; i < w; i++ {
			VMOVUPS(Mem{Base: o, Disp: 64 * i}, zr[i])
		}
		MOVQ(p, pp)
		MOVQ(v, vp)
		MOVQ(rows, r)
		Label(lbl + "row")
		TESTQ(r, r)
		JZ(LabelRef(lbl + "store"))
		VBROADCASTSS(Mem{Base: pp}, Z8)
		for i := 0; i < w; i++ {
			m := Mem{Base: vp, Disp: 16 * esize * i}
			if f16 {
				VCVTPH2PS(m, zr[16+i])
				VFMADD231PS(zr[16+i], Z8, zr[i])
			} else {
				VFMADD231PS(m, Z8, zr[i])
			}
		}
		ADDQ(U8(4), pp)
		ADDQ(ld, vp)
		DECQ(r)
		JMP(LabelRef(lbl + "row"))
		Label(lbl + "store")
		for i := 0; i < w; i++ {
			VMOVUPS(zr[i], Mem{Base: o, Disp: 64 * i})
		}
		ADDQ(U32(64*w), o)
		ADDQ(U32(16*esize*w), v)
		SUBQ(U8(16*w), n)
		JMP(LabelRef(lbl))
	}
	chunk(8, "c8", "c4")
	chunk(4, "c4", "c1")
	chunk(1, "c1", "done")
	Label("done")
	VZEROUPPER()
	RET()
}
