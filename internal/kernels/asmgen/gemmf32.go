//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The f32 kernels of the AVX2 routes in k order: every output is one chain
// of FMAs over the columns in order 0..k-1, starting from the value in y
// (the bias or zero, or the chain so far when the columns come in blocks).
// The packed GEMM (gemmF32AVX2_<mr>x16: outer products of 16 weight rows
// packed k-major by packF32x16AVX2 and mr broadcast inputs) and the
// matrix-vector stream (rowsKF32AVX2_<g>: 8g weight rows read row-major and
// transposed 8×8 in registers) do the same float operations per output, so
// a prefill row equals the decode product bit for bit.

// gemmF32MR is the most input rows of a packed GEMM tile (6×16: 12
// accumulators, 2 weight vectors and a broadcast in 16 registers).
const gemmF32MR = 6

// genGEMMF32 emits gemmF32AVX2_<mr>x16(x, ldx, w, k, y, ldy, pf): for i < mr,
// j < 16, c < k in order: y[i*ldy+j] = fma(w[16c+j], x[i*ldx+c], y[i*ldy+j]),
// w being 16 weight rows packed k-major (packF32x16AVX2). It prefetches
// 16k bytes from pf into L2 (the caller's next weights, which packing
// would otherwise wait for).
func genGEMMF32(mr int) {
	name := fmt.Sprintf("gemmF32AVX2_%dx16", mr)
	text(name, NOSPLIT, "func(x *float32, ldx int, w *float32, k int, y *float32, ldy int, pf *byte)")
	Doc(name + " accumulates an outer-product tile over k-major packed weights in k order (see genGEMMF32).")
	xp := make([]Register, mr)
	xp[0] = Load(Param("x"), GP64())
	ldx := Load(Param("ldx"), GP64())
	SHLQ(U8(2), ldx)
	for i := 1; i < mr; i++ {
		xp[i] = GP64()
		LEAQ(Mem{Base: xp[i-1], Index: ldx, Scale: 1}, xp[i])
	}
	acc := func(i, j int) VecPhysical { return yr[2*i+j] }
	// The accumulators' rows of y, loaded again to store them (registers
	// are short during the loop).
	yrows := func() []Register {
		y := Load(Param("y"), GP64())
		ldy := Load(Param("ldy"), GP64())
		SHLQ(U8(2), ldy)
		r := make([]Register, mr)
		r[0] = y
		for i := 1; i < mr; i++ {
			r[i] = GP64()
			LEAQ(Mem{Base: r[i-1], Index: ldy, Scale: 1}, r[i])
		}
		return r
	}
	yrow := yrows()
	for i := 0; i < mr; i++ {
		for j := 0; j < 2; j++ {
			VMOVUPS(Mem{Base: yrow[i], Disp: 32 * j}, acc(i, j))
		}
	}
	w := Load(Param("w"), GP64())
	k := Load(Param("k"), GP64())
	pf := Load(Param("pf"), GP64())
	w0, w1 := Y12, Y13
	bs := []VecPhysical{Y14, Y15}
	off := GP64()
	XORQ(off, off)
	end := k
	SHLQ(U8(2), end)
	step := func(u int) {
		VMOVUPS(Mem{Base: w, Disp: 64 * u}, w0)
		VMOVUPS(Mem{Base: w, Disp: 64*u + 32}, w1)
		for i := 0; i < mr; i++ {
			b := bs[i%2]
			VBROADCASTSS(Mem{Base: xp[i], Index: off, Scale: 1, Disp: 4 * u}, b)
			VFMADD231PS(w0, b, acc(i, 0))
			VFMADD231PS(w1, b, acc(i, 1))
		}
	}
	const unroll = 4
	end4 := GP64()
	LEAQ(Mem{Base: end, Disp: -4 * unroll}, end4)
	Label("loop4")
	CMPQ(off, end4)
	JG(LabelRef("loop1"))
	for u := 0; u < unroll; u++ {
		step(u)
		if u == 0 {
			PREFETCHT1(Mem{Base: pf, Index: off, Scale: 4})
		}
	}
	ADDQ(U8(4*unroll), off)
	ADDQ(U32(64*unroll), w)
	JMP(LabelRef("loop4"))
	Label("loop1")
	CMPQ(off, end)
	JGE(LabelRef("store"))
	step(0)
	ADDQ(U8(4), off)
	ADDQ(U8(64), w)
	JMP(LabelRef("loop1"))
	Label("store")
	yrow = yrows()
	for i := 0; i < mr; i++ {
		for j := 0; j < 2; j++ {
			VMOVUPS(acc(i, j), Mem{Base: yrow[i], Disp: 32 * j})
		}
	}
	VZEROUPPER()
	RET()
}

// rows8 addresses 8 rows ld bytes apart: rows 0..3 from b0, 4..7 from b4
// (b0+4ld), with ld and ld3 (3ld) as index.
type rows8 struct{ b0, b4, ld, ld3 Register }

func (r rows8) at(i, disp int) Mem {
	b := r.b0
	if i >= 4 {
		b = r.b4
	}
	switch i % 4 {
	case 0:
		return Mem{Base: b, Disp: disp}
	case 1:
		return Mem{Base: b, Index: r.ld, Scale: 1, Disp: disp}
	case 2:
		return Mem{Base: b, Index: r.ld, Scale: 2, Disp: disp}
	}
	return Mem{Base: b, Index: r.ld3, Scale: 1, Disp: disp}
}

// transpose4 loads a 4×4 block of each 128-bit half (rows i and i+4 of an
// 8-row group, 4 floats at disp) and transposes it in the lanes: c[q]
// holds column q of rows 0..3 in its low half and of rows 4..7 in its high
// half. t are 4 scratch registers.
func transpose4(rw rows8, disp int, c, t []VecPhysical) {
	for r := 0; r < 4; r++ {
		VMOVUPS(rw.at(r, disp), c[r].AsX())
		VINSERTF128(U8(1), rw.at(r+4, disp), c[r], c[r])
	}
	VUNPCKLPS(c[1], c[0], t[0]) // r0c0 r1c0 r0c1 r1c1
	VUNPCKHPS(c[1], c[0], t[1]) // r0c2 r1c2 r0c3 r1c3
	VUNPCKLPS(c[3], c[2], t[2])
	VUNPCKHPS(c[3], c[2], t[3])
	VSHUFPS(U8(0x44), t[2], t[0], c[0]) // column 0
	VSHUFPS(U8(0xee), t[2], t[0], c[1]) // column 1
	VSHUFPS(U8(0x44), t[3], t[1], c[2])
	VSHUFPS(U8(0xee), t[3], t[1], c[3])
}

// strides loads the stride parameter ld (bytes) and returns it and 3ld.
func strides(ld Register) (Register, Register) {
	ld3 := GP64()
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, ld3)
	return ld, ld3
}

// genPackF32x16 emits packF32x16AVX2(dst, src, lds, k): dst[16c+r] =
// src[r*lds+c] for r < 16, c < k (k a multiple of 8; lds in floats): 16
// float32 weight rows packed k-major for gemmF32AVX2.
func genPackF32x16() {
	text("packF32x16AVX2", NOSPLIT, "func(dst *float32, src *float32, lds int, k int)")
	Doc("packF32x16AVX2 packs 16 float32 rows k-major (see genPackF32x16).")
	d := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	l := Load(Param("lds"), GP64())
	SHLQ(U8(2), l)
	ld, ld3 := strides(l)
	var g [2]rows8
	for h := range g {
		g[h] = rows8{b0: GP64(), b4: GP64(), ld: ld, ld3: ld3}
	}
	MOVQ(src, g[0].b0)
	LEAQ(Mem{Base: g[0].b0, Index: ld, Scale: 4}, g[0].b4)
	LEAQ(Mem{Base: g[0].b4, Index: ld, Scale: 4}, g[1].b0)
	LEAQ(Mem{Base: g[1].b0, Index: ld, Scale: 4}, g[1].b4)
	c, t := yr[0:4], yr[4:8]
	k := Load(Param("k"), GP64())
	// body packs n8 chunks of 8 columns: per half of 8 rows (16 rows a page
	// apart share a set of the L1 cache, more than its ways), each row's
	// line of 16 columns used up before the next half's.
	body := func(n8 int) {
		for half := 0; half < 2; half++ { // rows 0..7, 8..15
			for ch := 0; ch < n8; ch++ {
				for q := 0; q < 2; q++ { // columns 0..3, 4..7
					transpose4(g[half], 32*ch+16*q, c, t)
					for j := 0; j < 4; j++ {
						VMOVUPS(c[j], Mem{Base: d, Disp: 64*(8*ch+4*q+j) + 32*half})
					}
				}
			}
		}
		for h := range g {
			ADDQ(U8(32*n8), g[h].b0)
			ADDQ(U8(32*n8), g[h].b4)
		}
		ADDQ(U32(512*n8), d)
		SUBQ(U8(8*n8), k)
	}
	Label("loop")
	CMPQ(k, U8(16))
	JL(LabelRef("tail"))
	body(2)
	JMP(LabelRef("loop"))
	Label("tail")
	CMPQ(k, U8(8))
	JL(LabelRef("done"))
	body(1)
	JMP(LabelRef("tail"))
	Label("done")
	VZEROUPPER()
	RET()
}

// genRowsKF32 emits rowsKF32AVX2_<g>(x, w, ldw, k, y, n): for r < n (a
// multiple of 8g), c < k (a multiple of 8) in order: y[r] = fma(w_r[c],
// x[c], y[r]), w_r starting ldw bytes after w_{r-1}: the decode product in
// the k order of gemmF32AVX2, g groups of 8 rows at a time (g chains of
// FMAs in flight), each 8×8 block of a group transposed in registers.
func genRowsKF32(g int) {
	name := fmt.Sprintf("rowsKF32AVX2_%d", g)
	text(name, NOSPLIT, "func(x *float32, w *byte, ldw int, k int, y *float32, n int)")
	Doc(name + " is the float32 matrix-vector product in k order (see genRowsKF32).")
	x0 := Load(Param("x"), GP64())
	w := Load(Param("w"), GP64())
	ld, ld3 := strides(Load(Param("ldw"), GP64()))
	k := Load(Param("k"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	x, kk, cur := GP64(), GP64(), GP64()
	rw := rows8{b0: GP64(), b4: GP64(), ld: ld, ld3: ld3}
	acc := yr[8 : 8+g]
	c, t := yr[0:4], yr[4:8]
	Label("rows")
	CMPQ(n, U8(0))
	JLE(LabelRef("done"))
	for a := 0; a < g; a++ {
		VMOVUPS(Mem{Base: y, Disp: 32 * a}, acc[a])
	}
	MOVQ(x0, x)
	MOVQ(w, cur)
	MOVQ(k, kk)
	Label("cols")
	CMPQ(kk, U8(0))
	JLE(LabelRef("next"))
	for q := 0; q < 2; q++ {
		for a := 0; a < g; a++ {
			if a == 0 {
				MOVQ(cur, rw.b0)
			} else {
				LEAQ(Mem{Base: rw.b4, Index: ld, Scale: 4}, rw.b0)
			}
			LEAQ(Mem{Base: rw.b0, Index: ld, Scale: 4}, rw.b4)
			transpose4(rw, 16*q, c, t)
			for j := 0; j < 4; j++ {
				VBROADCASTSS(Mem{Base: x, Disp: 4 * (4*q + j)}, t[j])
				VFMADD231PS(c[j], t[j], acc[a])
			}
		}
	}
	ADDQ(U8(32), x)
	ADDQ(U8(32), cur)
	SUBQ(U8(8), kk)
	JMP(LabelRef("cols"))
	Label("next")
	for a := 0; a < g; a++ {
		VMOVUPS(acc[a], Mem{Base: y, Disp: 32 * a})
	}
	ADDQ(U8(32*g), y)
	for range 8 * g {
		ADDQ(ld, w)
	}
	SUBQ(U8(8*g), n)
	JMP(LabelRef("rows"))
	Label("done")
	VZEROUPPER()
	RET()
}

// genGEMMXF32 emits gemmXF32AVX2_<nr>(x, w, ldw, k, b, y, ldy): for j < nr
// weight rows (ldw bytes apart, row-major), i < 16 input rows packed k-major
// in x (packF32x16AVX2), c < k in order: y[i*ldy+j] = fma(w_j[c], x[16c+i],
// ...) starting from b[j]: outer products of 16 packed inputs and nr
// broadcast weights, the weights read in place.
func genGEMMXF32(nr int) {
	name := fmt.Sprintf("gemmXF32AVX2_%d", nr)
	text(name, NOSPLIT, "func(x *float32, w *byte, ldw int, k int, b *float32, y *float32, ldy int)")
	Doc(name + " accumulates an outer-product tile of packed inputs and weight rows in k order (see genGEMMXF32).")
	acc := func(j, v int) VecPhysical { return yr[2*j+v] }
	bp := Load(Param("b"), GP64())
	for j := 0; j < nr; j++ {
		VBROADCASTSS(Mem{Base: bp, Disp: 4 * j}, acc(j, 0))
		VMOVAPS(acc(j, 0), acc(j, 1))
	}
	x := Load(Param("x"), GP64())
	ld, ld3 := strides(Load(Param("ldw"), GP64()))
	rw := rows8{b0: Load(Param("w"), GP64()), b4: GP64(), ld: ld, ld3: ld3}
	LEAQ(Mem{Base: rw.b0, Index: ld, Scale: 4}, rw.b4)
	k := Load(Param("k"), GP64())
	x0, x1 := Y12, Y13
	bs := []VecPhysical{Y14, Y15}
	step := func(u int) {
		VMOVUPS(Mem{Base: x, Disp: 64 * u}, x0)
		VMOVUPS(Mem{Base: x, Disp: 64*u + 32}, x1)
		for j := 0; j < nr; j++ {
			bb := bs[j%2]
			VBROADCASTSS(rw.at(j, 4*u), bb)
			VFMADD231PS(x0, bb, acc(j, 0))
			VFMADD231PS(x1, bb, acc(j, 1))
		}
	}
	const unroll = 4
	Label("loop4")
	CMPQ(k, U8(unroll))
	JL(LabelRef("loop1"))
	for u := 0; u < unroll; u++ {
		step(u)
	}
	ADDQ(U32(64*unroll), x)
	ADDQ(U8(4*unroll), rw.b0)
	ADDQ(U8(4*unroll), rw.b4)
	SUBQ(U8(unroll), k)
	JMP(LabelRef("loop4"))
	Label("loop1")
	CMPQ(k, U8(0))
	JLE(LabelRef("store"))
	step(0)
	ADDQ(U8(64), x)
	ADDQ(U8(4), rw.b0)
	ADDQ(U8(4), rw.b4)
	DECQ(k)
	JMP(LabelRef("loop1"))
	Label("store")
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	yi := GP64()
	for v := 0; v < 2; v++ {
		for h := 0; h < 2; h++ { // lanes 0..3, 4..7
			for j := 0; j < nr; j++ {
				src := acc(j, v).AsX()
				if h == 1 {
					VEXTRACTF128(U8(1), acc(j, v), X14)
					src = X14
				}
				MOVQ(y, yi)
				for l := 0; l < 4; l++ {
					if l == 0 {
						VMOVSS(src, Mem{Base: yi, Disp: 4 * j})
					} else {
						VEXTRACTPS(U8(l), src, Mem{Base: yi, Disp: 4 * j})
					}
					ADDQ(ldy, yi)
				}
			}
			LEAQ(Mem{Base: y, Index: ldy, Scale: 4}, y)
		}
	}
	VZEROUPPER()
	RET()
}

// genF32K emits the AVX2 f32 kernels in k order.
func genF32K() {
	for mr := 1; mr <= gemmF32MR; mr++ {
		genGEMMF32(mr)
	}
	for nr := 1; nr <= 6; nr++ {
		genGEMMXF32(nr)
	}
	genPackF32x16()
	for _, g := range []int{1, 2, 4} {
		genRowsKF32(g)
	}
}
