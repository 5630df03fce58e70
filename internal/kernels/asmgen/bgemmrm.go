//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genBGEMMRM emits bgemmRM_<mr>(x, ldx, wp, kc, y, ldy, mask, bias): the outer-product
// micro-kernel of genBGEMM with its input rows read where they are (row-major,
// ldx floats apart) instead of packed: each value broadcast straight from its row.
// For i < mr and lanes l < 32 enabled in mask (bit l),
// y[i*ldy+l] += sum_{k<kc} x[i*ldx+k] * wp[k*32+l], or with bias != nil
// y[i*ldy+l] = bias[l] + sum_{k<kc} x[i*ldx+k] * wp[k*32+l] (y not read).
// Rows 0-5 are addressed from one base and rows 6-11 from a second, each as the
// base plus ldx, 2ldx, 3ldx, 4ldx or 5ldx (index registers ldx, 3ldx, 5ldx scaled by 1, 2, 4).
func genBGEMMRM(mr int) {
	name := fmt.Sprintf("bgemmRM_%d", mr)
	text(name, NOSPLIT, "func(x *float32, ldx int, wp *float32, kc int, y *float32, ldy int, mask uint32, bias *float32)")
	Doc(name + " is the broadcast GEMM micro-kernel on row-major inputs (see genBGEMMRM).")
	x0 := Load(Param("x"), GP64())
	l1 := Load(Param("ldx"), GP64())
	wp := Load(Param("wp"), GP64())
	kc := Load(Param("kc"), GP64())
	SHLQ(U8(2), l1)
	l3, l5, x6 := GP64(), GP64(), GP64()
	LEAQ(Mem{Base: l1, Index: l1, Scale: 2}, l3)
	LEAQ(Mem{Base: l1, Index: l1, Scale: 4}, l5)
	LEAQ(Mem{Base: x0, Index: l3, Scale: 2}, x6)
	row := func(r int) Mem {
		b := x0
		if r >= 6 {
			b = x6
		}
		switch r % 6 {
		case 0:
			return Mem{Base: b}
		case 1:
			return Mem{Base: b, Index: l1, Scale: 1}
		case 2:
			return Mem{Base: b, Index: l1, Scale: 2}
		case 3:
			return Mem{Base: b, Index: l3, Scale: 1}
		case 4:
			return Mem{Base: b, Index: l1, Scale: 4}
		default:
			return Mem{Base: b, Index: l5, Scale: 1}
		}
	}
	for i := 0; i < 2*mr; i++ {
		VXORPS(zr[i], zr[i], zr[i])
	}
	bt := []VecPhysical{Z26, Z27, Z28, Z29, Z30, Z31}
	TESTQ(kc, kc)
	JZ(LabelRef("store"))
	Label("loop")
	VMOVUPS(Mem{Base: wp}, Z24)
	VMOVUPS(Mem{Base: wp, Disp: 64}, Z25)
	for i := 0; i < mr; i++ {
		b := bt[i%len(bt)]
		VBROADCASTSS(row(i), b)
		VFMADD231PS(Z24, b, zr[2*i])
		VFMADD231PS(Z25, b, zr[2*i+1])
	}
	ADDQ(U32(128), wp)
	ADDQ(U8(4), x0)
	if mr > 6 {
		ADDQ(U8(4), x6)
	}
	DECQ(kc)
	JNZ(LabelRef("loop"))
	Label("store")
	y, ldy := bgemmStoreArgs()
	bias := Load(Param("bias"), GP64())
	TESTQ(bias, bias)
	JNZ(LabelRef("bias"))
	bgemmAddStore(mr, y, ldy)
	VZEROUPPER()
	RET()
	Label("bias")
	VMOVUPS_Z(Mem{Base: bias}, K1, Z24)
	VMOVUPS_Z(Mem{Base: bias, Disp: 64}, K2, Z25)
	for i := 0; i < mr; i++ {
		VADDPS(zr[2*i], Z24, Z26)
		VMOVUPS(Z26, K1, Mem{Base: y})
		VADDPS(zr[2*i+1], Z25, Z27)
		VMOVUPS(Z27, K2, Mem{Base: y, Disp: 64})
		if i+1 < mr {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}
