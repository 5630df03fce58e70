//go:build asmgen

package main

import "fmt"

// The dot products and axpys of the row kernels and of attention. A dot
// product of n16 values (a multiple of 16) keeps 4 accumulators, vector c
// of each 16-value chunk into accumulator c, and returns
// ((a0+a1)+(a2+a3)) reduced by pairs of lanes; an axpy is y = fma(p, v, y)
// per value. The batched forms (several rows of a cache, several queries
// sharing them) do exactly this per output, so Dots equals Dot row by row
// and DotsF16N equals DotsF16 query by query, bit for bit, and a single Dot
// or Axpy is the batched kernel with one row.

// genDots emits dots<F16>NEON_<nq>(out, ldo, q, ldq, k, ld, n16, rows): for
// i < nq and r < rows, out[i·ldo + r] = q_i · k_r over n16 values, with q_i
// at q + i·ldq and k_r at k + r·ld (strides in bytes), k of type kt (F32 or
// F16: each key converted once for the nq queries).
func genDots(a *asm, kt string, nq int) {
	name := fmt.Sprintf("dots%sNEON_%d", map[string]string{"F32": "", "F16": "F16"}[kt], nq)
	ktype := map[string]string{"F32": "*float32", "F16": "*uint16"}[kt]
	a.fn(name, fmt.Sprintf("func(out *float32, ldo int, q *float32, ldq int, k %s, ld int, n16 int, rows int)", ktype),
		fmt.Sprintf(`%s sets out[i*ldo+r] = q_i · k_r for %d queries and rows rows (strides in bytes;
		see attention.go in neongen).`, name, nq))
	out, ldo, q, ldq, k, ld, n16, rows := R(0), R(1), R(2), R(3), R(4), R(5), R(6), R(7)
	kp, cnt := R(8), R(9)
	op := []R{10, 11, 12, 13}[:nq]
	qp := []R{14, 15, 19, 20}[:nq]
	for _, p := range []struct {
		n string
		r R
	}{{"out", out}, {"ldo", ldo}, {"q", q}, {"ldq", ldq}, {"k", k}, {"ld", ld}, {"n16", n16}, {"rows", rows}} {
		a.load(p.n, p.r)
	}
	a.opf("CBZ", "%s, done", rows)
	a.opf("MOVD", "%s, %s", out, op[0])
	for i := 1; i < nq; i++ {
		a.opf("ADD", "%s, %s, %s", ldo, op[i-1], op[i])
	}
	acc := func(i int) V { return V(4 + 4*i) }
	kv := V(20)
	a.label("row")
	a.opf("MOVD", "%s, %s", k, kp)
	a.opf("MOVD", "%s, %s", q, qp[0])
	for i := 1; i < nq; i++ {
		a.opf("ADD", "%s, %s, %s", ldq, qp[i-1], qp[i])
	}
	for i := range nq {
		for c := range V(4) {
			a.zero(acc(i) + c)
		}
	}
	a.opf("MOVD", "%s, %s", n16, cnt)
	a.label("chunk")
	loadWeights(a, kt, kp, kv, 4)
	for i := range nq {
		a.opf("VLD1.P", "64(%s), %s", qp[i], list(0, 4, "S4"))
		for c := range V(4) {
			a.fmla(acc(i)+c, kv+c, c)
		}
	}
	a.opf("SUBS", "$16, %s", cnt)
	a.op("BNE", "chunk")
	for i := range nq {
		s := acc(i)
		a.fadd(s, s, s+1)
		a.fadd(s+2, s+2, s+3)
		a.fadd(s, s, s+2)
		a.faddp(s, s, s)
		a.faddps(s, s)
		a.opf("FMOVS.P", "%s, 4(%s)", s.F(), op[i])
	}
	a.opf("ADD", "%s, %s, %s", ld, k, k)
	a.opf("SUBS", "$1, %s", rows)
	a.op("BNE", "row")
	a.label("done")
	a.ret()
}

// genAxpys emits axpys<F16>NEON_<nq>(y, ldy, p, ldp, v, ld, n16, rows): for
// i < nq, y_i += sum over r < rows of p_i[r]·v_r, in order of r (one fused
// multiply-add per value and row), with y_i at y + i·ldy, p_i at p + i·ldp
// and v_r at v + r·ld (strides in bytes), v of type vt (each row converted
// once for the nq queries). Per chunk of 16 values the nq outputs stay in
// registers while every row passes.
func genAxpys(a *asm, vt string, nq int) {
	name := fmt.Sprintf("axpys%sNEON_%d", map[string]string{"F32": "", "F16": "F16"}[vt], nq)
	vtype := map[string]string{"F32": "*float32", "F16": "*uint16"}[vt]
	a.fn(name, fmt.Sprintf("func(y *float32, ldy int, p *float32, ldp int, v %s, ld int, n16 int, rows int)", vtype),
		fmt.Sprintf(`%s adds sum_r p_i[r]*v_r to y_i for %d outputs over rows rows (strides in bytes;
		see attention.go in neongen).`, name, nq))
	y, ldy, p, ldp, v, ld, n16, rows := R(0), R(1), R(2), R(3), R(4), R(5), R(6), R(7)
	vp, cnt := R(8), R(9)
	yp := []R{10, 11, 12, 13}[:nq]
	pp := []R{14, 15, 19, 20}[:nq]
	for _, q := range []struct {
		n string
		r R
	}{{"y", y}, {"ldy", ldy}, {"p", p}, {"ldp", ldp}, {"v", v}, {"ld", ld}, {"n16", n16}, {"rows", rows}} {
		a.load(q.n, q.r)
	}
	a.opf("CBZ", "%s, done", rows)
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
	a.opf("MOVD", "%s, %s", rows, cnt)
	a.label("row")
	a.opf("MOVD", "%s, R21", vp)
	loadWeights(a, vt, 21, vv, 4)
	for i := range nq {
		a.opf("VLD1R.P", "4(%s), [V0.S4]", pp[i])
		for c := range V(4) {
			a.fmla(acc(i)+c, vv+c, 0)
		}
	}
	a.opf("ADD", "%s, %s, %s", ld, vp, vp)
	a.opf("SUBS", "$1, %s", cnt)
	a.op("BNE", "row")
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
