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
// with wq the weight quants (q4: the stored nibble q+8, and S_b starts
// from the block's offset -8*sum(xq)), dw_b the weight's binary16 scale and
// dx_b the activation's. Every kernel, whatever its number of rows, does
// these float operations on these values, so a row's result does not
// depend on the rows computed with it: prefill rows equal the decode
// product and batched rows equal rows alone, bit for bit. Integer sums are
// exact however the SDOTs are arranged.
//
// The matrix-vector kernels here (qStream<q>_<t>) hold P in the 4 lanes of
// one vector (lane l = P_l) and need the block sums of a group of 4 blocks
// in the 4 lanes of one vector. They load weights and activations with LD4,
// which de-interleaves 16 words of 4 bytes into 4 registers (word 4i+j to
// lane i of register j): SDOT of register j of the weights with register j
// of the activations then sums, in lane i, the 16 bytes of words 4i..4i+3.
//
//   - q8: 64 bytes are 2 blocks, so lane i sums half a block; one ADDP of
//     two such accumulators gives the 4 block sums of a group.
//   - q4: 64 bytes are 4 blocks of 16 packed bytes (word j of block i holds
//     values 4j..4j+3 in its low nibbles and 16+4j.. in its high ones), so
//     lane i is block i: 4 SDOTs of the low nibbles with the activations'
//     low halves and 4 of the high nibbles with the high halves sum whole
//     blocks, starting from the offsets. The activations are stored for it
//     (quantizeXQ4NEON): per group, the 4 blocks' first halves, then their
//     second halves.
//
// Rows go three at a time (the activations loaded once for the three), then
// the last one or two. A row's nb blocks are ng groups of 4 and a tail of t (the
// variant's suffix; rows of a call all have the same nb, so the Go caller
// picks the variant). The tail's weights are loaded a block at a time
// (LD4 to lanes), never past the row; the activations, scales and offsets
// are padded with zeros to whole groups, so stale lanes multiply zeros.

// qTailMask is the lane mask of a tail of t blocks (lanes < t set), at
// offset 16t: the weight scales past the row's last block are whatever
// bytes follow and must not reach the sum.
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

// qStream holds a qStream kernel's registers: per row j of a pass, sp[j]
// and qp[j] its scales and quants; xp, dp, op the activations' quants,
// scales and offsets; g the groups left.
type qStream struct {
	a      *asm
	q      string
	t      int
	sp, qp [3]R
	xp, dp R
	op, g  R
}

// Vector registers: V0-V3 activations (in the float part: the block sums,
// scales and activation scales); per row j of a pass, W(j) the 4 weight
// registers, A(j) and A(j)+1 the SDOT accumulators (q4: A(j) only, A(j)+1
// scratch), F(j) its P_0..P_3, and for q8 X(j) and Y(j) = X(j)+1 the
// reductions of the running sums; V31 the tail mask, V30 the q4 nibble mask.
//
// The q8 accumulators are never cleared: they hold running sums of every
// block so far (wrapping int32 arithmetic is exact), reduced after each
// group into X or Y in turn, and a group's block sums are the difference of
// the two (one SUB where clearing took two instructions). The group loop
// runs in pairs of groups so that X and Y swap roles without a move; Y holds
// the last reduction between groups.
func (k *qStream) stride() int {
	if k.q == "Q8" {
		return 9
	}
	return 7
}
func (k *qStream) W(j int) V { return V(4 + k.stride()*j) }
func (k *qStream) A(j int) V { return V(8 + k.stride()*j) }
func (k *qStream) F(j int) V { return V(10 + k.stride()*j) }
func (k *qStream) X(j int) V { return V(11 + k.stride()*j) }

// genQStream emits qStream<q>_<t>(xq, dx, off, w, ng, y, n): for the n
// weight rows at w (contiguous, nb = 4*ng+t blocks each), y[r] = row r ·
// activations (quants xq, scales dx, offsets off, all padded with zeros to
// whole groups of 4 blocks; q8 in the layout of quantizeXNEON, q4 in that of
// quantizeXQ4NEON).
func genQStream(a *asm, q string, t int) {
	name := fmt.Sprintf("qStream%s_%d", q, t)
	a.fn(name, "func(xq *byte, dx *float32, off *int32, w *byte, ng int, y *float32, n int)",
		fmt.Sprintf(`%s is the %s matrix-vector product of n rows of 4*ng+%d blocks
		(see qstream.go in neongen).`, name, q, t))
	xq, dx, off, ng, y, n := R(0), R(1), R(2), R(4), R(5), R(6)
	nb2, rb, tmp := R(12), R(13), R(21)
	k := &qStream{a: a, q: q, t: t, sp: [3]R{3, 14, 19}, qp: [3]R{7, 15, 20}, xp: 8, dp: 9, op: 10, g: 11}
	for _, p := range []struct {
		n string
		r R
	}{{"xq", xq}, {"dx", dx}, {"off", off}, {"w", k.sp[0]}, {"ng", ng}, {"y", y}, {"n", n}} {
		a.load(p.n, p.r)
	}
	a.opf("LSL", "$2, %s, %s", ng, tmp)
	if t > 0 {
		a.opf("ADD", "$%d, %s, %s", t, tmp, tmp)
		a.opf("MOVD", "$%s<>+%d(SB), %s", qTailMask, 16*t, rb)
		a.opf("VLD1", "(%s), [V31.B16]", rb)
	}
	a.opf("LSL", "$1, %s, %s", tmp, nb2) // the scales: 2 bytes a block
	a.opf("MOVD", "$%d, %s", 2+qBytes(q), rb)
	a.opf("MUL", "%s, %s, %s", tmp, rb, rb) // the bytes of a row
	if q == "Q4" {
		a.splat(30, 0x0f0f0f0f, tmp)
	} else {
		for j := range 3 {
			a.zero(k.A(j))
			a.zero(k.A(j) + 1)
			a.zero(k.X(j) + 1)
		}
	}
	pass := func(nr int, pre string) {
		a.opf("MOVD", "%s, %s", xq, k.xp)
		a.opf("MOVD", "%s, %s", dx, k.dp)
		if q == "Q4" {
			a.opf("MOVD", "%s, %s", off, k.op)
		}
		for j := 1; j < nr; j++ {
			a.opf("ADD", "%s, %s, %s", rb, k.sp[j-1], k.sp[j])
		}
		for j := range nr {
			a.opf("ADD", "%s, %s, %s", nb2, k.sp[j], k.qp[j])
			a.zero(k.F(j))
		}
		a.opf("MOVD", "%s, %s", ng, k.g)
		if q == "Q8" {
			// an odd group first, then pairs of groups
			a.opf("TBZ", "$0, %s, %seven", k.g, pre)
			k.group(nr, group, 0)
			k.keep(nr)
			a.label(pre + "even")
			a.opf("LSR", "$1, %s, %s", k.g, k.g)
			a.opf("CBZ", "%s, %stail", k.g, pre)
			a.label(pre + "group")
			k.group(nr, group, 0)
			k.group(nr, group, 1)
		} else {
			a.opf("CBZ", "%s, %stail", k.g, pre)
			a.label(pre + "group")
			k.group(nr, group, 0)
		}
		a.opf("SUBS", "$1, %s", k.g)
		a.opf("BNE", "%sgroup", pre)
		a.label(pre + "tail")
		if t > 0 {
			k.group(nr, t, 0)
			if q == "Q8" {
				k.keep(nr)
			}
		}
		// y = (P0+P1) + (P2+P3) for each row, by pairwise adds across the rows
		switch nr {
		case 1:
			a.faddp(k.F(0), k.F(0), k.F(0))
			a.faddps(k.F(0), k.F(0))
			a.opf("FMOVS.P", "%s, 4(%s)", k.F(0).F(), y)
		case 2:
			a.faddp(k.F(0), k.F(0), k.F(1))
			a.faddp(k.F(0), k.F(0), k.F(0))
			a.opf("FMOVD.P", "%s, 8(%s)", k.F(0).F(), y)
		case 3:
			a.faddp(k.F(0), k.F(0), k.F(1))
			a.faddp(k.F(2), k.F(2), k.F(2))
			a.faddp(k.F(0), k.F(0), k.F(2))
			a.opf("FMOVD.P", "%s, 8(%s)", k.F(0).F(), y)
			a.opf("VST1.P", "V%d.S[2], 4(%s)", k.F(0), y)
		}
		a.opf("MOVD", "%s, %s", k.qp[nr-1], k.sp[0]) // the next row starts where the quants end
	}
	a.opf("SUBS", "$3, %s", n)
	a.op("BLT", "rest")
	a.label("triple")
	pass(3, "t")
	a.opf("SUBS", "$3, %s", n)
	a.op("BGE", "triple")
	a.label("rest")
	a.opf("ADDS", "$3, %s", n) // the rows left: 0, 1 or 2
	a.op("BEQ", "done")
	a.opf("CMP", "$1, %s", n)
	a.op("BEQ", "single")
	pass(2, "p")
	a.op("B", "done")
	a.label("single")
	pass(1, "s")
	a.label("done")
	a.ret()
}

// keep moves each row's last reduction from X to Y, where the next group
// expects it (after a group of form 0 that ends a run of pairs).
func (k *qStream) keep(nr int) {
	for j := range nr {
		k.a.mov(k.X(j)+1, k.X(j))
	}
}

// group multiplies the activations with cnt blocks of each of nr rows (a
// whole group, or the tail) and adds them to the rows' P. For q8, form 0
// reduces the running sums into X (the previous reduction in Y), form 1
// into Y (the previous in X).
func (k *qStream) group(nr, cnt, form int) {
	a := k.a
	tail := cnt < group
	if k.q == "Q8" {
		for h := range 2 { // blocks 2h, 2h+1
			if cnt <= 2*h {
				continue // B keeps its sums: lanes 2 and 3 of the difference are 0
			}
			a.opf("VLD4.P", "64(%s), %s", k.xp, list(0, 4, "S4"))
			for j := range nr {
				acc := k.A(j) + V(h)
				switch n := cnt - 2*h; {
				case n >= 2:
					a.opf("VLD4.P", "64(%s), %s", k.qp[j], list(k.W(j), 4, "S4"))
				case n == 1:
					a.ld4Lane(k.W(j), k.qp[j], 0)
					a.ld4Lane(k.W(j), k.qp[j], 1)
				}
				for r := range V(4) {
					a.sdot(acc, k.W(j)+r, r)
				}
			}
		}
	} else {
		for j := range nr {
			if tail {
				for i := range cnt {
					a.ld4Lane(k.W(j), k.qp[j], i)
				}
			} else {
				a.opf("VLD4.P", "64(%s), %s", k.qp[j], list(k.W(j), 4, "S4"))
			}
		}
		a.opf("VLD4.P", "64(%s), %s", k.xp, list(0, 4, "S4")) // first halves
		for j := range nr {
			acc, lo := k.A(j), k.A(j)+1
			a.opf("VLD1", "(%s), [%s]", k.op, acc.S4())
			for r := range V(4) {
				a.and(lo, k.W(j)+r, 30)
				a.sdot(acc, lo, r)
			}
		}
		a.opf("ADD", "$16, %s", k.op)
		a.opf("VLD4.P", "64(%s), %s", k.xp, list(0, 4, "S4")) // second halves
		for j := range nr {
			for r := range V(4) {
				w := k.W(j) + r
				a.ushrB(w, w, 4)
				a.sdot(k.A(j), w, r)
			}
		}
	}
	sum, dxv, dw, sc := V(0), V(1), V(2), V(3)
	a.opf("VLD1.P", "16(%s), [%s]", k.dp, dxv.S4())
	for j := range nr {
		if k.q == "Q8" {
			cur, prev := k.X(j), k.X(j)+1
			if form == 1 {
				cur, prev = prev, cur
			}
			a.addp(cur, k.A(j), k.A(j)+1)
			a.sub(sum, cur, prev)
			a.scvtf(sum, sum)
		} else {
			a.scvtf(sum, k.A(j))
		}
		a.opf("FMOVD.P", "8(%s), %s", k.sp[j], dw.F())
		a.fcvtl(dw, dw)
		if tail {
			a.and(dw, dw, 31)
		}
		a.fmul(sc, dw, dxv)
		a.fmla(k.F(j), sum, sc)
	}
}
