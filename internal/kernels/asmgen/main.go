//go:build asmgen

// Command asmgen generates kernels_amd64.s and kernels_amd64_stubs.go with
// avo. From internal/kernels:
//
//	go run -tags asmgen ./asmgen -pkg kernels -out kernels_amd64.s -stubs kernels_amd64_stubs.go
//
// (which is what `go generate ./internal/kernels` runs). AVX-512 routines
// use F/BW/VL/DQ (plus F16C conversions, VNNI where named); AVX2 routines
// use AVX2+FMA+F16C. Every routine ends with VZEROUPPER. Loops process whole
// vectors only; the Go callers handle tails.
//
// One file per kernel family: dot.go, axpy.go, convert.go, tile.go (float
// register tiles), rowstream.go (matrix-vector row streams and their
// prefetches), dequant.go, i8.go (the int8 q8/q4 kernels of CPUs without
// AVX-512, AVX2 and AVX-VNNI; vex.go encodes VPDPBUSD's VEX form), attention.go
// (batched dots and axpys over a cache), elementwise.go, qrows.go,
// quantize.go, bgemm.go, vnni.go/vnnirows.go/vnnitile.go (AVX-512 VNNI).
// A family that exists for AVX-512 and AVX2 is one body written against an
// isa (isa.go: lanes, registers, names, the instructions whose form
// differs), which main emits once per ISA; to add a kernel to both, write
// it that way and add one call to the loop in main.
package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"

	. "github.com/mmcloughlin/avo/build"
)

// text starts a function; none of the routines retain their pointer
// arguments, so they are marked noescape.
func text(name string, a attr.Attribute, sig string) {
	TEXT(name, a, sig)
	Pragma("noescape")
}

// floatTypes are the weight types of the float kernels.
var floatTypes = []string{"F32", "F16", "BF16"}

func main() {
	ConstraintExpr("amd64,!purego")
	// The families of both ISAs: one body each, emitted per ISA.
	for _, f := range []struct {
		s            isa
		tiles        tileLimits
		dotF16Chains int
	}{{avx512, tilesAVX512, 2}, {avx2, tilesAVX2, 1}} {
		s := f.s
		genDot(s)
		genAxpy(s, false)
		genDotF16(s, f.dotF16Chains)
		genAxpy(s, true)
		genConverts(s)
		for _, wt := range floatTypes {
			genTiles(s, f.tiles, wt)
			genRowStream(s, wt)
		}
		genDequant(s, "Q8")
		genDequant(s, "Q4")
	}

	// AVX2 only: the q8/q4 matrix products (AVX-512 has VNNI's): float
	// streams for exact pools, and the int8 kernels of the avx2 and
	// avx2+vnni routes (i8.go).
	genRowStreamQ(avx2, "Q8")
	genRowStreamQ(avx2, "Q4")
	genI8()

	// The row kernels of both ISAs (emitted after the others, which kept
	// their place in the file when AVX2 gained these).
	for _, f := range []struct {
		s            isa
		dotF16Chains int
	}{{avx512, 2}, {avx2, 1}} {
		s := f.s
		genBF16ToF32(s)
		genDots(s)
		genAxpysN(s, "axpysF32x1"+s.matSuffix, 1, false)
		for nq := 1; nq <= 4; nq++ {
			genDotsF16N(s, nq, f.dotF16Chains)
			genAxpysN(s, fmt.Sprintf("axpysF16x%d%s", nq, s.matSuffix), nq, true)
		}
		genElementwise(s)
	}

	// AVX-512 only.
	for nr := 1; nr <= 4; nr++ {
		genQRows("Q8", nr)
		genQRows("Q4", nr)
	}
	for mr := 1; mr <= bgemmMR; mr++ {
		genBGEMM(mr)
	}
	genPackGather()
	genPackTranspose()
	genQuantizeX("Q8", false)
	genQuantizeX("Q4", false)
	genQuantizeX("Q8", true)
	genQ8EvenOdd()
	genQ8Transpose()
	genQ4Transpose()
	genQ4BlockOrder()
	for _, q := range []string{"Q8", "Q4"} {
		genTransposeW(q)
		genVNNIRows(q, 1, true)
		for nr := 1; nr <= 4; nr++ {
			genVNNIRows(q, nr, false)
		}
		for mr := 1; mr <= 4; mr++ {
			for nr := 1; nr <= 3; nr++ {
				genVNNITile(q, mr, nr)
			}
		}
		for m := 2; m <= vnniBatchMax; m++ {
			genVNNIBatch(q, m)
		}
	}
	// AVX-512 only, added last: the encoders' packed product (bgemmrm.go) and GELU.
	for mr := 1; mr <= bgemmMR; mr++ {
		genBGEMMRM(mr)
	}
	genGELU()      // gelu.go
	genLayerNorm() // layernorm.go
	Generate()
}
