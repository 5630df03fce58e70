//go:build asmgen

package main

import "fmt"

// The float (f32, f16, bf16) products compute each output as two
// accumulators of 4 lanes over chunks of 4 columns, chunk c into
// accumulator c mod 2, in column order (fused multiply-adds), then
//
//	y += ((a0+b0) + (a1+b1)) + ((a2+b2) + (a3+b3))   (a, b the accumulators)
//
// over the first k8 columns (a multiple of 8); the Go caller adds the rest.
// The matrix-vector streams here (rowStream<wt>NEON) and the tiles of
// tile.go do exactly this per output, so prefill rows equal the decode
// product bit for bit.

// floatTypes are the weight types of the float kernels.
var floatTypes = []string{"F32", "F16", "BF16"}

// weightSize is the bytes of one weight of a float type.
func weightSize(wt string) int {
	if wt == "F32" {
		return 4
	}
	return 2
}

// loadWeights loads the weights of type wt for 4·n columns (n = 2 or 4
// chunks) at p (which moves on) into n consecutive registers from v as
// float32; f16 and bf16 are loaded into the upper half of them and widened
// downwards (FCVTL, or SHLL by 16 for bf16).
func loadWeights(a *asm, wt string, p R, v V, n int) {
	if wt == "F32" {
		a.opf("VLD1.P", "%d(%s), %s", 16*n, p, list(v, n, "S4"))
		return
	}
	src := v + V(n/2)
	a.opf("VLD1.P", "%d(%s), %s", 8*n, p, list(src, n/2, "H8"))
	for c := range V(n) {
		s := src + c/2
		switch {
		case wt == "F16" && c%2 == 0:
			a.fcvtl(v+c, s)
		case wt == "F16":
			a.fcvtl2(v+c, s)
		case c%2 == 0:
			a.shll(v+c, s)
		default:
			a.shll2(v+c, s)
		}
	}
}

// reduceInto adds the reduced pair of accumulators (p, p+1) to the float32
// at y (which moves on by 4 when post), p+1 serving as scratch.
func reduceInto(a *asm, p V, y R, post bool) {
	a.fadd(p, p, p+1)
	a.faddp(p, p, p)
	a.faddps(p, p)
	a.opf("FMOVS", "(%s), %s", y, (p + 1).F())
	a.opf("FADDS", "%s, %s, %s", p.F(), (p + 1).F(), p.F())
	if post {
		a.opf("FMOVS.P", "%s, 4(%s)", p.F(), y)
	} else {
		a.opf("FMOVS", "%s, (%s)", p.F(), y)
	}
}

// genRowStream emits rowStream<wt>NEON(x, w, ldw, k8, y, n): for r < n,
// y[r] += x · w_r over k8 columns (w_r at w + r·ldw bytes), 4 rows at a time
// sharing each load of x (then the remaining rows one by one), 16 columns
// per step.
func genRowStream(a *asm, wt string) {
	name := "rowStream" + wt + "NEON"
	a.fn(name, "func(x *float32, w *byte, ldw int, k8 int, y *float32, n int)",
		fmt.Sprintf(`%s is the %s matrix-vector product of n rows (see rowstream.go in neongen).`, name, wt))
	x, w, ldw, k8, y, n := R(0), R(1), R(2), R(3), R(4), R(5)
	xp, cnt, ld4 := R(6), R(11), R(12)
	wr := []R{7, 8, 9, 10}
	for _, p := range []struct {
		n string
		r R
	}{{"x", x}, {"w", w}, {"ldw", ldw}, {"k8", k8}, {"y", y}, {"n", n}} {
		a.load(p.n, p.r)
	}
	a.opf("LSL", "$2, %s, %s", ldw, ld4)
	rows := func(nr int, pre string) {
		a.opf("MOVD", "%s, %s", x, xp)
		a.opf("MOVD", "%s, %s", w, wr[0])
		for j := 1; j < nr; j++ {
			a.opf("ADD", "%s, %s, %s", ldw, wr[j-1], wr[j])
		}
		for j := range nr {
			a.zero(V(20 + 2*j))
			a.zero(V(21 + 2*j))
		}
		a.opf("LSR", "$4, %s, %s", k8, cnt)
		a.opf("CBZ", "%s, %s8", cnt, pre)
		a.label(pre + "16")
		a.opf("VLD1.P", "64(%s), %s", xp, list(0, 4, "S4"))
		for j := range nr {
			loadWeights(a, wt, wr[j], V(4+4*j), 4)
			for c := range V(4) {
				a.fmla(V(20+2*j)+c%2, V(4+4*j)+c, c)
			}
		}
		a.opf("SUBS", "$1, %s", cnt)
		a.opf("BNE", "%s16", pre)
		a.label(pre + "8")
		a.opf("TBZ", "$3, %s, %send", k8, pre)
		a.opf("VLD1.P", "32(%s), %s", xp, list(0, 2, "S4"))
		for j := range nr {
			loadWeights(a, wt, wr[j], V(4+4*j), 2)
			for c := range V(2) {
				a.fmla(V(20+2*j)+c, V(4+4*j)+c, c)
			}
		}
		a.label(pre + "end")
		for j := range nr {
			reduceInto(a, V(20+2*j), y, true)
		}
	}
	a.label("four")
	a.opf("CMP", "$4, %s", n)
	a.op("BLT", "one")
	rows(4, "q")
	a.opf("ADD", "%s, %s, %s", ld4, w, w)
	a.opf("SUB", "$4, %s", n)
	a.op("B", "four")
	a.label("one")
	a.opf("CBZ", "%s, done", n)
	rows(1, "s")
	a.opf("ADD", "%s, %s, %s", ldw, w, w)
	a.opf("SUB", "$1, %s", n)
	a.op("B", "one")
	a.label("done")
	a.ret()
}
