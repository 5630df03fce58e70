//go:build asmgen

package main

import "fmt"

// The q8/q4 products, on activations quantized per block (quantize.go),
// compute for each output (activation row x, weight row w)
//
//	S_b = sum over block b of wq*xq                exact, in int32
//	P_l = fma(float(S_b), fcvt(dw_b)*dx_b, P_l)    for b = l, l+4, l+8, ... in order
//	y   = (P_0 + P_1) + (P_2 + P_3)
//
// with wq the weight quants (q4: the stored nibble q+8, and S_b gets the
// block's offset -8*sum(xq) added), dw_b the weight's binary16 scale and
// dx_b the activation's. Every kernel, whatever its number of rows, does
// these float operations on these values, so a row's result does not
// depend on the rows computed with it: prefill rows equal the decode
// product and batched rows equal rows alone, bit for bit. Integer sums are
// exact however the SDOTs are arranged.
//
// The matrix-vector kernels here (qStream<q>_<t>) hold P in the 4 lanes of
// one vector (lane l = P_l): the 4-lane SDOT sums of 4 blocks are reduced
// with three ADDPs into one vector of 4 block sums. The SDOT accumulators
// are never cleared: they hold running sums, and the block sums are the
// difference of two reductions (exact in wrapping int32 arithmetic), which
// saves a clear per block. The row's nb blocks are ng groups of 4 and a
// tail of t (the variant's suffix; rows of a call all have the same nb, so
// the Go caller picks the variant).

// qTailMask is the lane mask of a tail of t blocks (lanes < t set), at
// offset 16t: the scales past the row's last block are whatever bytes
// follow and must not reach the sum.
const qTailMask = "qTailMask"

func qTailMaskTable(a *asm) {
	var w []uint32
	for t := range group {
		for l := range group {
			if l < t {
				w = append(w, 0xffffffff)
			} else {
				w = append(w, 0)
			}
		}
	}
	a.table(qTailMask, w)
}

// genQStream emits qStream<q>_<t>(xq, dx, off, w, ng, y, n): for the n
// weight rows at w (contiguous, nb = 4*ng+t blocks each), y[r] = row r ·
// activations (plain layout of quantizeXNEON: quants xq, scales dx and
// offsets off, both padded with zeros to whole groups of 4).
func genQStream(a *asm, q string, t int) {
	name := fmt.Sprintf("qStream%s_%d", q, t)
	a.fn(name, "func(xq *byte, dx *float32, off *int32, w *byte, ng int, y *float32, n int)",
		fmt.Sprintf(`%s is the %s matrix-vector product of n rows of %d blocks per 4 plus %d
		(see qstream.go in neongen).`, name, q, group, t))
	xq, dx, off, sp, ng, y, n := R(0), R(1), R(2), R(3), R(4), R(5), R(6)
	qp, xp, dp, op, g, nb2, tmp := R(7), R(8), R(9), R(10), R(11), R(12), R(13)
	for _, p := range []struct {
		n string
		r R
	}{{"xq", xq}, {"dx", dx}, {"off", off}, {"w", sp}, {"ng", ng}, {"y", y}, {"n", n}} {
		a.load(p.n, p.r)
	}
	a.opf("CBZ", "%s, done", n)
	a.opf("LSL", "$3, %s, %s", ng, nb2) // 2 bytes of scale per block
	if t > 0 {
		a.opf("ADD", "$%d, %s, %s", 2*t, nb2, nb2)
		a.opf("MOVD", "$%s<>+%d(SB), %s", qTailMask, 16*t, tmp)
		a.opf("VLD1", "(%s), [V21.B16]", tmp)
	}
	sacc := vrange(8, 4)
	tp, tn, sum, dw, dxv, sc, facc := V(12), V(13), V(16), V(17), V(18), V(19), V(20)
	for _, v := range append(sacc, tp) {
		a.zero(v)
	}
	if q == "Q4" {
		a.splat(28, 0x0f0f0f0f, tmp)
	}
	a.label("row")
	a.opf("MOVD", "%s, %s", xq, xp)
	a.opf("MOVD", "%s, %s", dx, dp)
	if q == "Q4" {
		a.opf("MOVD", "%s, %s", off, op)
	}
	a.opf("ADD", "%s, %s, %s", nb2, sp, qp)
	a.opf("MOVD", "%s, %s", ng, g)
	a.zero(facc)
	a.opf("CBZ", "%s, tail", g)

	// blocks loads and multiplies blocks [0, cnt) of a group into sacc.
	blocks := func(cnt int) {
		if q == "Q8" {
			for b := 0; b < cnt; b += 2 {
				if b+1 < cnt {
					a.opf("VLD1.P", "64(%s), %s", qp, list(4, 4, "B16"))
					a.opf("VLD1.P", "64(%s), %s", xp, list(0, 4, "B16"))
				} else {
					a.opf("VLD1.P", "32(%s), %s", qp, list(4, 2, "B16"))
					a.opf("VLD1.P", "32(%s), %s", xp, list(0, 2, "B16"))
				}
				for i := 0; i < 2 && b+i < cnt; i++ {
					a.sdot(sacc[b+i], V(4+2*i), V(2*i))
					a.sdot(sacc[b+i], V(5+2*i), V(2*i+1))
				}
			}
			return
		}
		if cnt == group {
			a.opf("VLD1.P", "64(%s), %s", qp, list(4, 4, "B16"))
		} else {
			a.opf("VLD1.P", "%d(%s), %s", 16*cnt, qp, list(4, cnt, "B16"))
		}
		for b := 0; b < cnt; b += 2 {
			nx := min(2, cnt-b)
			a.opf("VLD1.P", "%d(%s), %s", 32*nx, xp, list(0, 2*nx, "B16"))
			for i := range nx {
				wv := V(4 + b + i)
				a.and(22, wv, 28)  // low nibbles: values 0-15 of the block
				a.ushrB(wv, wv, 4) // high nibbles: values 16-31
				a.sdot(sacc[b+i], 22, V(2*i))
				a.sdot(sacc[b+i], wv, V(2*i+1))
			}
		}
	}
	// float adds the group's block sums to facc; tail masks the scales.
	float := func(tail bool) {
		a.addp(14, sacc[0], sacc[1])
		a.addp(15, sacc[2], sacc[3])
		a.addp(tn, 14, 15)
		a.sub(sum, tn, tp)
		a.mov(tp, tn)
		if q == "Q4" {
			if tail {
				a.opf("VLD1", "(%s), [V23.S4]", op)
			} else {
				a.opf("VLD1.P", "16(%s), [V23.S4]", op)
			}
			a.add(sum, sum, 23)
		}
		a.scvtf(sum, sum)
		if tail {
			a.opf("FMOVD", "(%s), %s", sp, dw.F())
			a.opf("VLD1", "(%s), [V%d.S4]", dp, dxv)
		} else {
			a.opf("FMOVD.P", "8(%s), %s", sp, dw.F())
			a.opf("VLD1.P", "16(%s), [V%d.S4]", dp, dxv)
		}
		a.fcvtl(dw, dw)
		if tail {
			a.and(dw, dw, 21)
		}
		a.fmul(sc, dw, dxv)
		a.fmla(facc, sum, sc)
	}
	a.label("group")
	blocks(group)
	float(false)
	a.opf("SUBS", "$1, %s", g)
	a.op("BNE", "group")
	a.label("tail")
	if t > 0 {
		blocks(t)
		float(true)
	}
	a.faddp(facc, facc, facc)
	a.faddps(facc, facc) // (P0+P1) + (P2+P3)
	a.opf("FMOVS.P", "%s, 4(%s)", facc.F(), y)
	a.opf("MOVD", "%s, %s", qp, sp) // the next row starts where the quants end
	a.opf("SUBS", "$1, %s", n)
	a.op("BNE", "row")
	a.label("done")
	a.ret()
}
