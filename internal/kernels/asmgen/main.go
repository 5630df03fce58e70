//go:build asmgen

// Command asmgen generates kernels_amd64.s and kernels_amd64_stubs.go with
// avo. From internal/kernels:
//
//	go run -tags asmgen ./asmgen -pkg kernels -out kernels_amd64.s -stubs kernels_amd64_stubs.go
//
// AVX-512 routines use F/BW/VL/DQ (plus F16C conversions, VNNI where named);
// AVX2 routines use AVX2+FMA+F16C. Every routine ends with VZEROUPPER.
// Loops process whole vectors only; the Go callers handle tails.
package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var zr = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
	Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}

// text starts a function; none of the routines retain their pointer
// arguments, so they are marked noescape.
func text(name string, a attr.Attribute, sig string) {
	TEXT(name, a, sig)
	Pragma("noescape")
}

func main() {
	ConstraintExpr("amd64,!purego")
	genDot()
	genAxpy()
	genDots()
	genAxpysN("axpysF32x1", 1, false)
	for nq := 1; nq <= 4; nq++ {
		genDotsF16N(nq)
		genAxpysN(fmt.Sprintf("axpysF16x%d", nq), nq, true)
	}
	genDotF16()
	genAxpyF16()
	genCvt()
	for _, wt := range []string{"F32", "F16", "BF16"} {
		for mr := 1; mr <= 4; mr++ {
			for nr := 1; nr <= 5; nr++ {
				genTile(wt, mr, nr)
			}
		}
		genRowStream(wt, false)
		genRowStream(wt, true)
	}
	for nr := 1; nr <= 4; nr++ {
		genQRows("Q8", nr)
		genQRows("Q4", nr)
	}
	genDequant("Q8")
	genDequant("Q4")
	genQuantizeX("Q8", false)
	genQuantizeX("Q4", false)
	genQuantizeX("Q8", true)
	for mr := 1; mr <= bgemmMR; mr++ {
		genBGEMM(mr)
	}
	genPackGather()
	genPackTranspose()
	genElementwise()
	genRoPE()
	genAVX2()
	genRowStreamQAVX2("Q8")
	genRowStreamQAVX2("Q4")
	genRowsQ8I8AVX2()
	genRowsI8AVX2("Q4")
	genBF16ToF32()
	genQ8Tables()
	genTransposeWQ8()
	genQ4Tables()
	genTransposeWQ4()
	genVNNIRowStreamQ8()
	genVNNIRowStreamQ4()
	for nr := 1; nr <= 4; nr++ {
		genVNNIRowsQ8(nr)
		genVNNIRowsQ4(nr)
	}
	for _, q := range []string{"Q8", "Q4"} {
		for mr := 1; mr <= 4; mr++ {
			for nr := 1; nr <= 3; nr++ {
				genVNNITileQ8(q, mr, nr)
			}
		}
	}
	Generate()
}

// hsum reduces z (any 16 lanes) into the low lane of its X register,
// clobbering t.
func hsum(z, t VecPhysical) {
	y, x := z.AsY(), z.AsX()
	VEXTRACTF32X8(U8(1), z, t.AsY())
	VADDPS(t.AsY(), y, y)
	VEXTRACTF32X4(U8(1), y, t.AsX())
	VADDPS(t.AsX(), x, x)
	VPERMILPD(U8(1), x, t.AsX())
	VADDPS(t.AsX(), x, x)
	VMOVSHDUP(x, t.AsX())
	VADDSS(t.AsX(), x, x)
}
