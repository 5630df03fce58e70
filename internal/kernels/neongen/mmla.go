//go:build asmgen

package main

import "fmt"

// The q8/q4 matrix product with I8MM (route neon+i8mm: Graviton 3 and
// later, Apple M2 and later): SMMLA multiplies a 2×8 int8 matrix by the
// transpose of another, adding a 2×2 int32 matrix, so 4 SMMLAs over a
// block give the exact block sums of 2 activation rows × 2 weight rows,
// lanes [x0·w0, x0·w1, x1·w0, x1·w1]. The float arithmetic per output is
// that of qstream.go (the same S_b, scales, fused multiply-adds into P_l by
// block mod 4, and (P0+P1)+(P2+P3)), so the results equal the decode
// product's bit for bit.
//
// SMMLA wants each operand as two rows' 8-byte chunks side by side. The
// activations are quantized so (quantizeXPNEON: per group of 4 rows and
// block, two pair records of mmlaPairBytes: dx of the pair's rows [d0 d0
// d1 d1], their offsets [o0 o0 o1 o1], and 4 vectors [x0 chunk c | x1 chunk
// c]); the weights are packed per panel into the thread's scratch
// (packPair<q>NEON: per block of a pair of rows, their scales as float32
// [w0 w1 w0 w1], then 4 vectors [w0 chunk c | w1 chunk c], q4 nibbles
// widened to bytes), once for all the groups of activation rows.

// mmlaPairBytes is one pair record of activations; mmlaWBytes one block of
// a packed pair of weight rows.
const (
	mmlaPairBytes = 2*vecBytes + 4*vecBytes
	mmlaWBytes    = vecBytes + 4*vecBytes
)

// genQuantizeXP emits quantizeXPNEON(x, nb, rec, r): the nb blocks of x
// quantized (quantize.go) into row r (0-3) of a group's records.
func genQuantizeXP(a *asm) {
	a.fn("quantizeXPNEON", "func(x *float32, nb int, rec *byte, r int)",
		`quantizeXPNEON quantizes nb blocks of 32 values at x to int8 per block (see
		quantize.go in neongen) into row r (0-3) of the nb SMMLA block records at rec (see mmla.go).`)
	x, nb, tp, dp, r, step := R(0), R(1), R(2), R(3), R(4), R(6)
	a.load("x", x)
	a.load("nb", nb)
	a.load("rec", dp)
	a.load("r", r)
	// the pair's record (r/2) and the row's half of each 16 bytes (r%2)
	a.opf("LSR", "$1, %s, R5", r)
	a.opf("MOVD", "$%d, R7", mmlaPairBytes)
	a.op("MUL", "R5, R7, R5")
	a.opf("ADD", "R5, %s, %s", dp, dp)
	a.opf("AND", "$1, %s, %s", r, r)
	a.opf("ADD", "%s<<3, %s, %s", r, dp, dp)
	a.opf("ADD", "$%d, %s, %s", 2*vecBytes, dp, tp)
	a.opf("MOVD", "$%d, %s", vecBytes, step)
	quantConsts(a, 5)
	a.label("block")
	quantBlock(a, x)
	a.zip1s(16, 16, 16) // [dx dx . .]
	a.zip1s(9, 9, 9)
	a.opf("FMOVD", "F16, (%s)", dp)
	a.opf("FMOVD", "F9, %d(%s)", vecBytes, dp)
	for v := range V(2) {
		for k := range 2 {
			a.opf("VST1.P", "V%d.D[%d], (%s)(%s)", v, k, tp, step)
		}
	}
	a.opf("ADD", "$%d, %s, %s", 2*mmlaPairBytes, dp, dp)
	a.opf("ADD", "$%d, %s, %s", 2*mmlaPairBytes-4*vecBytes, tp, tp)
	a.opf("SUBS", "$1, %s", nb)
	a.op("BNE", "block")
	a.ret()
}

// genPackPair emits packPair<q>NEON(w0, w1, nb, dst): weight rows w0 and w1
// (nb blocks each) packed for the SMMLA tiles, mmlaWBytes per block.
func genPackPair(a *asm, q string) {
	name := "packPair" + q + "NEON"
	a.fn(name, "func(w0 *byte, w1 *byte, nb int, dst *byte)",
		fmt.Sprintf(`%s packs two %s weight rows of nb blocks for the SMMLA tiles (see mmla.go in neongen).`, name, q))
	s0, s1, nb, dst, q0, q1 := R(0), R(1), R(2), R(3), R(4), R(5)
	a.load("w0", s0)
	a.load("w1", s1)
	a.load("nb", nb)
	a.load("dst", dst)
	a.opf("ADD", "%s<<1, %s, %s", nb, s0, q0)
	a.opf("ADD", "%s<<1, %s, %s", nb, s1, q1)
	if q == "Q4" {
		a.splat(31, 0x0f0f0f0f, 6)
	}
	a.label("block")
	a.opf("VLD1.P", "2(%s), V4.H[0]", s0)
	a.opf("VLD1.P", "2(%s), V4.H[1]", s1)
	a.fcvtl(4, 4)
	a.zip1d(4, 4, 4) // [w0 w1 w0 w1]
	if q == "Q8" {
		a.opf("VLD1.P", "32(%s), %s", q0, list(0, 2, "B16"))
		a.opf("VLD1.P", "32(%s), %s", q1, list(2, 2, "B16"))
	} else {
		a.opf("VLD1.P", "16(%s), [V1.B16]", q0)
		a.opf("VLD1.P", "16(%s), [V3.B16]", q1)
		a.and(0, 1, 31)
		a.ushrB(1, 1, 4)
		a.and(2, 3, 31)
		a.ushrB(3, 3, 4)
	}
	a.zip1d(5, 0, 2)
	a.zip2d(6, 0, 2)
	a.zip1d(7, 1, 3)
	a.zip2d(8, 1, 3)
	a.opf("VST1.P", "%s, 64(%s)", list(4, 4, "B16"), dst)
	a.opf("VST1.P", "[V8.B16], 16(%s)", dst)
	a.opf("SUBS", "$1, %s", nb)
	a.op("BNE", "block")
	a.ret()
}

// genMMLA emits qMMLA<q>_<t>(xr, wp, ng, y0, y1, y2, y3, np): the product
// of a group of 4 activation rows (records of quantizeXPNEON) with np
// packed pairs of weight rows (nb = 4*ng+t blocks): y_r[j] = row r · weight
// row j for j < 2·np.
func genMMLA(a *asm, q string, t int) {
	name := fmt.Sprintf("qMMLA%s_%d", q, t)
	a.fn(name, "func(xr *byte, wp *byte, ng int, y0 *float32, y1 *float32, y2 *float32, y3 *float32, np int)",
		fmt.Sprintf(`%s is the %s product of 4 activation rows with np packed pairs of weight rows of
		4*ng+%d blocks, with SMMLA (see mmla.go in neongen).`, name, q, t))
	xr, wp, ng, np, xp, g := R(0), R(1), R(2), R(7), R(8), R(9)
	y := []R{3, 4, 5, 6}
	a.load("xr", xr)
	a.load("wp", wp)
	a.load("ng", ng)
	for r, reg := range y {
		a.load(fmt.Sprintf("y%d", r), reg)
	}
	a.load("np", np)
	a.opf("CBZ", "%s, done", np)
	// V0-V11 the block's activations (pair p: dx V6p, offsets V6p+1, chunks
	// V6p+2..V6p+5), V12 the weight scales, V13-V16 the weight chunks,
	// V17-V18 the pairs' sums, V19 scratch, V20+4p+l P_l of pair p.
	block := func(l int) {
		a.opf("VLD1.P", "64(%s), %s", xp, list(0, 4, "B16"))
		a.opf("VLD1.P", "64(%s), %s", xp, list(4, 4, "B16"))
		a.opf("VLD1.P", "64(%s), %s", xp, list(8, 4, "B16"))
		a.opf("VLD1.P", "64(%s), %s", wp, list(12, 4, "B16"))
		a.opf("VLD1.P", "16(%s), [V16.B16]", wp)
		for p := range V(2) {
			s := 17 + p
			if q == "Q8" {
				a.zero(s)
			} else {
				a.mov(s, 6*p+1)
			}
			for c := range V(4) {
				a.smmla(s, 6*p+2+c, 13+c)
			}
		}
		for p := range V(2) {
			s := 17 + p
			a.scvtf(s, s)
			a.fmul(19, 6*p, 12)
			a.fmla(V(20+4*int(p)+l), s, 19)
		}
	}
	a.label("pair")
	a.opf("MOVD", "%s, %s", xr, xp)
	for i := range V(8) {
		a.zero(20 + i)
	}
	a.opf("MOVD", "%s, %s", ng, g)
	a.opf("CBZ", "%s, tail", g)
	a.label("group")
	for l := range group {
		block(l)
	}
	a.opf("SUBS", "$1, %s", g)
	a.op("BNE", "group")
	a.label("tail")
	for l := range t {
		block(l)
	}
	for p := range 2 {
		p0 := V(20 + 4*p)
		a.fadd(p0, p0, p0+1)
		a.fadd(p0+2, p0+2, p0+3)
		a.fadd(p0, p0, p0+2)
		a.opf("VST1.P", "V%d.D[0], 8(%s)", p0, y[2*p])
		a.opf("VST1.P", "V%d.D[1], 8(%s)", p0, y[2*p+1])
	}
	a.opf("SUBS", "$1, %s", np)
	a.op("BNE", "pair")
	a.label("done")
	a.ret()
}

// genExpandQ4 emits expandQ4NEON(q, nb, dst): the nb blocks of q4 quants
// at q (16 bytes a block) as q8 quants at dst (32 bytes a block: the low
// nibbles, then the high ones, each minus 8). The dotprod route's prefill
// multiplies panels of q4 weights expanded so with the q8 tiles, once for
// all the groups of activation rows: the block sums are the same integers.
func genExpandQ4(a *asm) {
	a.fn("expandQ4NEON", "func(q *byte, nb int, dst *byte)",
		"expandQ4NEON widens nb blocks of q4 quants to q8 quants (see genExpandQ4 in neongen).")
	q, nb, dst := R(0), R(1), R(2)
	a.load("q", q)
	a.load("nb", nb)
	a.load("dst", dst)
	a.splat(30, 0x0f0f0f0f, 3)
	a.splat(31, 0x08080808, 3)
	a.label("block")
	a.opf("VLD1.P", "16(%s), [V2.B16]", q)
	a.and(0, 2, 30)
	a.ushrB(1, 2, 4)
	a.op("VSUB", "V31.B16, V0.B16, V0.B16")
	a.op("VSUB", "V31.B16, V1.B16, V1.B16")
	a.opf("VST1.P", "%s, 32(%s)", list(0, 2, "B16"), dst)
	a.opf("SUBS", "$1, %s", nb)
	a.op("BNE", "block")
	a.ret()
}

// genExpandQ4Rows emits expandQ4RowsNEON(w, nb, dst, n): n contiguous q4
// weight rows of nb >= 8 blocks at w (their 2*nb bytes of f16 scales, then
// 16 bytes of quants a block) as q8 rows at dst (the same scales, then the
// quants widened as by expandQ4NEON), in one call for a whole panel. The
// scales go in 16-byte pieces, the last one ending at the quants
// (overlapping the one before: hence nb >= 8).
func genExpandQ4Rows(a *asm) {
	a.fn("expandQ4RowsNEON", "func(w *byte, nb int, dst *byte, n int)",
		"expandQ4RowsNEON widens n q4 weight rows of nb >= 8 blocks to q8 rows (see genExpandQ4Rows in neongen).")
	src, nb, dst, n := R(0), R(1), R(2), R(4)
	sb, left, s, d := R(5), R(6), R(7), R(8)
	a.load("w", src)
	a.load("nb", nb)
	a.load("dst", dst)
	a.load("n", n)
	a.splat(30, 0x0f0f0f0f, 3)
	a.splat(31, 0x08080808, 3)
	a.opf("LSL", "$1, %s, %s", nb, sb)
	a.label("row")
	a.opf("MOVD", "%s, %s", src, s)
	a.opf("MOVD", "%s, %s", dst, d)
	a.opf("MOVD", "%s, %s", sb, left)
	a.label("scales")
	a.opf("VLD1.P", "16(%s), [V2.B16]", s)
	a.opf("VST1.P", "[V2.B16], 16(%s)", d)
	a.opf("SUB", "$16, %s", left)
	a.opf("CMP", "$16, %s", left)
	a.op("BGT", "scales")
	a.opf("ADD", "%s, %s, %s", sb, src, src)
	a.opf("ADD", "%s, %s, %s", sb, dst, dst)
	a.opf("SUB", "$16, %s, %s", src, s)
	a.opf("SUB", "$16, %s, %s", dst, d)
	a.opf("VLD1", "(%s), [V2.B16]", s)
	a.opf("VST1", "[V2.B16], (%s)", d)
	a.opf("MOVD", "%s, %s", nb, left)
	a.label("block")
	a.opf("VLD1.P", "16(%s), [V2.B16]", src)
	a.and(0, 2, 30)
	a.ushrB(1, 2, 4)
	a.op("VSUB", "V31.B16, V0.B16, V0.B16")
	a.op("VSUB", "V31.B16, V1.B16, V1.B16")
	a.opf("VST1.P", "%s, 32(%s)", list(0, 2, "B16"), dst)
	a.opf("SUBS", "$1, %s", left)
	a.op("BNE", "block")
	a.opf("SUBS", "$1, %s", n)
	a.op("BNE", "row")
	a.ret()
}
