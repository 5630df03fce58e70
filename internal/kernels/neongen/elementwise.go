//go:build asmgen

package main

import "math"

// The conversions and the element-wise row kernels of the decoder step.
// Each takes the first n4 values (a multiple of 4), a vector per step; the
// Go callers handle the rest.

// vectorLoop emits a loop over n values, 4 per step, whose body handles one
// vector (loads and stores move their pointers on).
func vectorLoop(a *asm, n R, body func()) {
	a.opf("CBZ", "%s, done", n)
	a.label("loop")
	body()
	a.opf("SUBS", "$4, %s", n)
	a.op("BNE", "loop")
	a.label("done")
	a.ret()
}

// elementFn starts a routine of the element-wise family and loads its
// pointer parameters (in order) into R0, R1, ... and n4 into R8.
func elementFn(a *asm, name, params, doc string, ptrs ...string) R {
	a.fn(name, "func("+params+")", doc)
	for i, p := range ptrs {
		a.load(p, R(i))
	}
	a.load("n4", 8)
	return 8
}

func genConverts(a *asm) {
	n := elementFn(a, "f32ToF16NEON", "dst *uint16, src *float32, n4 int",
		"f32ToF16NEON converts n4 values to binary16, rounding to nearest even (FCVTN).", "dst", "src")
	vectorLoop(a, n, func() {
		a.op("VLD1.P", "16(R1), [V0.S4]")
		a.fcvtn(0, 0)
		a.op("FMOVD.P", "F0, 8(R0)")
	})
	n = elementFn(a, "f16ToF32NEON", "dst *float32, src *uint16, n4 int",
		"f16ToF32NEON converts n4 binary16 values to float32 (exact).", "dst", "src")
	vectorLoop(a, n, func() {
		a.op("FMOVD.P", "8(R1), F0")
		a.fcvtl(0, 0)
		a.op("VST1.P", "[V0.S4], 16(R0)")
	})
	n = elementFn(a, "bf16ToF32NEON", "dst *float32, src *uint16, n4 int",
		"bf16ToF32NEON converts n4 bfloat16 values to float32 (exact).", "dst", "src")
	vectorLoop(a, n, func() {
		a.op("FMOVD.P", "8(R1), F0")
		a.shll(0, 0)
		a.op("VST1.P", "[V0.S4], 16(R0)")
	})
}

// expConsts are the float32 constants of expV, in V20-V31 (loadExpConsts).
var expConsts = []float32{
	-88,                // V20 below: 0 (2^-127 is 0 in the exponent field)
	88,                 // V21 above: clamped (exp(88) = 1.65e38)
	1.4426950408889634, // V22 log2(e)
	0.693359375,        // V23 ln2 high part
	-2.12194440e-4,     // V24 ln2 low part
	1.0 / 720,          // V25
	1.0 / 120,          // V26
	1.0 / 24,           // V27
	1.0 / 6,            // V28
	0.5,                // V29
	1,                  // V30
	0,                  // V31 (int32 127, set by loadExpConsts)
}

const expTable = "expConsts"

func expConstsTable(a *asm) {
	w := make([]uint32, len(expConsts))
	for i, c := range expConsts {
		w[i] = math.Float32bits(c)
	}
	w[len(w)-1] = 127
	a.table(expTable, w)
}

// loadExpConsts broadcasts expConsts into V20-V31, using r.
func loadExpConsts(a *asm, r R) {
	a.tableAddr(expTable, r)
	for i := range expConsts {
		a.opf("VLD1R.P", "4(%s), [V%d.S4]", r, 20+i)
	}
}

// expV replaces the lanes of z with exp(z), using n, t and u: clamp z to
// [-88, 88], n = round(z·log2e), r = z - n·ln2 (in two parts, fused),
// p = 1 + r(1 + r(1/2 + r(1/6 + r(1/24 + r(1/120 + r/720))))) (fused
// steps), exp = p·2^n with 2^n built in the exponent field (0 for n = -127).
// Relative error about 2e-7 where exp(z) is a normal float32.
func expV(a *asm, z, n, t, u V) {
	a.fmax(z, z, 20)
	a.fmin(z, z, 21)
	a.fmul(n, z, 22)
	a.frintn(n, n)
	a.fmls(z, n, 23)
	a.fmls(z, n, 24) // r
	a.mov(t, 26)
	a.fmla(t, 25, z)
	steps := []V{27, 28, 29, 30, 30}
	for i, c := range steps {
		src, dst := t, u
		if i%2 == 1 {
			src, dst = u, t
		}
		a.mov(dst, c)
		a.fmla(dst, src, z)
	}
	a.fcvtzs(n, n)
	a.add(n, n, 31)
	a.shlS(n, n, 23)
	a.fmul(z, u, n) // the last step wrote u
}

// gatedMul emits siluMulNEON, or with gelu geluTanhMulNEON: dst = gate ·
// sigmoid(a) · up, with a = gate (SiLU) or a = 2·sqrt(2/pi)·(gate +
// 0.044715·gate³) (the tanh GELU: 0.5(1+tanh(z)) = sigmoid(2z)), the
// sigmoid as gate/(1+exp(-a)).
func gatedMul(a *asm, gelu bool) {
	name, doc := "siluMulNEON", "siluMulNEON computes dst = gate*sigmoid(gate)*up over n4 values."
	if gelu {
		name, doc = "geluTanhMulNEON", "geluTanhMulNEON computes dst = gelu_tanh(gate)*up = gate*sigmoid(2*sqrt(2/pi)*(gate+0.044715*gate^3))*up over n4 values."
	}
	n := elementFn(a, name, "dst *float32, gate *float32, up *float32, n4 int", doc, "dst", "gate", "up")
	loadExpConsts(a, 9)
	if gelu {
		a.splat(18, math.Float32bits(0.044715), 9)
		a.splat(19, math.Float32bits(2*0.7978845608028654), 9)
	}
	vectorLoop(a, n, func() {
		a.op("VLD1.P", "16(R1), [V0.S4]")
		if gelu {
			a.fmul(1, 0, 0)  // g²
			a.fmul(1, 1, 18) // 0.044715 g²
			a.mov(2, 0)
			a.fmla(2, 1, 0)  // g + 0.044715 g³
			a.fmul(2, 2, 19) // 2z
			a.fneg(3, 2)
		} else {
			a.fneg(3, 0)
		}
		expV(a, 3, 4, 5, 6)
		a.fadd(3, 3, 30) // 1 + exp(-a)
		a.fdiv(0, 0, 3)
		a.op("VLD1.P", "16(R2), [V1.S4]")
		a.fmul(0, 0, 1)
		a.op("VST1.P", "[V0.S4], 16(R0)")
	})
}

func genElementwise(a *asm) {
	expConstsTable(a)
	gatedMul(a, false)
	gatedMul(a, true)

	a.fn("maxNEON", "func(x *float32, n4 int) float32", "maxNEON returns the largest of n4 values (n4 >= 4, a multiple of 4; NaN if any is NaN).")
	a.load("x", 0)
	a.load("n4", 8)
	a.op("VLD1", "(R0), [V0.S4]")
	a.label("loop")
	a.op("VLD1.P", "16(R0), [V1.S4]")
	a.fmax(0, 0, 1)
	a.op("SUBS", "$4, R8")
	a.op("BNE", "loop")
	a.fmaxp(0, 0, 0)
	a.fmaxp(0, 0, 0)
	a.retF(0)

	a.fn("expSumNEON", "func(x *float32, n4 int, sub float32) float32", "expSumNEON replaces x[i] with exp(x[i]-sub) over n4 values and returns their sum.")
	a.load("x", 0)
	a.load("n4", 8)
	a.loadF("sub", 7)
	a.dupS(7, 7, 0)
	loadExpConsts(a, 9)
	a.zero(8)
	a.opf("CBZ", "R8, done")
	a.label("loop")
	a.op("VLD1", "(R0), [V0.S4]")
	a.fsub(0, 0, 7)
	expV(a, 0, 4, 5, 6)
	a.op("VST1.P", "[V0.S4], 16(R0)")
	a.fadd(8, 8, 0)
	a.op("SUBS", "$4, R8")
	a.op("BNE", "loop")
	a.label("done")
	a.faddp(8, 8, 8)
	a.faddps(8, 8)
	a.retF(8)

	a.fn("mulScaleNEON", "func(dst *float32, x *float32, w *float32, n4 int, s float32)", "mulScaleNEON computes dst = x*s*w over n4 values (w may be nil: dst = x*s).")
	a.load("dst", 0)
	a.load("x", 1)
	a.load("w", 2)
	a.load("n4", 8)
	a.loadF("s", 7)
	a.op("CBZ", "R2, noweight")
	vectorLoopLabels(a, 8, "wloop", "wdone", func() {
		a.op("VLD1.P", "16(R1), [V0.S4]")
		a.op("VLD1.P", "16(R2), [V1.S4]")
		a.fmulElem(0, 0, 7, 0)
		a.fmul(0, 0, 1)
		a.op("VST1.P", "[V0.S4], 16(R0)")
	})
	a.ret()
	a.label("noweight")
	vectorLoop(a, 8, func() {
		a.op("VLD1.P", "16(R1), [V0.S4]")
		a.fmulElem(0, 0, 7, 0)
		a.op("VST1.P", "[V0.S4], 16(R0)")
	})

	n := elementFn(a, "addNEON", "dst *float32, a *float32, b *float32, n4 int", "addNEON computes dst = a + b over n4 values.", "dst", "a", "b")
	vectorLoop(a, n, func() {
		a.op("VLD1.P", "16(R1), [V0.S4]")
		a.op("VLD1.P", "16(R2), [V1.S4]")
		a.fadd(0, 0, 1)
		a.op("VST1.P", "[V0.S4], 16(R0)")
	})

	n = elementFn(a, "ropeNEON", "x1 *float32, x2 *float32, cos *float32, sin *float32, n4 int",
		`ropeNEON rotates n4 pairs (x1[i], x2[i]) to (x1*cos - x2*sin, x2*cos + x1*sin), each product
		rounded before the sum, as ropeGeneric computes them.`, "x1", "x2", "cos", "sin")
	vectorLoop(a, n, func() {
		a.op("VLD1", "(R0), [V0.S4]")
		a.op("VLD1", "(R1), [V1.S4]")
		a.op("VLD1.P", "16(R2), [V2.S4]")
		a.op("VLD1.P", "16(R3), [V3.S4]")
		a.fmul(4, 0, 2) // a*cos
		a.fmul(5, 1, 3) // b*sin
		a.fsub(4, 4, 5)
		a.fmul(6, 1, 2) // b*cos
		a.fmul(7, 0, 3) // a*sin
		a.fadd(6, 6, 7)
		a.op("VST1.P", "[V4.S4], 16(R0)")
		a.op("VST1.P", "[V6.S4], 16(R1)")
	})
}

// vectorLoopLabels is vectorLoop with its own labels and no return.
func vectorLoopLabels(a *asm, n R, loop, done string, body func()) {
	a.opf("CBZ", "%s, %s", n, done)
	a.label(loop)
	body()
	a.opf("SUBS", "$4, %s", n)
	a.op("BNE", loop)
	a.label(done)
}
