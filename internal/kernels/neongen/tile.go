//go:build asmgen

package main

import "fmt"

// Tile shapes of the float matrix product: up to tileM input rows × tileN
// weight rows of outputs, two accumulators each (see rowstream.go).
const (
	tileM = 4
	tileN = 2
)

// genTile emits tile<wt>NEON_<mr>x<nr>(x, ldx, w, ldw, k8, y, ldy): for i <
// mr and j < nr, y[i·ldy+j] += x_i · w_j over k8 columns, x_i at x + i·ldx
// float32, w_j at w + j·ldw bytes, 8 columns per step, with the arithmetic
// per output of rowstream.go.
func genTile(a *asm, wt string, mr, nr int) {
	name := fmt.Sprintf("tile%sNEON_%dx%d", wt, mr, nr)
	a.fn(name, "func(x *float32, ldx int, w *byte, ldw int, k8 int, y *float32, ldy int)",
		fmt.Sprintf(`%s is a %d×%d register tile of the %s matrix product (see tile.go in neongen).`, name, mr, nr, wt))
	xr := []R{0, 1, 2, 3}[:mr]
	wr := []R{4, 5}[:nr]
	ldx, ldw, k8, y, ldy, cnt := R(8), R(9), R(10), R(11), R(12), R(13)
	a.load("x", xr[0])
	a.load("ldx", ldx)
	a.load("w", wr[0])
	a.load("ldw", ldw)
	a.load("k8", k8)
	a.load("y", y)
	a.load("ldy", ldy)
	a.opf("LSL", "$2, %s, %s", ldx, ldx)
	a.opf("LSL", "$2, %s, %s", ldy, ldy)
	for i := 1; i < mr; i++ {
		a.opf("ADD", "%s, %s, %s", ldx, xr[i-1], xr[i])
	}
	for j := 1; j < nr; j++ {
		a.opf("ADD", "%s, %s, %s", ldw, wr[j-1], wr[j])
	}
	acc := func(i, j int) V { return V(12 + 2*(i*nr+j)) }
	for i := range mr {
		for j := range nr {
			a.zero(acc(i, j))
			a.zero(acc(i, j) + 1)
		}
	}
	a.opf("LSR", "$3, %s, %s", k8, cnt)
	a.label("loop")
	for i := range mr {
		a.opf("VLD1.P", "32(%s), %s", xr[i], list(V(2*i), 2, "S4"))
	}
	for j := range nr {
		loadWeights(a, wt, wr[j], V(8+2*j), 2)
	}
	for i := range mr {
		for j := range nr {
			a.fmla(acc(i, j), V(8+2*j), V(2*i))
			a.fmla(acc(i, j)+1, V(9+2*j), V(2*i+1))
		}
	}
	a.opf("SUBS", "$1, %s", cnt)
	a.op("BNE", "loop")
	for i := range mr {
		for j := range nr {
			reduceInto(a, acc(i, j), y, j+1 < nr)
		}
		if i+1 < mr {
			a.opf("SUB", "$%d, %s", 4*(nr-1), y)
			a.opf("ADD", "%s, %s, %s", ldy, y, y)
		}
	}
	a.ret()
}
