//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// genAxpy emits axpy<suffix>(alpha, x, y, n), y += alpha*x over the first n
// values (a multiple of the lanes), or with f16 axpyF16<suffix>, whose x
// holds binary16 values.
func genAxpy(s isa, f16 bool) {
	name, xt, xv, xsize := "axpy"+s.suffix, "float32", "x", 4
	if f16 {
		name, xt, xv, xsize = "axpyF16"+s.suffix, "uint16", "f16(x)", 2
	}
	text(name, NOSPLIT, fmt.Sprintf("func(alpha float32, x *%s, y *float32, %s int)", xt, s.n()))
	Doc(fmt.Sprintf("%s computes y += alpha*%s over the first %s values (a multiple of %d).", name, xv, s.n(), s.lanes))
	v := s.vr
	VBROADCASTSS(NewParamAddr("alpha", 0), v[0])
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param(s.n()), GP64())
	Label("loop")
	CMPQ(n, U8(s.lanes))
	JL(LabelRef("done"))
	if f16 {
		VCVTPH2PS(Mem{Base: x}, v[2])
		VMOVUPS(Mem{Base: y}, v[1])
		VFMADD231PS(v[2], v[0], v[1])
	} else {
		VMOVUPS(Mem{Base: y}, v[1])
		VFMADD231PS(Mem{Base: x}, v[0], v[1])
	}
	VMOVUPS(v[1], Mem{Base: y})
	ADDQ(U8(xsize*s.lanes), x)
	ADDQ(U8(s.bytes()), y)
	SUBQ(U8(s.lanes), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
