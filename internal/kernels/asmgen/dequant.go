//go:build asmgen

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genDequant emits dequant<q><matSuffix>(dst, scales, quants, nb): writes
// the nb*32 floats of nb whole blocks of a q8 or q4 row.
func genDequant(s isa, q string) {
	name := "dequant" + q + s.matSuffix
	text(name, NOSPLIT, "func(dst *float32, scales *byte, quants *byte, nb int)")
	Doc(name + " dequantizes nb whole blocks (binary16 scales, quants) into dst.")
	d := Load(Param("dst"), GP64())
	sp := Load(Param("scales"), GP64())
	qp := Load(Param("quants"), GP64())
	nb := Load(Param("nb"), GP64())
	b := newDequantBlock(s, q)
	Label("loop")
	TESTQ(nb, nb)
	JZ(LabelRef("done"))
	b.load(sp, qp, s.vr[0:b.vectors()], func(i int, r VecPhysical) {
		VMOVUPS(r, Mem{Base: d, Disp: s.bytes() * i})
	})
	ADDQ(U8(2), sp)
	ADDQ(U8(qbytes(q)), qp)
	ADDQ(U32(128), d)
	DECQ(nb)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// qbytes is the quant bytes of a block of 32 values.
func qbytes(q string) int {
	if q == "Q4" {
		return 16
	}
	return 32
}

// dequantBlock dequantizes one block of a q8 or q4 row into registers:
// scale × value, each in float32, as the Go reference does.
type dequantBlock struct {
	s isa
	q string
	// scale holds the block's scale; for q4, mask15 and eight hold 15 and 8
	// in every lane.
	scale, mask15, eight VecPhysical
}

// newDequantBlock emits the constants of a dequantBlock (for q4).
func newDequantBlock(s isa, q string) *dequantBlock {
	b := &dequantBlock{s: s, q: q, scale: s.vr[8], mask15: s.vr[10], eight: s.vr[11]}
	if q == "Q4" {
		s.splat(15, b.mask15)
		s.splat(8, b.eight)
	}
	return b
}

// vectors is how many vectors a block fills.
func (b *dequantBlock) vectors() int { return 32 / b.s.lanes }

// load sets v (vectors() registers) to the 32 values of the block whose
// binary16 scale is at sp and whose quants are at qp (signed bytes for q8;
// for q4, nibbles u = q+8, values 0-15 low and 16-31 high) and hands each
// vector, once it holds its values, to use.
func (b *dequantBlock) load(sp, qp Register, v []VecPhysical, use func(i int, r VecPhysical)) {
	s := b.s
	s.broadcastF16(Mem{Base: sp}, b.scale)
	if b.q == "Q8" {
		for i, r := range v {
			VPMOVSXBD(Mem{Base: qp, Disp: s.lanes * i}, r)
		}
	} else {
		lo, hi := v[:len(v)/2], v[len(v)/2:]
		for i, r := range lo {
			VPMOVZXBD(Mem{Base: qp, Disp: s.lanes * i}, r)
		}
		for i, r := range lo {
			VPSRLD(U8(4), r, hi[i])
		}
		for _, r := range lo {
			s.and(b.mask15, r, r)
		}
		for _, r := range v {
			VPSUBD(b.eight, r, r)
		}
	}
	for i, r := range v {
		VCVTDQ2PS(r, r)
		VMULPS(b.scale, r, r)
		use(i, r)
	}
}
