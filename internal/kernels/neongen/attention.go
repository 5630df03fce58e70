//go:build asmgen

package main

import "fmt"

// The dot products and axpys of the row kernels and of attention. A dot
// product of n8 values (a multiple of 8) keeps 2 accumulators, the first
// and second vector of each 8-value chunk into the first and second, and
// returns (a0+a1) reduced by pairs of lanes, ((l0+l1)+(l2+l3)); an axpy is
// y = fma(p, v, y) per value. The batched forms (several rows of a cache,
// several queries sharing them) do exactly this per output, so Dots equals
// Dot row by row and DotsF16N equals DotsF16 query by query, bit for bit,
// and a single Dot or Axpy is the batched kernel with one row.

// genDots emits dots<F16>NEON_<nq>(out, ldo, q, ldq, k, ld, n8, rows): for
// i < nq and r < rows, out[i·ldo + r] = q_i · k_r over n8 values, with q_i
// at q + i·ldq and k_r at k + r·ld (strides in bytes), k of type kt (F32 or
// F16: each key converted once for the nq queries). Keys go two at a time
// (each query vector loaded once for both, both reduced together), 16
// values per step.
func genDots(a *asm, kt string, nq int) {
	name := fmt.Sprintf("dots%sNEON_%d", map[string]string{"F32": "", "F16": "F16"}[kt], nq)
	ktype := map[string]string{"F32": "*float32", "F16": "*uint16"}[kt]
	a.fn(name, fmt.Sprintf("func(out *float32, ldo int, q *float32, ldq int, k %s, ld int, n8 int, rows int)", ktype),
		fmt.Sprintf(`%s sets out[i*ldo+r] = q_i · k_r for %d queries and rows rows (strides in bytes;
		see attention.go in neongen).`, name, nq))
	out, ldo, q, ldq, k, ld, n8, rows := R(0), R(1), R(2), R(3), R(4), R(5), R(6), R(7)
	cnt := R(9)
	kp := []R{8, 21}
	op := []R{10, 11, 12, 13}[:nq]
	qp := []R{14, 15, 19, 20}[:nq]
	for _, p := range []struct {
		n string
		r R
	}{{"out", out}, {"ldo", ldo}, {"q", q}, {"ldq", ldq}, {"k", k}, {"ld", ld}, {"n8", n8}, {"rows", rows}} {
		a.load(p.n, p.r)
	}
	a.opf("MOVD", "%s, %s", out, op[0])
	for i := 1; i < nq; i++ {
		a.opf("ADD", "%s, %s, %s", ldo, op[i-1], op[i])
	}
	// V0-V3 a query's values, V4+4r.. key r's values, V12+4i+2r, +1 the
	// accumulators of query i and key r.
	acc := func(i, r int) V { return V(12 + 4*i + 2*r) }
	kv := func(r int) V { return V(4 + 4*r) }
	rowsOf := func(nk int, pre string) {
		a.opf("MOVD", "%s, %s", k, kp[0])
		if nk == 2 {
			a.opf("ADD", "%s, %s, %s", ld, k, kp[1])
		}
		a.opf("MOVD", "%s, %s", q, qp[0])
		for i := 1; i < nq; i++ {
			a.opf("ADD", "%s, %s, %s", ldq, qp[i-1], qp[i])
		}
		for i := range nq {
			for r := range nk {
				a.zero(acc(i, r))
				a.zero(acc(i, r) + 1)
			}
		}
		step := func(vecs int) {
			for r := range nk {
				loadWeights(a, kt, kp[r], kv(r), vecs)
			}
			for i := range nq {
				a.opf("VLD1.P", "%d(%s), %s", 16*vecs, qp[i], list(0, vecs, "S4"))
				for r := range nk {
					for c := range V(vecs) {
						a.fmla(acc(i, r)+c%2, kv(r)+c, c)
					}
				}
			}
		}
		a.opf("LSR", "$4, %s, %s", n8, cnt)
		a.opf("CBZ", "%s, %s8", cnt, pre)
		a.label(pre + "16")
		step(4)
		a.opf("SUBS", "$1, %s", cnt)
		a.opf("BNE", "%s16", pre)
		a.label(pre + "8")
		a.opf("TBZ", "$3, %s, %send", n8, pre)
		step(2)
		a.label(pre + "end")
		for i := range nq {
			s0 := acc(i, 0)
			a.fadd(s0, s0, s0+1)
			if nk == 2 {
				s1 := acc(i, 1)
				a.fadd(s1, s1, s1+1)
				a.faddp(s0, s0, s1)
				a.faddp(s0, s0, s0)
				a.opf("FMOVD.P", "%s, 8(%s)", s0.F(), op[i])
			} else {
				a.faddp(s0, s0, s0)
				a.faddps(s0, s0)
				a.opf("FMOVS.P", "%s, 4(%s)", s0.F(), op[i])
			}
		}
		if nk == 2 {
			a.opf("ADD", "%s<<1, %s, %s", ld, k, k)
		} else {
			a.opf("ADD", "%s, %s, %s", ld, k, k)
		}
	}
	a.opf("SUBS", "$2, %s", rows)
	a.op("BLT", "one")
	a.label("two")
	rowsOf(2, "t")
	a.opf("SUBS", "$2, %s", rows)
	a.op("BGE", "two")
	a.label("one")
	a.opf("TBZ", "$0, %s, done", rows) // rows is now -1 (one left) or -2
	rowsOf(1, "o")
	a.label("done")
	a.ret()
}

// genAxpys emits axpys<F16>NEON_<nq>(y, ldy, p, ldp, v, ld, n16, rows): for
// i < nq, y_i += sum over r < rows of p_i[r]·v_r, in order of r (one fused
// multiply-add per value and row), with y_i at y + i·ldy, p_i at p + i·ldp
// and v_r at v + r·ld (strides in bytes), v of type vt (each row converted
// once for the nq queries). Per chunk of 16 values the nq outputs stay in
// registers while every row passes, 4 rows at a time with their 4 weights
// p_i[r..r+3] in one register (multiply-adds by element), then the rest.
func genAxpys(a *asm, vt string, nq int) {
	name := fmt.Sprintf("axpys%sNEON_%d", map[string]string{"F32": "", "F16": "F16"}[vt], nq)
	vtype := map[string]string{"F32": "*float32", "F16": "*uint16"}[vt]
	a.fn(name, fmt.Sprintf("func(y *float32, ldy int, p *float32, ldp int, v %s, ld int, n16 int, rows int)", vtype),
		fmt.Sprintf(`%s adds sum_r p_i[r]*v_r to y_i for %d outputs over rows rows (strides in bytes;
		see attention.go in neongen).`, name, nq))
	y, ldy, p, ldp, v, ld, n16, rows := R(0), R(1), R(2), R(3), R(4), R(5), R(6), R(7)
	vp, cnt, vr := R(8), R(9), R(21)
	yp := []R{10, 11, 12, 13}[:nq]
	pp := []R{14, 15, 19, 20}[:nq]
	for _, q := range []struct {
		n string
		r R
	}{{"y", y}, {"ldy", ldy}, {"p", p}, {"ldp", ldp}, {"v", v}, {"ld", ld}, {"n16", n16}, {"rows", rows}} {
		a.load(q.n, q.r)
	}
	a.opf("CBZ", "%s, done", rows)
	// V0 the weights of 4 rows (or 1), V4+4i.. output i, V20.. a row's values.
	acc := func(i int) V { return V(4 + 4*i) }
	vv := V(20)
	a.label("chunk")
	a.opf("MOVD", "%s, %s", y, yp[0])
	a.opf("MOVD", "%s, %s", p, pp[0])
	for i := 1; i < nq; i++ {
		a.opf("ADD", "%s, %s, %s", ldy, yp[i-1], yp[i])
		a.opf("ADD", "%s, %s, %s", ldp, pp[i-1], pp[i])
	}
	for i := range nq {
		a.opf("VLD1", "(%s), %s", yp[i], list(acc(i), 4, "S4"))
	}
	a.opf("MOVD", "%s, %s", v, vp)
	a.opf("SUBS", "$4, %s, %s", rows, cnt)
	a.op("BLT", "rest")
	a.label("four")
	for i := range nq {
		a.opf("VLD1.P", "16(%s), [V%d.S4]", pp[i], 24+i)
	}
	for r := range 4 {
		a.opf("MOVD", "%s, %s", vp, vr)
		loadWeights(a, vt, vr, vv, 4)
		for i := range nq {
			for c := range V(4) {
				a.fmlaElem(acc(i)+c, vv+c, V(24+i), r)
			}
		}
		a.opf("ADD", "%s, %s, %s", ld, vp, vp)
	}
	a.opf("SUBS", "$4, %s", cnt)
	a.op("BGE", "four")
	a.label("rest")
	a.opf("ADDS", "$4, %s", cnt) // the rows left, 0-3
	a.op("BEQ", "store")
	a.label("one")
	a.opf("MOVD", "%s, %s", vp, vr)
	loadWeights(a, vt, vr, vv, 4)
	for i := range nq {
		a.opf("VLD1R.P", "4(%s), [V0.S4]", pp[i])
		for c := range V(4) {
			a.fmla(acc(i)+c, vv+c, 0)
		}
	}
	a.opf("ADD", "%s, %s, %s", ld, vp, vp)
	a.opf("SUBS", "$1, %s", cnt)
	a.op("BNE", "one")
	a.label("store")
	for i := range nq {
		a.opf("VST1", "%s, (%s)", list(acc(i), 4, "S4"), yp[i])
	}
	a.opf("ADD", "$64, %s", y)
	a.opf("ADD", "$%d, %s", 16*weightSize(vt), v)
	a.opf("SUBS", "$16, %s", n16)
	a.op("BNE", "chunk")
	a.label("done")
	a.ret()
}
