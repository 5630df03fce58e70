//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// genConverts emits the conversions between float32 and binary16 of an ISA:
// f32ToF16<suffix> (rounding to nearest even) and f16ToF32<suffix>.
func genConverts(s isa) {
	v := s.vr
	genConvert(s, "f32ToF16", "uint16", "float32", "values (a multiple of %d), rounding to nearest even", func(src, dst Mem) {
		VMOVUPS(src, v[0])
		// Convert into a register, then store: faster than the
		// memory-destination form (docs/performance.md, "Tuning constants").
		VCVTPS2PH(U8(0), v[0], s.half(v[1]))
		VMOVDQU(s.half(v[1]), dst)
	})
	genConvert(s, "f16ToF32", "float32", "uint16", "values (a multiple of %d)", func(src, dst Mem) {
		VCVTPH2PS(src, v[0])
		VMOVUPS(v[0], dst)
	})
}

// genBF16ToF32 emits bf16ToF32<suffix>, the conversion of bfloat16 to float32.
func genBF16ToF32(s isa) {
	v := s.vr
	genConvert(s, "bf16ToF32", "float32", "uint16", "bfloat16 values (a multiple of %d)", func(src, dst Mem) {
		VPMOVZXWD(src, v[0])
		VPSLLD(U8(16), v[0], v[0])
		VMOVUPS(v[0], dst)
	})
}

// genConvert emits <base><suffix>(dst, src, n): convert (one vector of
// values from src to dst) over the first n values, a multiple of the lanes;
// what completes the doc comment's "converts n values".
func genConvert(s isa, base, dstType, srcType, what string, convert func(src, dst Mem)) {
	name := base + s.suffix
	text(name, NOSPLIT, fmt.Sprintf("func(dst *%s, src *%s, %s int)", dstType, srcType, s.n()))
	Doc(fmt.Sprintf("%s converts %s "+what+".", name, s.n(), s.lanes))
	d := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param(s.n()), GP64())
	size := func(t string) int {
		if t == "float32" {
			return 4
		}
		return 2
	}
	Label("loop")
	CMPQ(n, U8(s.lanes))
	JL(LabelRef("done"))
	convert(Mem{Base: src}, Mem{Base: d})
	ADDQ(U8(size(srcType)*s.lanes), src)
	ADDQ(U8(size(dstType)*s.lanes), d)
	SUBQ(U8(s.lanes), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
