//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genDot emits dot<suffix>(a, b, n): the dot product of the first n values
// of a and b (n a multiple of the lanes).
func genDot(s isa) {
	name := "dot" + s.suffix
	text(name, NOSPLIT, fmt.Sprintf("func(a, b *float32, %s int) float32", s.n()))
	Doc(fmt.Sprintf("%s returns the dot product of the first %s values (a multiple of %d).", name, s.n(), s.lanes))
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param(s.n()), GP64())
	dotF32Body(s, a, b, n)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}

// dotF32Body leaves in X0 the dot product of the n values (a multiple of the
// lanes) at a and b, advancing a and b and counting n down: four
// accumulators over four vectors at a time, then one over one vector, then
// their sum. dotAVX512 and dotsAVX512 share it, so a batched dot equals a
// single one bit for bit. It defines the labels loop<4*lanes>, loop<lanes>
// and sum.
func dotF32Body(s isa, a, b, n Register) {
	v, vb := s.vr, s.bytes()
	loop4, loop1 := fmt.Sprintf("loop%d", 4*s.lanes), fmt.Sprintf("loop%d", s.lanes)
	for i := 0; i < 4; i++ {
		VXORPS(v[i], v[i], v[i])
	}
	Label(loop4)
	CMPQ(n, U8(4*s.lanes))
	JL(LabelRef(loop1))
	for i := 0; i < 4; i++ {
		VMOVUPS(Mem{Base: a, Disp: vb * i}, v[4+i])
		VFMADD231PS(Mem{Base: b, Disp: vb * i}, v[4+i], v[i])
	}
	ADDQ(U32(4*vb), a)
	ADDQ(U32(4*vb), b)
	SUBQ(U8(4*s.lanes), n)
	JMP(LabelRef(loop4))
	Label(loop1)
	CMPQ(n, U8(s.lanes))
	JL(LabelRef("sum"))
	VMOVUPS(Mem{Base: a}, v[4])
	VFMADD231PS(Mem{Base: b}, v[4], v[0])
	ADDQ(U8(vb), a)
	ADDQ(U8(vb), b)
	SUBQ(U8(s.lanes), n)
	JMP(LabelRef(loop1))
	Label("sum")
	hsum(sumPairs(v[0:4]), v[1])
}

// genDotF16 emits dotF16<suffix>(a, b, n): sum a[i]*f16(b[i]) over the first
// n values (a multiple of the lanes), in chains (1 or 2) accumulators: with
// two, pairs of vectors alternate between them and a last single vector goes
// to the first. AVX-512 has always used two and AVX2 one; changing either
// would change its rounding.
func genDotF16(s isa, chains int) {
	name := "dotF16" + s.suffix
	text(name, NOSPLIT, fmt.Sprintf("func(a *float32, b *uint16, %s int) float32", s.n()))
	Doc(fmt.Sprintf("%s returns sum a[i]*f16(b[i]) over the first %s values (a multiple of %d).", name, s.n(), s.lanes))
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param(s.n()), GP64())
	v, vb := s.vr, s.bytes()
	acc, h := v[0:chains], v[2:2+chains]
	for _, r := range acc {
		VXORPS(r, r, r)
	}
	loop, next := fmt.Sprintf("loop%d", chains*s.lanes), "done"
	if chains > 1 {
		next = fmt.Sprintf("loop%d", s.lanes)
	}
	Label(loop)
	CMPQ(n, U8(chains*s.lanes))
	JL(LabelRef(next))
	for c := range chains {
		VCVTPH2PS(Mem{Base: b, Disp: c * vb / 2}, h[c])
	}
	for c := range chains {
		VFMADD231PS(Mem{Base: a, Disp: c * vb}, h[c], acc[c])
	}
	ADDQ(imm(chains*vb), a)
	ADDQ(imm(chains*vb/2), b)
	SUBQ(U8(chains*s.lanes), n)
	JMP(LabelRef(loop))
	if chains > 1 { // fewer than two vectors left: at most one
		Label(next)
		CMPQ(n, U8(s.lanes))
		JL(LabelRef("done"))
		VCVTPH2PS(Mem{Base: b}, h[0])
		VFMADD231PS(Mem{Base: a}, h[0], acc[0])
	}
	Label("done")
	hsum(sumPairs(acc), v[1])
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}
