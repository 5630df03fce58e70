//go:build asmgen

package main

// Activations are quantized per block of 32 values to int8 with one float32
// scale, as on amd64: dx = max|x|/127 and q = x·(127/max|x|) rounded to
// nearest even (FCVTNS), so |q| <= 127 and each value is off by at most
// dx/2. A block of zeros gets dx = 0 and q = 0 (0·Inf is NaN, which FCVTNS
// makes 0); a block holding NaN gets dx = NaN, one holding ±Inf dx = +Inf,
// and q = 0, so that products with it are NaN, as in pure Go.
//
// Each block also gets its offset, -8 times the sum of its quants: the q4
// kernels multiply the stored nibbles (q+8) and add it.
//
// Three layouts. quantizeXNEON writes the plain one for the q8
// matrix-vector kernel (qstream.go): quants in order, scales and offsets in
// arrays of their own; quantizeXQ4NEON the same with the quants in the
// order of the q4 kernel. quantizeXTNEON writes one row of a group of 4 rows, transposed
// for the matrix-product kernels (qtile.go): per block a record of
// recBytes: the 4 rows' dx (one lane each), their offsets, then 8 vectors
// where vector k holds bytes 4k..4k+3 of row r in lane r.

// quantBlock quantizes the block of 32 float32 at xp (which moves on by
// 128 bytes): quants in V0 (values 0-15) and V1 (16-31), dx in lane 0 of
// V16, the offset in lane 0 of V9. It expects 127.0 in lane 0 of V30, the
// bytes 0x01 in V29 and zero in V31.
func quantBlock(a *asm, xp R) {
	a.opf("VLD1.P", "64(%s), %s", xp, list(0, 4, "S4"))
	a.opf("VLD1.P", "64(%s), %s", xp, list(4, 4, "S4"))
	for i := range V(8) {
		a.fabs(8+i, i)
	}
	a.fmax(8, 8, 9)
	a.fmax(10, 10, 11)
	a.fmax(12, 12, 13)
	a.fmax(14, 14, 15)
	a.fmax(8, 8, 10)
	a.fmax(12, 12, 14)
	a.fmax(8, 8, 12)
	a.fmaxv(8, 8)                 // FMAX and FMAXV propagate NaN
	a.op("FDIVS", "F30, F8, F16") // dx = max/127
	a.op("FDIVS", "F8, F30, F17") // inv = 127/max
	for i := range V(8) {
		a.fmulElem(i, i, 17, 0)
	}
	for i := range V(8) {
		a.fcvtns(i, i)
	}
	for i := V(0); i < 8; i += 2 {
		a.sqxtn(i, i)
		a.sqxtn2(i, i+1)
	}
	a.sqxtnb(0, 0)
	a.sqxtnb2(0, 2)
	a.sqxtnb(1, 4)
	a.sqxtnb2(1, 6)
	a.note("offset: -8 times the sum of the quants")
	a.zero(9)
	a.sdot(9, 0, 29)
	a.sdot(9, 1, 29)
	a.addv(9, 9)
	a.shlS(9, 9, 3)
	a.sub(9, 31, 9)
}

// quantConsts loads the constants quantBlock expects, using r.
func quantConsts(a *asm, r R) {
	a.opf("MOVW", "$0x42fe0000, %s", r) // 127.0
	a.opf("FMOVS", "%s, F30", r)
	a.splat(29, 0x01010101, r)
	a.zero(31)
}

func genQuantize(a *asm) {
	a.fn("quantizeXNEON", "func(x *float32, nb int, q *byte, dx *float32, off *int32)",
		`quantizeXNEON quantizes nb blocks of 32 values at x to int8 per block (see
		quantize.go in neongen): quants at q, scales at dx, offsets at off.`)
	x, nb, q, dx, off := R(0), R(1), R(2), R(3), R(4)
	a.load("x", x)
	a.load("nb", nb)
	a.load("q", q)
	a.load("dx", dx)
	a.load("off", off)
	quantConsts(a, 5)
	a.label("block")
	quantBlock(a, x)
	a.opf("VST1.P", "%s, 32(%s)", list(0, 2, "B16"), q)
	a.opf("FMOVS.P", "F16, 4(%s)", dx)
	a.opf("FMOVS.P", "F9, 4(%s)", off)
	a.opf("SUBS", "$1, %s", nb)
	a.op("BNE", "block")
	a.ret()

	a.fn("quantizeXQ4NEON", "func(x *float32, nb int, q *byte, dx *float32, off *int32)",
		`quantizeXQ4NEON is quantizeXNEON with the quants in the order of the q4 matrix-vector
		kernels: per group of 4 blocks, their values 0-15, then their values 16-31.`)
	a.load("x", x)
	a.load("nb", nb)
	a.load("q", q)
	a.load("dx", dx)
	a.load("off", off)
	quantConsts(a, 5)
	a.opf("MOVD", "ZR, R6")
	a.label("block")
	quantBlock(a, x)
	a.opf("FMOVQ", "F1, %d(%s)", 4*vecBytes, q)
	a.opf("FMOVQ.P", "F0, %d(%s)", vecBytes, q)
	a.opf("FMOVS.P", "F16, 4(%s)", dx)
	a.opf("FMOVS.P", "F9, 4(%s)", off)
	a.op("ADD", "$1, R6")
	a.op("TST", "$3, R6")
	a.op("BNE", "next")
	a.opf("ADD", "$%d, %s", 4*vecBytes, q) // past the group's second halves
	a.label("next")
	a.opf("SUBS", "$1, %s", nb)
	a.op("BNE", "block")
	a.ret()

	a.fn("quantizeXTNEON", "func(x *float32, nb int, rec *byte, r int)",
		`quantizeXTNEON quantizes nb blocks of 32 values at x to int8 per block (see
		quantize.go in neongen) into lane r (0-3) of the nb transposed block records at rec.`)
	tp, sixteen := R(2), R(6)
	a.load("x", x)
	a.load("nb", nb)
	a.load("rec", tp)
	a.load("r", 3)
	a.opf("LSL", "$2, R3, R3")
	a.opf("ADD", "R3, %s, %s", tp, tp)
	a.opf("ADD", "$%d, %s, %s", 2*vecBytes, tp, tp) // lane r of the record's first quants vector
	a.opf("MOVD", "$%d, %s", vecBytes, sixteen)
	quantConsts(a, 5)
	a.label("block")
	quantBlock(a, x)
	a.opf("FMOVS", "F16, -%d(%s)", 2*vecBytes, tp)
	a.opf("FMOVS", "F9, -%d(%s)", vecBytes, tp)
	for v := range V(2) {
		for k := range 4 {
			a.opf("VST1.P", "V%d.S[%d], (%s)(%s)", v, k, tp, sixteen)
		}
	}
	a.opf("ADD", "$%d, %s, %s", 2*vecBytes, tp, tp) // past the next record's scales and offsets
	a.opf("SUBS", "$1, %s", nb)
	a.op("BNE", "block")
	a.ret()
}
