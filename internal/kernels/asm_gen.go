//go:build ignore

// asm_gen.go generates kernels_amd64.s and kernels_amd64_stubs.go with avo:
//
//	go run asm_gen.go -pkg kernels -out kernels_amd64.s -stubs kernels_amd64_stubs.go
//
// Every routine uses AVX-512 (F, BW, VL; F16C for binary16) and ends with
// VZEROUPPER. Loops process whole vectors only; the Go callers handle tails.
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
	genDotF16()
	genAxpyF16()
	genCvt()
	for _, wt := range []string{"F32", "F16", "BF16"} {
		for mr := 1; mr <= 4; mr++ {
			for nr := 1; nr <= 5; nr++ {
				genTile(wt, mr, nr)
			}
		}
	}
	for nr := 1; nr <= 4; nr++ {
		genQRows("Q8", nr)
		genQRows("Q4", nr)
	}
	genDequant("Q8")
	genDequant("Q4")
	genQuantizeX("Q8")
	genQuantizeX("Q4")
	idx8 := GLOBL("vnniPairIdx", RODATA|NOPTR)
	for p := 0; p < 8; p++ {
		for l := 0; l < 16; l++ {
			DATA(64*p+4*l, U32(2*p+l/8))
		}
	}
	idx4 := GLOBL("vnniQuadIdx", RODATA|NOPTR)
	for g := 0; g < 4; g++ {
		for l := 0; l < 16; l++ {
			DATA(64*g+4*l, U32(4*g+l/4))
		}
	}
	for mr := 1; mr <= bgemmMR; mr++ {
		genBGEMM(mr)
	}
	genPackGather()
	genPackTranspose()
	genElementwise()
	genAVX2()
	genBF16ToF32()
	for nr := 1; nr <= 4; nr++ {
		genVNNIRows("Q8", nr, idx8)
		genVNNIRows("Q4", nr, idx4)
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

func genDot() {
	text("dotAVX512", NOSPLIT, "func(a, b *float32, n16 int) float32")
	Doc("dotAVX512 returns the dot product of the first n16 values (a multiple of 16).")
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param("n16"), GP64())
	for i := 0; i < 4; i++ {
		VXORPS(zr[i], zr[i], zr[i])
	}
	Label("loop64")
	CMPQ(n, U8(64))
	JL(LabelRef("loop16"))
	for i := 0; i < 4; i++ {
		VMOVUPS(Mem{Base: a, Disp: 64 * i}, zr[4+i])
		VFMADD231PS(Mem{Base: b, Disp: 64 * i}, zr[4+i], zr[i])
	}
	ADDQ(U32(256), a)
	ADDQ(U32(256), b)
	SUBQ(U8(64), n)
	JMP(LabelRef("loop64"))
	Label("loop16")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VMOVUPS(Mem{Base: a}, Z4)
	VFMADD231PS(Mem{Base: b}, Z4, Z0)
	ADDQ(U8(64), a)
	ADDQ(U8(64), b)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop16"))
	Label("done")
	VADDPS(Z1, Z0, Z0)
	VADDPS(Z3, Z2, Z2)
	VADDPS(Z2, Z0, Z0)
	hsum(Z0, Z1)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}

func genAxpy() {
	text("axpyAVX512", NOSPLIT, "func(alpha float32, x, y *float32, n16 int)")
	Doc("axpyAVX512 computes y += alpha*x over the first n16 values (a multiple of 16).")
	VBROADCASTSS(NewParamAddr("alpha", 0), Z0)
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n16"), GP64())
	Label("loop")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VMOVUPS(Mem{Base: y}, Z1)
	VFMADD231PS(Mem{Base: x}, Z0, Z1)
	VMOVUPS(Z1, Mem{Base: y})
	ADDQ(U8(64), x)
	ADDQ(U8(64), y)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

func genDotF16() {
	text("dotF16AVX512", NOSPLIT, "func(a *float32, b *uint16, n16 int) float32")
	Doc("dotF16AVX512 returns sum a[i]*f16(b[i]) over the first n16 values (a multiple of 16).")
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param("n16"), GP64())
	VXORPS(Z0, Z0, Z0)
	VXORPS(Z1, Z1, Z1)
	Label("loop32")
	CMPQ(n, U8(32))
	JL(LabelRef("loop16"))
	VCVTPH2PS(Mem{Base: b}, Z2)
	VCVTPH2PS(Mem{Base: b, Disp: 32}, Z3)
	VFMADD231PS(Mem{Base: a}, Z2, Z0)
	VFMADD231PS(Mem{Base: a, Disp: 64}, Z3, Z1)
	ADDQ(U32(128), a)
	ADDQ(U8(64), b)
	SUBQ(U8(32), n)
	JMP(LabelRef("loop32"))
	Label("loop16")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: b}, Z2)
	VFMADD231PS(Mem{Base: a}, Z2, Z0)
	Label("done")
	VADDPS(Z1, Z0, Z0)
	hsum(Z0, Z1)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}

func genAxpyF16() {
	text("axpyF16AVX512", NOSPLIT, "func(alpha float32, x *uint16, y *float32, n16 int)")
	Doc("axpyF16AVX512 computes y += alpha*f16(x) over the first n16 values (a multiple of 16).")
	VBROADCASTSS(NewParamAddr("alpha", 0), Z0)
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n16"), GP64())
	Label("loop")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: x}, Z2)
	VMOVUPS(Mem{Base: y}, Z1)
	VFMADD231PS(Z2, Z0, Z1)
	VMOVUPS(Z1, Mem{Base: y})
	ADDQ(U8(32), x)
	ADDQ(U8(64), y)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

func genCvt() {
	text("f32ToF16AVX512", NOSPLIT, "func(dst *uint16, src *float32, n16 int)")
	Doc("f32ToF16AVX512 converts n16 values (a multiple of 16), rounding to nearest even.")
	d := Load(Param("dst"), GP64())
	s := Load(Param("src"), GP64())
	n := Load(Param("n16"), GP64())
	Label("loop")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VMOVUPS(Mem{Base: s}, Z0)
	VCVTPS2PH(U8(0), Z0, Mem{Base: d})
	ADDQ(U8(64), s)
	ADDQ(U8(32), d)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	text("f16ToF32AVX512", NOSPLIT, "func(dst *float32, src *uint16, n16 int)")
	Doc("f16ToF32AVX512 converts n16 values (a multiple of 16).")
	d = Load(Param("dst"), GP64())
	s = Load(Param("src"), GP64())
	n = Load(Param("n16"), GP64())
	Label("loop")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: s}, Z0)
	VMOVUPS(Z0, Mem{Base: d})
	ADDQ(U8(32), s)
	ADDQ(U8(64), d)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// genTile emits tile<wt>_<mr>x<nr>: for i < mr, j < nr,
// y[i*ldy+j] += sum_{c<k16} x[i*ldx+c] * w_j[c], where w_j starts ldw bytes
// after w_{j-1} and holds float32, binary16 or bfloat16 values.
func genTile(wt string, mr, nr int) {
	name := fmt.Sprintf("tile%s_%dx%d", wt, mr, nr)
	text(name, NOSPLIT, "func(x *float32, ldx int, w *byte, ldw int, k16 int, y *float32, ldy int)")
	Doc(name + " accumulates a register tile of dot products (see genTile).")
	wsize := 4
	if wt != "F32" {
		wsize = 2
	}
	xp := make([]Register, mr)
	x0 := Load(Param("x"), GP64())
	ldx := Load(Param("ldx"), GP64())
	SHLQ(U8(2), ldx)
	for i := range xp {
		if i == 0 {
			xp[i] = x0
			continue
		}
		xp[i] = GP64()
		LEAQ(Mem{Base: xp[i-1], Index: ldx, Scale: 1}, xp[i])
	}
	wp := make([]Register, nr)
	w0 := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	for j := range wp {
		if j == 0 {
			wp[j] = w0
			continue
		}
		wp[j] = GP64()
		LEAQ(Mem{Base: wp[j-1], Index: ldw, Scale: 1}, wp[j])
	}
	end := Load(Param("k16"), GP64())
	if wsize == 4 {
		SHLQ(U8(2), end)
	} else {
		SHLQ(U8(1), end)
	}
	off := GP64()
	XORQ(off, off)
	acc := func(i, j int) VecPhysical { return zr[i*nr+j] }
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			VXORPS(acc(i, j), acc(i, j), acc(i, j))
		}
	}
	xs := zr[20:24]
	ws := zr[24:29]
	xscale := uint8(4 / wsize)
	Label("loop")
	CMPQ(off, end)
	JGE(LabelRef("reduce"))
	for j := 0; j < nr; j++ {
		m := Mem{Base: wp[j], Index: off, Scale: 1}
		switch wt {
		case "F32":
			VMOVUPS(m, ws[j])
		case "F16":
			VCVTPH2PS(m, ws[j])
		case "BF16":
			VPMOVZXWD(m, ws[j])
			VPSLLD(U8(16), ws[j], ws[j])
		}
	}
	for i := 0; i < mr; i++ {
		VMOVUPS(Mem{Base: xp[i], Index: off, Scale: xscale}, xs[i])
		for j := 0; j < nr; j++ {
			VFMADD231PS(ws[j], xs[i], acc(i, j))
		}
	}
	ADDQ(U8(16*wsize), off)
	JMP(LabelRef("loop"))
	Label("reduce")
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			a := acc(i, j)
			hsum(a, Z31)
			VADDSS(Mem{Base: y, Disp: 4 * j}, a.AsX(), a.AsX())
			VMOVSS(a.AsX(), Mem{Base: y, Disp: 4 * j})
		}
		if i+1 < mr {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}

// genQRows emits <q>Rows<nr>: for j < nr, y[j] = sum over nb blocks of
// row j (ldw bytes apart; scales then quants) times x (nb*32 floats).
// Q4 also takes xsum[b] = sum of x over block b, for the -8 offset.
func genQRows(q string, nr int) {
	name := fmt.Sprintf("rows%s_%d", q, nr)
	sig := "func(x *float32, w *byte, ldw int, nb int, y *float32)"
	if q == "Q4" {
		sig = "func(x *float32, xsum *float32, w *byte, ldw int, nb int, y *float32)"
	}
	text(name, NOSPLIT, sig)
	Doc(name + " computes block-quantized dot products (see genQRows).")
	qbytes := 32
	if q == "Q4" {
		qbytes = 16
	}
	local := AllocLocal(64 * nr)
	xp := Load(Param("x"), GP64())
	var xsp Register
	if q == "Q4" {
		xsp = Load(Param("xsum"), GP64())
	}
	nb := Load(Param("nb"), GP64())
	ldw := Load(Param("ldw"), GP64())
	sp := make([]Register, nr) // scale pointers
	qp := make([]Register, nr) // quant pointers
	sp[0] = Load(Param("w"), GP64())
	for j := 1; j < nr; j++ {
		sp[j] = GP64()
		LEAQ(Mem{Base: sp[j-1], Index: ldw, Scale: 1}, sp[j])
	}
	for j := 0; j < nr; j++ {
		qp[j] = GP64()
		LEAQ(Mem{Base: sp[j], Index: nb, Scale: 2}, qp[j])
	}
	acc := zr[0:4]
	corr := zr[4:8]
	for j := 0; j < nr; j++ {
		VXORPS(acc[j], acc[j], acc[j])
		VXORPS(corr[j], corr[j], corr[j])
	}
	x0, x1 := Z8, Z9
	mask := Z10
	if q == "Q4" {
		t := GP32()
		MOVL(U32(15), t)
		VPBROADCASTD(t, mask)
	}
	sreg := GP64()
	// body processes one block per row at static displacement blk.
	body := func(blk int) {
		VMOVUPS(Mem{Base: xp, Disp: blk * 128}, x0)
		VMOVUPS(Mem{Base: xp, Disp: blk*128 + 64}, x1)
		for j := 0; j < nr; j++ {
			a, b := zr[12+2*j], zr[13+2*j]
			if q == "Q8" {
				VPMOVSXBD(Mem{Base: qp[j], Disp: blk * qbytes}, a)
				VPMOVSXBD(Mem{Base: qp[j], Disp: blk*qbytes + 16}, b)
			} else {
				VPMOVZXBD(Mem{Base: qp[j], Disp: blk * qbytes}, a)
				VPSRLD(U8(4), a, b)
				VPANDD(mask, a, a)
			}
			VCVTDQ2PS(a, a)
			VCVTDQ2PS(b, b)
			VMULPS(x0, a, a)
			VFMADD231PS(x1, b, a)
			VFMADD231PS_BCST(Mem{Base: sreg, Disp: 64*j + 4*blk}, a, acc[j])
		}
	}
	// loadScales converts the next 16 (or masked fewer) scales of each row
	// to the local buffer, and folds the q4 offset correction.
	loadScales := func(masked bool) {
		LEAQ(local, sreg)
		for j := 0; j < nr; j++ {
			s := zr[20+j]
			if masked {
				VCVTPH2PS_Z(Mem{Base: sp[j]}, K1, s)
			} else {
				VCVTPH2PS(Mem{Base: sp[j]}, s)
			}
			VMOVUPS(s, Mem{Base: sreg, Disp: 64 * j})
			if q == "Q4" {
				if masked {
					VMOVUPS_Z(Mem{Base: xsp}, K1, Z11)
				} else {
					VMOVUPS(Mem{Base: xsp}, Z11)
				}
				VFMADD231PS(Z11, s, corr[j])
			}
		}
	}
	advance := func(blocks int) {
		ADDQ(U32(blocks*128), xp)
		if q == "Q4" {
			ADDQ(U32(blocks*4), xsp)
		}
		for j := 0; j < nr; j++ {
			ADDQ(U32(blocks*2), sp[j])
			ADDQ(U32(blocks*qbytes), qp[j])
		}
	}
	Label("group")
	CMPQ(nb, U8(16))
	JL(LabelRef("tail"))
	loadScales(false)
	for blk := 0; blk < 16; blk++ {
		body(blk)
	}
	advance(16)
	SUBQ(U8(16), nb)
	JMP(LabelRef("group"))

	Label("tail")
	TESTQ(nb, nb)
	JZ(LabelRef("reduce"))
	t := GP64()
	MOVQ(U32(1), t)
	SHLXQ(nb, t, t)
	DECQ(t)
	KMOVW(t.As32(), K1)
	loadScales(true)
	Label("tailblock")
	body(0)
	ADDQ(U8(4), sreg)
	ADDQ(U8(128), xp)
	for j := 0; j < nr; j++ {
		ADDQ(U8(qbytes), qp[j])
	}
	DECQ(nb)
	JNZ(LabelRef("tailblock"))

	Label("reduce")
	y := Load(Param("y"), GP64())
	for j := 0; j < nr; j++ {
		hsum(acc[j], Z31)
		if q == "Q4" {
			hsum(corr[j], Z31)
			// acc - 8*corr
			t := GP32()
			MOVL(U32(0x41000000), t) // 8.0
			VMOVD(t, X30)
			VFNMADD231SS(X30, corr[j].AsX(), acc[j].AsX())
		}
		VMOVSS(acc[j].AsX(), Mem{Base: y, Disp: 4 * j})
	}
	VZEROUPPER()
	RET()
}

// genDequant emits dequant<q>(dst, scales, quants, nb): writes nb*32 floats
// of a block-quantized row.
func genDequant(q string) {
	name := "dequant" + q
	text(name, NOSPLIT, "func(dst *float32, scales *byte, quants *byte, nb int)")
	Doc(name + " dequantizes nb whole blocks (binary16 scales, quants) into dst.")
	d := Load(Param("dst"), GP64())
	s := Load(Param("scales"), GP64())
	qp := Load(Param("quants"), GP64())
	nb := Load(Param("nb"), GP64())
	if q == "Q4" {
		t := GP32()
		MOVL(U32(15), t)
		VPBROADCASTD(t, Z10)
		MOVL(U32(8), t)
		VPBROADCASTD(t, Z11)
	}
	Label("loop")
	TESTQ(nb, nb)
	JZ(LabelRef("done"))
	t := GP32()
	MOVWLZX(Mem{Base: s}, t)
	VPBROADCASTW(t, Y2)
	VCVTPH2PS(Y2, Z2)
	if q == "Q8" {
		VPMOVSXBD(Mem{Base: qp}, Z0)
		VPMOVSXBD(Mem{Base: qp, Disp: 16}, Z1)
	} else {
		VPMOVZXBD(Mem{Base: qp}, Z0)
		VPSRLD(U8(4), Z0, Z1)
		VPANDD(Z10, Z0, Z0)
		VPSUBD(Z11, Z0, Z0)
		VPSUBD(Z11, Z1, Z1)
	}
	VCVTDQ2PS(Z0, Z0)
	VCVTDQ2PS(Z1, Z1)
	VMULPS(Z2, Z0, Z0)
	VMULPS(Z2, Z1, Z1)
	VMOVUPS(Z0, Mem{Base: d})
	VMOVUPS(Z1, Mem{Base: d, Disp: 64})
	ADDQ(U8(2), s)
	if q == "Q8" {
		ADDQ(U8(32), qp)
	} else {
		ADDQ(U8(16), qp)
	}
	ADDQ(U32(128), d)
	DECQ(nb)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// genQuantizeX emits quantizeX<q>(x, nb, xq, dx, xqs): quantizes nb blocks
// of 32 floats (nb a multiple of 4) to int8 with one float32 scale per block
// (dx = max|x|/127, xq = round(x/dx)) and stores the per-block sum of xq as
// float32. Q8 stores each block's 32 bytes in order; Q4 stores groups of
// four blocks as 64 bytes of first halves then 64 bytes of second halves,
// matching the nibble order of q4 weights.
func genQuantizeX(q string) {
	name := "quantizeX" + q
	text(name, NOSPLIT, "func(x *float32, nb int, xq *byte, dx *float32, xqs *float32)")
	Doc(name + " quantizes activations per block for the VNNI kernels (see genQuantizeX).")
	x := Load(Param("x"), GP64())
	nb := Load(Param("nb"), GP64())
	xq := Load(Param("xq"), GP64())
	dx := Load(Param("dx"), GP64())
	xqs := Load(Param("xqs"), GP64())
	t := GP32()
	MOVL(U32(0x7fffffff), t)
	VPBROADCASTD(t, Z15)
	MOVL(U32(0x3c010204), t) // 1/127
	VMOVD(t, X14)
	MOVL(U32(0x42fe0000), t) // 127
	VMOVD(t, X13)
	MOVL(U32(0x0da24260), t) // 1e-30
	VMOVD(t, X12)
	block := func(lo, hi Mem) {
		VMOVUPS(Mem{Base: x}, Z0)
		VMOVUPS(Mem{Base: x, Disp: 64}, Z1)
		VANDPS(Z15, Z0, Z2)
		VANDPS(Z15, Z1, Z3)
		VMAXPS(Z3, Z2, Z2)
		VEXTRACTF32X8(U8(1), Z2, Y3)
		VMAXPS(Y3, Y2, Y2)
		VEXTRACTF128(U8(1), Y2, X3)
		VMAXPS(X3, X2, X2)
		VPERMILPD(U8(1), X2, X3)
		VMAXPS(X3, X2, X2)
		VMOVSHDUP(X2, X3)
		VMAXSS(X3, X2, X2)
		VMULSS(X14, X2, X5)
		VMOVSS(X5, Mem{Base: dx})
		VMAXSS(X12, X2, X2)
		VDIVSS(X2, X13, X6)
		VBROADCASTSS(X6, Z6)
		VMULPS(Z6, Z0, Z0)
		VMULPS(Z6, Z1, Z1)
		VCVTPS2DQ(Z0, Z0)
		VCVTPS2DQ(Z1, Z1)
		VPMOVSDB(Z0, lo)
		VPMOVSDB(Z1, hi)
		VPADDD(Z1, Z0, Z0)
		VEXTRACTI32X8(U8(1), Z0, Y1)
		VPADDD(Y1, Y0, Y0)
		VEXTRACTI128(U8(1), Y0, X1)
		VPADDD(X1, X0, X0)
		VPSHUFD(U8(0x4e), X0, X1)
		VPADDD(X1, X0, X0)
		VPSHUFD(U8(0xb1), X0, X1)
		VPADDD(X1, X0, X0)
		VCVTDQ2PS(X0, X0)
		VMOVSS(X0, Mem{Base: xqs})
		ADDQ(U32(128), x)
		ADDQ(U8(4), dx)
		ADDQ(U8(4), xqs)
	}
	Label("loop")
	TESTQ(nb, nb)
	JZ(LabelRef("done"))
	for k := 0; k < 4; k++ {
		if q == "Q8" {
			block(Mem{Base: xq, Disp: 32 * k}, Mem{Base: xq, Disp: 32*k + 16})
		} else {
			block(Mem{Base: xq, Disp: 16 * k}, Mem{Base: xq, Disp: 64 + 16*k})
		}
	}
	ADDQ(U32(128), xq)
	SUBQ(U8(4), nb)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// genVNNIRows emits vnniRows<q>_<nr>(xq, dx, xqs, w, ldw, nb, y): for
// j < nr, y[j] = row j (ldw bytes apart, nb blocks: scales then quants)
// dotted with activations quantized by quantizeX<q> (padded with zero
// blocks to a multiple of 16). Weights are made unsigned for VPDPBUSD (q8:
// xor 0x80, i.e. q+128; q4: the stored nibble q+8) and the offset is removed
// with the per-block sums of xq: y = sum_b dw*dx*(isum_b - off*xqs_b).
func genVNNIRows(q string, nr int, idxTable Mem) {
	name := fmt.Sprintf("vnniRows%s_%d", q, nr)
	text(name, NOSPLIT, "func(xq *byte, dx *float32, xqs *float32, w *byte, ldw int, nb int, y *float32)")
	Doc(name + " computes block-quantized dot products with VPDPBUSD (see genVNNIRows).")
	qbytes, unitBlocks, units := 32, 2, 8
	if q == "Q4" {
		qbytes, unitBlocks, units = 16, 4, 4
	}
	local := AllocLocal(128 * nr)
	xp := Load(Param("xq"), GP64())
	dxp := Load(Param("dx"), GP64())
	xqsp := Load(Param("xqs"), GP64())
	nb := Load(Param("nb"), GP64())
	ldw := Load(Param("ldw"), GP64())
	wr := make([]Register, nr)
	wr[0] = Load(Param("w"), GP64())
	for j := 1; j < nr; j++ {
		wr[j] = GP64()
		LEAQ(Mem{Base: wr[j-1], Index: ldw, Scale: 1}, wr[j])
	}
	bo := GP64() // blocks done
	XORQ(bo, bo)
	qoff := GP64() // byte offset of the current quants within a row
	LEAQ(Mem{Base: nb, Index: nb, Scale: 1}, qoff)
	t := GP32()
	if q == "Q8" {
		MOVL(U32(0x80808080), t)
	} else {
		MOVL(U32(0x0f0f0f0f), t)
	}
	VPBROADCASTD(t, Z10)
	idx := zr[24 : 24+units]
	for u := 0; u < units; u++ {
		VMOVDQU32(idxTable.Offset(64*u), idx[u])
	}
	facc, corr, S := zr[0:4], zr[4:8], zr[20:24]
	for j := 0; j < nr; j++ {
		VXORPS(facc[j], facc[j], facc[j])
		VXORPS(corr[j], corr[j], corr[j])
	}
	temps := []VecPhysical{Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z28, Z29, Z30}
	if q == "Q8" {
		temps = []VecPhysical{Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19}
	}
	// unit multiplies one unit (2 q8 / 4 q4 blocks) of every row; scale
	// returns the table operand holding row j's block scales.
	unit := func(xoff int, wmem func(j int) Mem, partial func(j int, dst VecPhysical), scale func(j int) Op, idxReg VecPhysical) {
		VMOVDQU64(Mem{Base: xp, Disp: xoff}, Z8)
		if q == "Q4" {
			VMOVDQU64(Mem{Base: xp, Disp: xoff + 64}, Z9)
		}
		for j := 0; j < nr; j++ {
			if q == "Q8" {
				a, b := temps[2*j], temps[2*j+1]
				if partial != nil {
					partial(j, a)
					VPXORD(Z10, a, a)
				} else {
					VPXORD(wmem(j), Z10, a)
				}
				VPXORD(b, b, b)
				VPDPBUSD(Z8, a, b)
				VCVTDQ2PS(b, b)
				VPERMPS(scale(j), idxReg, a)
				VFMADD231PS(a, b, facc[j])
			} else {
				a, h, b := temps[3*j], temps[3*j+1], temps[3*j+2]
				if partial != nil {
					partial(j, a)
				} else {
					VMOVDQU64(wmem(j), a)
				}
				VPSRLW(U8(4), a, h)
				VPANDD(Z10, a, a)
				VPANDD(Z10, h, h)
				VPXORD(b, b, b)
				VPDPBUSD(Z8, a, b)
				VPDPBUSD(Z9, h, b)
				VCVTDQ2PS(b, b)
				VPERMPS(scale(j), idxReg, a)
				VFMADD231PS(a, b, facc[j])
			}
		}
	}
	loadScales := func(masked bool) {
		for j := 0; j < nr; j++ {
			m := Mem{Base: wr[j], Index: bo, Scale: 2}
			if masked {
				VCVTPH2PS_Z(m, K1, S[j])
			} else {
				VCVTPH2PS(m, S[j])
			}
			VMULPS(Mem{Base: dxp, Index: bo, Scale: 4}, S[j], S[j])
			VFMADD231PS(Mem{Base: xqsp, Index: bo, Scale: 4}, S[j], corr[j])
		}
	}
	Label("group")
	CMPQ(nb, U8(16))
	JL(LabelRef("tail"))
	loadScales(false)
	for u := 0; u < units; u++ {
		unit(u*unitBlocks*32,
			func(j int) Mem { return Mem{Base: wr[j], Index: qoff, Scale: 1, Disp: u * unitBlocks * qbytes} },
			nil, func(j int) Op { return S[j] }, idx[u])
	}
	ADDQ(U32(16*32), xp)
	ADDQ(U8(16), bo)
	ADDQ(U32(16*qbytes), qoff)
	SUBQ(U8(16), nb)
	JMP(LabelRef("group"))

	Label("tail")
	TESTQ(nb, nb)
	JZ(LabelRef("reduce"))
	m := GP64()
	MOVQ(U32(1), m)
	SHLXQ(nb, m, m)
	DECQ(m)
	KMOVW(m.As32(), K1)
	loadScales(true)
	sreg := GP64()
	LEAQ(local, sreg)
	for j := 0; j < nr; j++ {
		VMOVUPS(S[j], Mem{Base: sreg, Disp: 128 * j})
	}
	Label("tailunit")
	CMPQ(nb, U8(unitBlocks))
	JL(LabelRef("partial"))
	unit(0,
		func(j int) Mem { return Mem{Base: wr[j], Index: qoff, Scale: 1} },
		nil, func(j int) Op { return Mem{Base: sreg, Disp: 128 * j} }, idx[0])
	ADDQ(U8(unitBlocks*32), xp)
	ADDQ(U8(4*unitBlocks), sreg)
	ADDQ(U8(unitBlocks*qbytes), qoff)
	SUBQ(U8(unitBlocks), nb)
	JMP(LabelRef("tailunit"))
	Label("partial")
	TESTQ(nb, nb)
	JZ(LabelRef("reduce"))
	if q == "Q8" {
		// one block left: a 32-byte load zero-extends, reading nothing past the row
		unit(0, nil, func(j int, dst VecPhysical) {
			VMOVDQU32(Mem{Base: wr[j], Index: qoff, Scale: 1}, dst.AsY())
		}, func(j int) Op { return Mem{Base: sreg, Disp: 128 * j} }, idx[0])
	} else {
		// 1-3 blocks left: masked byte load of 16 bytes per block
		SHLQ(U8(4), nb)
		MOVQ(U32(1), m)
		SHLXQ(nb, m, m)
		DECQ(m)
		KMOVQ(m, K2)
		unit(0, nil, func(j int, dst VecPhysical) {
			VMOVDQU8_Z(Mem{Base: wr[j], Index: qoff, Scale: 1}, K2, dst)
		}, func(j int) Op { return Mem{Base: sreg, Disp: 128 * j} }, idx[0])
	}

	Label("reduce")
	y := Load(Param("y"), GP64())
	off := uint32(0x43000000) // 128.0
	if q == "Q4" {
		off = 0x41000000 // 8.0
	}
	MOVL(U32(off), t)
	VMOVD(t, X30)
	for j := 0; j < nr; j++ {
		hsum(facc[j], Z31)
		hsum(corr[j], Z31)
		VFNMADD231SS(X30, corr[j].AsX(), facc[j].AsX())
		VMOVSS(facc[j].AsX(), Mem{Base: y, Disp: 4 * j})
	}
	VZEROUPPER()
	RET()
}

// bgemmMR is the most x rows a broadcast GEMM tile covers (2 vectors of
// weight rows each: 24 accumulators).
const bgemmMR = 12

// genBGEMM emits bgemm_<mr>(xp, wp, kc, y, ldy, mask): the outer-product
// GEMM micro-kernel. xp holds kc groups of mr floats (x rows interleaved,
// k-major), wp holds kc groups of 32 floats (32 weight rows, k-major).
// For i < mr and lanes l < 32 enabled in mask (bit l),
// y[i*ldy+l] += sum_k xp[k*mr+i] * wp[k*32+l].
func genBGEMM(mr int) {
	name := fmt.Sprintf("bgemm_%d", mr)
	text(name, NOSPLIT, "func(xp *float32, wp *float32, kc int, y *float32, ldy int, mask uint32)")
	Doc(name + " is the broadcast GEMM micro-kernel (see genBGEMM).")
	xp := Load(Param("xp"), GP64())
	wp := Load(Param("wp"), GP64())
	kc := Load(Param("kc"), GP64())
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
		VBROADCASTSS(Mem{Base: xp, Disp: 4 * i}, b)
		VFMADD231PS(Z24, b, zr[2*i])
		VFMADD231PS(Z25, b, zr[2*i+1])
	}
	ADDQ(U32(128), wp)
	ADDQ(U32(4*mr), xp)
	DECQ(kc)
	JNZ(LabelRef("loop"))
	Label("store")
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	m := Load(Param("mask"), GP32())
	KMOVW(m, K1)
	SHRL(U8(16), m)
	KMOVW(m, K2)
	for i := 0; i < mr; i++ {
		VMOVUPS_Z(Mem{Base: y}, K1, Z24)
		VADDPS(zr[2*i], Z24, Z24)
		VMOVUPS(Z24, K1, Mem{Base: y})
		VMOVUPS_Z(Mem{Base: y, Disp: 64}, K2, Z25)
		VADDPS(zr[2*i+1], Z25, Z25)
		VMOVUPS(Z25, K2, Mem{Base: y, Disp: 64})
		if i+1 < mr {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}

// genPackGather emits the packing routines of the broadcast GEMM.
func genPackGather() {
	// packW32(dst, src, idx, kl): for k < kl, l < 32:
	// dst[k*32+l] = float32 at src + idx[l] + 4k.
	text("packW32", NOSPLIT, "func(dst *float32, src *byte, idx *int32, kl int)")
	Doc("packW32 transposes 32 float32 rows (byte offsets idx) into k-major groups of 32.")
	d := Load(Param("dst"), GP64())
	s := Load(Param("src"), GP64())
	ix := Load(Param("idx"), GP64())
	kl := Load(Param("kl"), GP64())
	VMOVDQU32(Mem{Base: ix}, Z2)
	VMOVDQU32(Mem{Base: ix, Disp: 64}, Z3)
	TESTQ(kl, kl)
	JZ(LabelRef("done"))
	Label("loop")
	KXNORW(K1, K1, K1)
	KXNORW(K2, K2, K2)
	VGATHERDPS(Mem{Base: s, Index: Z2, Scale: 1}, K1, Z0)
	VGATHERDPS(Mem{Base: s, Index: Z3, Scale: 1}, K2, Z1)
	VMOVUPS(Z0, Mem{Base: d})
	VMOVUPS(Z1, Mem{Base: d, Disp: 64})
	ADDQ(U8(4), s)
	ADDQ(U32(128), d)
	DECQ(kl)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	// packX(dst, src, idx, mr, kl): for k < kl, i < mr:
	// dst[k*mr+i] = float32 at src + idx[i] + 4k.
	text("packX", NOSPLIT, "func(dst *float32, src *byte, idx *int32, mr int, kl int)")
	Doc("packX interleaves mr <= 16 float32 rows (byte offsets idx) into k-major groups of mr.")
	d = Load(Param("dst"), GP64())
	s = Load(Param("src"), GP64())
	ix = Load(Param("idx"), GP64())
	mrr := Load(Param("mr"), GP64())
	kl = Load(Param("kl"), GP64())
	VMOVDQU32(Mem{Base: ix}, Z2)
	mk := GP64()
	MOVQ(U32(1), mk)
	SHLXQ(mrr, mk, mk)
	DECQ(mk)
	KMOVW(mk.As32(), K3)
	SHLQ(U8(2), mrr)
	TESTQ(kl, kl)
	JZ(LabelRef("done"))
	Label("loop")
	KMOVW(K3, K1)
	VGATHERDPS(Mem{Base: s, Index: Z2, Scale: 1}, K1, Z0)
	VMOVUPS(Z0, K3, Mem{Base: d})
	ADDQ(U8(4), s)
	ADDQ(mrr, d)
	DECQ(kl)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

func genBF16ToF32() {
	text("bf16ToF32AVX512", NOSPLIT, "func(dst *float32, src *uint16, n16 int)")
	Doc("bf16ToF32AVX512 converts n16 bfloat16 values (a multiple of 16).")
	d := Load(Param("dst"), GP64())
	s := Load(Param("src"), GP64())
	n := Load(Param("n16"), GP64())
	Label("loop")
	CMPQ(n, U8(16))
	JL(LabelRef("done"))
	VPMOVZXWD(Mem{Base: s}, Z0)
	VPSLLD(U8(16), Z0, Z0)
	VMOVUPS(Z0, Mem{Base: d})
	ADDQ(U8(32), s)
	ADDQ(U8(64), d)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// genPackTranspose emits packW32T(dst, src, rowoff, kl): the same result as
// packW32 (dst[k*32+l] = float32 at src + rowoff[l] + 4k for k < kl, l < 32;
// rowoff holds int64 byte offsets) using 16×16 in-register transposes.
// dst must have room for kl rounded up to 16 groups.
func genPackTranspose() {
	text("packW32T", NOSPLIT, "func(dst *float32, src *byte, rowoff *int64, kl int)")
	Doc("packW32T transposes 32 float32 rows into k-major groups of 32 (see genPackTranspose).")
	d := Load(Param("dst"), GP64())
	s := Load(Param("src"), GP64())
	tbl := Load(Param("rowoff"), GP64())
	kl := Load(Param("kl"), GP64())
	ro := GP64()
	m := GP64()
	Label("chunk")
	TESTQ(kl, kl)
	JLE(LabelRef("done"))
	MOVQ(U32(0xffff), m)
	CMPQ(kl, U8(16))
	JGE(LabelRef("full"))
	MOVQ(U32(1), m)
	SHLXQ(kl, m, m)
	DECQ(m)
	Label("full")
	KMOVW(m.As32(), K1)
	for half := 0; half < 2; half++ {
		for r := 0; r < 16; r++ {
			MOVQ(Mem{Base: tbl, Disp: 8 * (16*half + r)}, ro)
			VMOVUPS_Z(Mem{Base: s, Index: ro, Scale: 1}, K1, zr[r])
		}
		for i := 0; i < 8; i++ {
			VUNPCKLPS(zr[2*i+1], zr[2*i], zr[16+2*i])
			VUNPCKHPS(zr[2*i+1], zr[2*i], zr[16+2*i+1])
		}
		t := zr[16:32]
		for i := 0; i < 4; i++ {
			VUNPCKLPD(t[4*i+2], t[4*i], zr[4*i])
			VUNPCKHPD(t[4*i+2], t[4*i], zr[4*i+1])
			VUNPCKLPD(t[4*i+3], t[4*i+1], zr[4*i+2])
			VUNPCKHPD(t[4*i+3], t[4*i+1], zr[4*i+3])
		}
		u := zr[0:16]
		for c := 0; c < 4; c++ {
			v0, v1, w0, w1, o := Z16, Z17, Z18, Z19, Z20
			VSHUFF32X4(U8(0x88), u[4+c], u[c], v0)
			VSHUFF32X4(U8(0xdd), u[4+c], u[c], v1)
			VSHUFF32X4(U8(0x88), u[12+c], u[8+c], w0)
			VSHUFF32X4(U8(0xdd), u[12+c], u[8+c], w1)
			for _, oc := range []struct {
				imm  uint8
				a, b VecPhysical
				col  int
			}{{0x88, v0, w0, c}, {0xdd, v0, w0, 8 + c}, {0x88, v1, w1, 4 + c}, {0xdd, v1, w1, 12 + c}} {
				VSHUFF32X4(U8(oc.imm), oc.b, oc.a, o)
				VMOVUPS(o, Mem{Base: d, Disp: 128*oc.col + 64*half})
			}
		}
	}
	ADDQ(U8(64), s)
	ADDQ(U32(16*128), d)
	SUBQ(U8(16), kl)
	JMP(LabelRef("chunk"))
	Label("done")
	VZEROUPPER()
	RET()
}

// expConsts is a table of float32 constants for expZ, broadcast into
// Z16..Z27 by loadExpConsts.
var expConsts = []float32{
	1.4426950408889634, // Z16 log2(e)
	0.693359375,        // Z17 ln2 high part
	-2.12194440e-4,     // Z18 ln2 low part
	1.0 / 720,          // Z19
	1.0 / 120,          // Z20
	1.0 / 24,           // Z21
	1.0 / 6,            // Z22
	0.5,                // Z23
	1,                  // Z24
	-104,               // Z25 below this exp is 0 in float32
	88.7,               // Z26 above this exp overflows
	0.7978845608028654, // Z27 sqrt(2/pi)
	0.044715,           // Z28
}

func loadExpConsts(tbl Mem) {
	for i := range expConsts {
		VBROADCASTSS(tbl.Offset(4*i), zr[16+i])
	}
}

// expZ replaces z with exp(z) (relative error about 2e-7; 0 below -104,
// +Inf-free clamp above 88.7), using t1, t2 as scratch.
func expZ(z, t1, t2 VecPhysical) {
	VMAXPS(Z25, z, z)
	VMINPS(Z26, z, z)
	VMULPS(Z16, z, t1)
	VRNDSCALEPS(U8(0), t1, t1) // n = round(x*log2e)
	VFNMADD231PS(Z17, t1, z)   // r = x - n*ln2hi
	VFNMADD231PS(Z18, t1, z)   // r -= n*ln2lo
	VMOVAPS(Z19, t2)
	VFMADD213PS(Z20, z, t2)
	VFMADD213PS(Z21, z, t2)
	VFMADD213PS(Z22, z, t2)
	VFMADD213PS(Z23, z, t2)
	VFMADD213PS(Z24, z, t2)
	VFMADD213PS(Z24, z, t2) // p = 1 + r(1 + r(1/2 + ...))
	VSCALEFPS(t1, t2, z)    // p * 2^n
}

// genElementwise emits the row kernels of the decoder step. Each handles
// the first n16 values (a multiple of 16); Go handles the tail.
func genElementwise() {
	tbl := GLOBL("expConsts", RODATA|NOPTR)
	for i, c := range expConsts {
		DATA(4*i, F32(c))
	}

	text("maxAVX512", NOSPLIT, "func(x *float32, n16 int) float32")
	Doc("maxAVX512 returns the largest of n16 values (n16 >= 16, a multiple of 16).")
	x := Load(Param("x"), GP64())
	n := Load(Param("n16"), GP64())
	VMOVUPS(Mem{Base: x}, Z0)
	Label("loop")
	VMAXPS(Mem{Base: x}, Z0, Z0)
	ADDQ(U8(64), x)
	SUBQ(U8(16), n)
	JNZ(LabelRef("loop"))
	VEXTRACTF32X8(U8(1), Z0, Y1)
	VMAXPS(Y1, Y0, Y0)
	VEXTRACTF128(U8(1), Y0, X1)
	VMAXPS(X1, X0, X0)
	VPERMILPD(U8(1), X0, X1)
	VMAXPS(X1, X0, X0)
	VMOVSHDUP(X0, X1)
	VMAXSS(X1, X0, X0)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()

	text("expSumAVX512", NOSPLIT, "func(x *float32, n16 int, sub float32) float32")
	Doc("expSumAVX512 replaces x[i] with exp(x[i]-sub) and returns their sum.")
	x = Load(Param("x"), GP64())
	n = Load(Param("n16"), GP64())
	VBROADCASTSS(NewParamAddr("sub", 16), Z8)
	loadExpConsts(tbl)
	VXORPS(Z9, Z9, Z9)
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	VMOVUPS(Mem{Base: x}, Z0)
	VSUBPS(Z8, Z0, Z0)
	expZ(Z0, Z1, Z2)
	VMOVUPS(Z0, Mem{Base: x})
	VADDPS(Z0, Z9, Z9)
	ADDQ(U8(64), x)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	hsum(Z9, Z1)
	VZEROUPPER()
	Store(X9, ReturnIndex(0))
	RET()

	for _, gelu := range []bool{false, true} {
		name := "siluMulAVX512"
		if gelu {
			name = "geluTanhMulAVX512"
		}
		text(name, NOSPLIT, "func(dst, gate, up *float32, n16 int)")
		if gelu {
			Doc(name + " computes dst = gelu_tanh(gate)*up = gate*sigmoid(2*sqrt(2/pi)*(gate+0.044715*gate^3))*up.")
		} else {
			Doc(name + " computes dst = gate*sigmoid(gate)*up.")
		}
		d := Load(Param("dst"), GP64())
		g := Load(Param("gate"), GP64())
		u := Load(Param("up"), GP64())
		n := Load(Param("n16"), GP64())
		loadExpConsts(tbl)
		Label("loop")
		TESTQ(n, n)
		JZ(LabelRef("done"))
		VMOVUPS(Mem{Base: g}, Z0) // g
		if gelu {
			VMULPS(Z0, Z0, Z1)      // g²
			VMULPS(Z28, Z1, Z1)     // 0.044715 g²
			VFMADD213PS(Z0, Z0, Z1) // g + 0.044715 g³
			VMULPS(Z27, Z1, Z1)     // z
			VADDPS(Z1, Z1, Z1)      // 2z
			VXORPS(Z3, Z3, Z3)
			VSUBPS(Z1, Z3, Z3) // -2z
		} else {
			VXORPS(Z3, Z3, Z3)
			VSUBPS(Z0, Z3, Z3) // -g
		}
		expZ(Z3, Z1, Z2)
		VADDPS(Z24, Z3, Z3) // 1 + exp(-a)
		VDIVPS(Z3, Z0, Z0)  // g / (1 + exp(-a))
		VMULPS(Mem{Base: u}, Z0, Z0)
		VMOVUPS(Z0, Mem{Base: d})
		ADDQ(U8(64), d)
		ADDQ(U8(64), g)
		ADDQ(U8(64), u)
		SUBQ(U8(16), n)
		JMP(LabelRef("loop"))
		Label("done")
		VZEROUPPER()
		RET()
	}

	text("mulScaleAVX512", NOSPLIT, "func(dst, x, w *float32, n16 int, s float32)")
	Doc("mulScaleAVX512 computes dst = x*s*w (w may be nil: dst = x*s).")
	d := Load(Param("dst"), GP64())
	x = Load(Param("x"), GP64())
	w := Load(Param("w"), GP64())
	n = Load(Param("n16"), GP64())
	VBROADCASTSS(NewParamAddr("s", 32), Z8)
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	VMULPS(Mem{Base: x}, Z8, Z0)
	TESTQ(w, w)
	JZ(LabelRef("store"))
	VMULPS(Mem{Base: w}, Z0, Z0)
	ADDQ(U8(64), w)
	Label("store")
	VMOVUPS(Z0, Mem{Base: d})
	ADDQ(U8(64), d)
	ADDQ(U8(64), x)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	text("addAVX512", NOSPLIT, "func(dst, a, b *float32, n16 int)")
	Doc("addAVX512 computes dst = a + b.")
	d = Load(Param("dst"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n = Load(Param("n16"), GP64())
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	VMOVUPS(Mem{Base: a}, Z0)
	VADDPS(Mem{Base: b}, Z0, Z0)
	VMOVUPS(Z0, Mem{Base: d})
	ADDQ(U8(64), d)
	ADDQ(U8(64), a)
	ADDQ(U8(64), b)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

var yr = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}

// hsumY reduces y (8 lanes) into the low lane of its X register.
func hsumY(y, t VecPhysical) {
	x := y.AsX()
	VEXTRACTF128(U8(1), y, t.AsX())
	VADDPS(t.AsX(), x, x)
	VPERMILPD(U8(1), x, t.AsX())
	VADDPS(t.AsX(), x, x)
	VMOVSHDUP(x, t.AsX())
	VADDSS(t.AsX(), x, x)
}

// genAVX2 emits the AVX2+FMA+F16C versions (8-lane YMM, 16 registers) of
// the dot products, axpys, conversions, float tiles (up to 3×3) and block
// dequantization, for CPUs without AVX-512.
func genAVX2() {
	text("dotAVX2", NOSPLIT, "func(a, b *float32, n8 int) float32")
	Doc("dotAVX2 returns the dot product of the first n8 values (a multiple of 8).")
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param("n8"), GP64())
	for i := 0; i < 4; i++ {
		VXORPS(yr[i], yr[i], yr[i])
	}
	Label("loop32")
	CMPQ(n, U8(32))
	JL(LabelRef("loop8"))
	for i := 0; i < 4; i++ {
		VMOVUPS(Mem{Base: a, Disp: 32 * i}, yr[4+i])
		VFMADD231PS(Mem{Base: b, Disp: 32 * i}, yr[4+i], yr[i])
	}
	ADDQ(U32(128), a)
	ADDQ(U32(128), b)
	SUBQ(U8(32), n)
	JMP(LabelRef("loop32"))
	Label("loop8")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VMOVUPS(Mem{Base: a}, Y4)
	VFMADD231PS(Mem{Base: b}, Y4, Y0)
	ADDQ(U8(32), a)
	ADDQ(U8(32), b)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop8"))
	Label("done")
	VADDPS(Y1, Y0, Y0)
	VADDPS(Y3, Y2, Y2)
	VADDPS(Y2, Y0, Y0)
	hsumY(Y0, Y1)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()

	text("axpyAVX2", NOSPLIT, "func(alpha float32, x, y *float32, n8 int)")
	Doc("axpyAVX2 computes y += alpha*x over the first n8 values (a multiple of 8).")
	VBROADCASTSS(NewParamAddr("alpha", 0), Y0)
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n = Load(Param("n8"), GP64())
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VMOVUPS(Mem{Base: y}, Y1)
	VFMADD231PS(Mem{Base: x}, Y0, Y1)
	VMOVUPS(Y1, Mem{Base: y})
	ADDQ(U8(32), x)
	ADDQ(U8(32), y)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	text("dotF16AVX2", NOSPLIT, "func(a *float32, b *uint16, n8 int) float32")
	Doc("dotF16AVX2 returns sum a[i]*f16(b[i]) over the first n8 values (a multiple of 8).")
	a = Load(Param("a"), GP64())
	b = Load(Param("b"), GP64())
	n = Load(Param("n8"), GP64())
	VXORPS(Y0, Y0, Y0)
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: b}, Y2)
	VFMADD231PS(Mem{Base: a}, Y2, Y0)
	ADDQ(U8(32), a)
	ADDQ(U8(16), b)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	hsumY(Y0, Y1)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()

	text("axpyF16AVX2", NOSPLIT, "func(alpha float32, x *uint16, y *float32, n8 int)")
	Doc("axpyF16AVX2 computes y += alpha*f16(x) over the first n8 values (a multiple of 8).")
	VBROADCASTSS(NewParamAddr("alpha", 0), Y0)
	x = Load(Param("x"), GP64())
	y = Load(Param("y"), GP64())
	n = Load(Param("n8"), GP64())
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: x}, Y2)
	VMOVUPS(Mem{Base: y}, Y1)
	VFMADD231PS(Y2, Y0, Y1)
	VMOVUPS(Y1, Mem{Base: y})
	ADDQ(U8(16), x)
	ADDQ(U8(32), y)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	text("f32ToF16AVX2", NOSPLIT, "func(dst *uint16, src *float32, n8 int)")
	Doc("f32ToF16AVX2 converts n8 values (a multiple of 8), rounding to nearest even.")
	d := Load(Param("dst"), GP64())
	s := Load(Param("src"), GP64())
	n = Load(Param("n8"), GP64())
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VMOVUPS(Mem{Base: s}, Y0)
	VCVTPS2PH(U8(0), Y0, Mem{Base: d})
	ADDQ(U8(32), s)
	ADDQ(U8(16), d)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	text("f16ToF32AVX2", NOSPLIT, "func(dst *float32, src *uint16, n8 int)")
	Doc("f16ToF32AVX2 converts n8 values (a multiple of 8).")
	d = Load(Param("dst"), GP64())
	s = Load(Param("src"), GP64())
	n = Load(Param("n8"), GP64())
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	VCVTPH2PS(Mem{Base: s}, Y0)
	VMOVUPS(Y0, Mem{Base: d})
	ADDQ(U8(16), s)
	ADDQ(U8(32), d)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()

	for _, wt := range []string{"F32", "F16", "BF16"} {
		for mr := 1; mr <= 3; mr++ {
			for nr := 1; nr <= 3; nr++ {
				genTileAVX2(wt, mr, nr)
			}
		}
	}
	for _, q := range []string{"Q8", "Q4"} {
		name := "dequant" + q + "AVX2"
		text(name, NOSPLIT, "func(dst *float32, scales *byte, quants *byte, nb int)")
		Doc(name + " dequantizes nb whole blocks (binary16 scales, quants) into dst.")
		d := Load(Param("dst"), GP64())
		s := Load(Param("scales"), GP64())
		qp := Load(Param("quants"), GP64())
		nb := Load(Param("nb"), GP64())
		if q == "Q4" {
			t := GP32()
			MOVL(U32(15), t)
			VMOVD(t, X10)
			VPBROADCASTD(X10, Y10)
			MOVL(U32(8), t)
			VMOVD(t, X11)
			VPBROADCASTD(X11, Y11)
		}
		Label("loop")
		TESTQ(nb, nb)
		JZ(LabelRef("done"))
		t := GP32()
		MOVWLZX(Mem{Base: s}, t)
		VMOVD(t, X8)
		VCVTPH2PS(X8, X8)
		VBROADCASTSS(X8, Y8)
		if q == "Q8" {
			for i := 0; i < 4; i++ {
				VPMOVSXBD(Mem{Base: qp, Disp: 8 * i}, yr[i])
			}
		} else {
			VPMOVZXBD(Mem{Base: qp}, Y0)
			VPMOVZXBD(Mem{Base: qp, Disp: 8}, Y1)
			VPSRLD(U8(4), Y0, Y2)
			VPSRLD(U8(4), Y1, Y3)
			for i := 0; i < 4; i++ {
				VPAND(Y10, yr[i], yr[i])
				VPSUBD(Y11, yr[i], yr[i])
			}
		}
		for i := 0; i < 4; i++ {
			VCVTDQ2PS(yr[i], yr[i])
			VMULPS(Y8, yr[i], yr[i])
			VMOVUPS(yr[i], Mem{Base: d, Disp: 32 * i})
		}
		ADDQ(U8(2), s)
		if q == "Q8" {
			ADDQ(U8(32), qp)
		} else {
			ADDQ(U8(16), qp)
		}
		ADDQ(U32(128), d)
		DECQ(nb)
		JMP(LabelRef("loop"))
		Label("done")
		VZEROUPPER()
		RET()
	}
}

// genTileAVX2 is genTile with 8-lane YMM registers (k8 a multiple of 8).
func genTileAVX2(wt string, mr, nr int) {
	name := fmt.Sprintf("tile%sAVX2_%dx%d", wt, mr, nr)
	text(name, NOSPLIT, "func(x *float32, ldx int, w *byte, ldw int, k8 int, y *float32, ldy int)")
	Doc(name + " accumulates a register tile of dot products (see genTile).")
	wsize := 4
	if wt != "F32" {
		wsize = 2
	}
	xp := make([]Register, mr)
	xp[0] = Load(Param("x"), GP64())
	ldx := Load(Param("ldx"), GP64())
	SHLQ(U8(2), ldx)
	for i := 1; i < mr; i++ {
		xp[i] = GP64()
		LEAQ(Mem{Base: xp[i-1], Index: ldx, Scale: 1}, xp[i])
	}
	wp := make([]Register, nr)
	wp[0] = Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	for j := 1; j < nr; j++ {
		wp[j] = GP64()
		LEAQ(Mem{Base: wp[j-1], Index: ldw, Scale: 1}, wp[j])
	}
	end := Load(Param("k8"), GP64())
	if wsize == 4 {
		SHLQ(U8(2), end)
	} else {
		SHLQ(U8(1), end)
	}
	off := GP64()
	XORQ(off, off)
	acc := func(i, j int) VecPhysical { return yr[i*nr+j] }
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			VXORPS(acc(i, j), acc(i, j), acc(i, j))
		}
	}
	xs := yr[9:12]
	ws := yr[12:15]
	xscale := uint8(4 / wsize)
	Label("loop")
	CMPQ(off, end)
	JGE(LabelRef("reduce"))
	for j := 0; j < nr; j++ {
		m := Mem{Base: wp[j], Index: off, Scale: 1}
		switch wt {
		case "F32":
			VMOVUPS(m, ws[j])
		case "F16":
			VCVTPH2PS(m, ws[j])
		case "BF16":
			VPMOVZXWD(m, ws[j])
			VPSLLD(U8(16), ws[j], ws[j])
		}
	}
	for i := 0; i < mr; i++ {
		VMOVUPS(Mem{Base: xp[i], Index: off, Scale: xscale}, xs[i])
		for j := 0; j < nr; j++ {
			VFMADD231PS(ws[j], xs[i], acc(i, j))
		}
	}
	ADDQ(U8(8*wsize), off)
	JMP(LabelRef("loop"))
	Label("reduce")
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			a := acc(i, j)
			hsumY(a, Y15)
			VADDSS(Mem{Base: y, Disp: 4 * j}, a.AsX(), a.AsX())
			VMOVSS(a.AsX(), Mem{Base: y, Disp: 4 * j})
		}
		if i+1 < mr {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}
