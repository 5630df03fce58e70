//go:build asmgen

package main

import "fmt"

// genQTile emits qTile<q>_<t>(xt, w, ng, y0, y1, y2, y3, n): the q8/q4
// product of a group of 4 activation rows (transposed records of
// quantizeXTNEON, one lane per row) with the n weight rows at w
// (contiguous, nb = 4*ng+t blocks each): y_r[j] = activation row r · weight
// row j. It serves every product of 2 or more activation rows: batched
// decode steps and prefill (the Go caller walks groups and panels of
// weight rows).
//
// SDOT by element multiplies vector k of a record (bytes 4k..4k+3 of the 4
// rows) with the weights' 4-byte group k broadcast, so one accumulator
// gathers a whole block's sum for each row in its lanes, starting from zero
// (q8) or from the rows' offsets (q4). The float arithmetic per output is
// that of qstream.go: P_l (a vector whose lanes are the 4 rows) takes the
// blocks b = l mod 4 with the same fused multiply-adds, and the outputs are
// (P0+P1)+(P2+P3). Weight rows go three at a time (each half block of
// activations loaded once for the three), then the last one or two.
func genQTile(a *asm, q string, t int) {
	name := fmt.Sprintf("qTile%s_%d", q, t)
	a.fn(name, "func(xt *byte, w *byte, ng int, y0 *float32, y1 *float32, y2 *float32, y3 *float32, n int)",
		fmt.Sprintf(`%s is the %s product of 4 transposed activation rows with n weight rows of
		4*ng+%d blocks (see qtile.go in neongen).`, name, q, t))
	k := &qtile{a: a, q: q, t: t, xt: 0, sp: [3]R{1, 9, 19}, qp: [3]R{10, 11, 20}, ng: 2, y: [4]R{3, 4, 5, 6}, n: 7, xp: 8, g: 12, rb: 13, nb2: 14}
	a.load("xt", k.xt)
	a.load("w", k.sp[0])
	a.load("ng", k.ng)
	for r, reg := range k.y {
		a.load(fmt.Sprintf("y%d", r), reg)
	}
	a.load("n", k.n)
	nb := R(15)
	a.opf("LSL", "$2, %s, %s", k.ng, nb)
	if t > 0 {
		a.opf("ADD", "$%d, %s, %s", t, nb, nb)
	}
	a.opf("LSL", "$1, %s, %s", nb, k.nb2)
	a.opf("MOVD", "$%d, %s", 2+qBytes(q), k.rb)
	a.opf("MUL", "%s, %s, %s", nb, k.rb, k.rb)
	if q == "Q4" {
		a.splat(31, 0x0f0f0f0f, nb)
	}
	a.label("triple")
	a.opf("CMP", "$3, %s", k.n)
	a.op("BLT", "rest")
	k.rows(3)
	a.opf("SUB", "$3, %s", k.n)
	a.op("B", "triple")
	a.label("rest")
	a.opf("CBZ", "%s, done", k.n)
	a.opf("CMP", "$1, %s", k.n)
	a.op("BEQ", "single")
	k.rows(2)
	a.op("B", "done")
	a.label("single")
	k.rows(1)
	a.label("done")
	a.ret()
}

// qtile holds a qTile kernel's registers: xt the records, sp/qp each weight
// row's scales and quants, y the 4 rows' outputs, xp the record being read,
// g the groups left, rb the bytes of a weight row, nb2 those of its scales.
type qtile struct {
	a                    *asm
	q                    string
	t                    int
	xt, ng, n, xp, g, rb R
	nb2                  R
	sp, qp               [3]R
	y                    [4]R
}

// Vector registers: V0 the block's dx (a lane per row), V1 its offsets,
// V2-V5 half of its quants; per weight row j: lo(j), hi(j) the block's
// weights (q8: bytes 0-15 and 16-31; q4: low and high nibbles), acc(j) the
// block sums, dw(j) the group's weight scales as float32, p(j, l) its
// P_0..P_3; V30 the scales of a block; V31 the q4 nibble mask.
func lo(j int) V    { return V(6 + 2*j) }
func hi(j int) V    { return V(7 + 2*j) }
func acc(j int) V   { return V(12 + j) }
func dwReg(j int) V { return V(15 + j) }
func p(j, l int) V  { return V(18 + 4*j + l) }

func (k *qtile) rows(nr int) {
	a := k.a
	pre := map[int]string{1: "s", 2: "p", 3: "t"}[nr]
	a.opf("MOVD", "%s, %s", k.xt, k.xp)
	for j := 1; j < nr; j++ {
		a.opf("ADD", "%s, %s, %s", k.rb, k.sp[j-1], k.sp[j])
	}
	for j := range nr {
		a.opf("ADD", "%s, %s, %s", k.nb2, k.sp[j], k.qp[j])
		for l := range group {
			a.zero(p(j, l))
		}
	}
	a.opf("MOVD", "%s, %s", k.ng, k.g)
	a.opf("CBZ", "%s, %stail", k.g, pre)
	a.label(pre + "group")
	k.scales(nr, false)
	for l := range group {
		k.block(nr, l)
	}
	a.opf("SUBS", "$1, %s", k.g)
	a.op("BNE", pre+"group")
	a.label(pre + "tail")
	if k.t > 0 {
		k.scales(nr, true)
		for l := range k.t {
			k.block(nr, l)
		}
	}
	for j := range nr {
		p0 := p(j, 0)
		a.fadd(p0, p0, p0+1)
		a.fadd(p0+2, p0+2, p0+3)
		a.fadd(p0, p0, p0+2)
		for r, y := range k.y {
			a.opf("VST1.P", "V%d.S[%d], 4(%s)", p0, r, y)
		}
	}
	a.opf("MOVD", "%s, %s", k.qp[nr-1], k.sp[0]) // the next row starts where the quants end
}

// scales loads each row's 4 weight scales of the group as float32.
func (k *qtile) scales(nr int, tail bool) {
	a := k.a
	for j := range nr {
		dw := dwReg(j)
		if tail {
			a.opf("FMOVD", "(%s), %s", k.sp[j], dw.F())
		} else {
			a.opf("FMOVD.P", "8(%s), %s", k.sp[j], dw.F())
		}
		a.fcvtl(dw, dw)
	}
}

// block multiplies block l of the group with each weight row, in two halves
// of the activations' quants.
func (k *qtile) block(nr, l int) {
	a := k.a
	a.opf("VLD1.P", "32(%s), %s", k.xp, list(0, 2, "B16"))
	a.opf("VLD1.P", "64(%s), %s", k.xp, list(2, 4, "B16"))
	for j := range nr {
		if k.q == "Q8" {
			a.opf("VLD1.P", "32(%s), %s", k.qp[j], list(lo(j), 2, "B16"))
			a.zero(acc(j))
		} else {
			a.opf("VLD1.P", "16(%s), [%s]", k.qp[j], hi(j).B16())
			a.and(lo(j), hi(j), 31)
			a.ushrB(hi(j), hi(j), 4)
			a.mov(acc(j), 1)
		}
		for i := range 4 {
			a.sdotElem(acc(j), V(2+i), lo(j), i)
		}
	}
	a.opf("VLD1.P", "64(%s), %s", k.xp, list(2, 4, "B16"))
	for j := range nr {
		for i := range 4 {
			a.sdotElem(acc(j), V(2+i), hi(j), i)
		}
	}
	for j := range nr {
		a.scvtf(acc(j), acc(j))
		a.fmulElem(30, 0, dwReg(j), l)
		a.fmla(p(j, l), acc(j), 30)
	}
}
