//go:build asmgen

package main

import "fmt"

// The encoder: the A64 Advanced SIMD instructions the kernels use that Go's
// arm64 assembler has no mnemonic for (Go 1.26 lacks the vector
// floating-point arithmetic, the conversions, SDOT and SMMLA). Each is a
// fixed opcode with register fields Rd (bits 0-4), Rn (5-9) and Rm
// (16-20), and for the by-element forms a lane index in H (bit 11) and L
// (bit 21). enc_test.go checks every form against the GNU assembler's
// bytes.

// Opcodes of the three-register forms on .4S (or .16B sources), Rd Rn Rm.
var same3 = map[string]uint32{
	"fadd":  0x4e20d400,
	"fsub":  0x4ea0d400,
	"fmul":  0x6e20dc00,
	"fdiv":  0x6e20fc00,
	"fmax":  0x4e20f400,
	"fmin":  0x4ea0f400,
	"faddp": 0x6e20d400,
	"fmaxp": 0x6e20f400,
	"fcmgt": 0x6ea0e400,
	"smax":  0x4ea06400,
	"sdot":  0x4e809400, // .4S += .16B · .16B
	"smmla": 0x4e80a400, // .4S += .16B × .16B (2×8 by 8×2)
}

// Opcodes of the two-register forms, Rd Rn, and their arrangements.
var same2 = map[string]struct {
	op       uint32
	dst, src string
}{
	"fcvtl":   {0x0e217800, "4s", "4h"},
	"fcvtl2":  {0x4e217800, "4s", "8h"},
	"fcvtn":   {0x0e216800, "4h", "4s"},
	"fcvtn2":  {0x4e216800, "8h", "4s"},
	"scvtf":   {0x4e21d800, "4s", "4s"},
	"fcvtns":  {0x4e21a800, "4s", "4s"},
	"fcvtzs":  {0x4ea1b800, "4s", "4s"},
	"frintn":  {0x4e218800, "4s", "4s"},
	"fabs":    {0x4ea0f800, "4s", "4s"},
	"fneg":    {0x6ea0f800, "4s", "4s"},
	"fsqrt":   {0x6ea1f800, "4s", "4s"},
	"sqxtn":   {0x0e614800, "4h", "4s"}, // int32 to int16, saturating
	"sqxtn2":  {0x4e614800, "8h", "4s"},
	"sqxtnb":  {0x0e214800, "8b", "8h"}, // int16 to int8, saturating
	"sqxtnb2": {0x4e214800, "16b", "8h"},
	"shll":    {0x2e613800, "4s", "4h"}, // shift left long by 16 (bf16 to f32)
	"shll2":   {0x6e613800, "4s", "8h"},
	"faddps":  {0x7e30d800, "s", "2s"}, // scalar: lane 0 + lane 1
	"fmaxv":   {0x6e30f800, "s", "4s"},
	"addv":    {0x4eb1b800, "s", "4s"},
}

// enc3 encodes a three-register instruction; the Arm text uses the
// arrangements of its kind.
func enc3(mn string, d, n, m V) encoded {
	op, ok := same3[mn]
	if !ok {
		panic("enc3: " + mn)
	}
	src := "4s"
	if mn == "sdot" || mn == "smmla" {
		src = "16b"
	}
	return encoded{op | uint32(m)<<16 | uint32(n)<<5 | uint32(d),
		fmt.Sprintf("%s v%d.4s, v%d.%s, v%d.%s", mn, d, n, src, m, src)}
}

// enc2 encodes a two-register instruction.
func enc2(mn string, d, n V) encoded {
	f, ok := same2[mn]
	if !ok {
		panic("enc2: " + mn)
	}
	name := mn
	if mn == "sqxtnb" || mn == "sqxtnb2" {
		name = "sqxtn" + mn[6:]
	}
	if mn == "faddps" {
		name = "faddp"
	}
	var text string
	switch f.dst {
	case "s":
		text = fmt.Sprintf("%s s%d, v%d.%s", name, d, n, f.src)
	default:
		text = fmt.Sprintf("%s v%d.%s, v%d.%s", name, d, f.dst, n, f.src)
	}
	if mn == "shll" || mn == "shll2" {
		text += ", #16"
	}
	return encoded{f.op | uint32(n)<<5 | uint32(d), text}
}

// encElem encodes the by-element forms: fmla/fmul (.4S by .S[i]) and sdot
// (.4S += .16B · .4B[i]); Vm may be any of V0-V31 for these element sizes.
func encElem(mn string, d, n, m V, i int) encoded {
	var op uint32
	var text string
	switch mn {
	case "fmla":
		op, text = 0x4f801000, fmt.Sprintf("fmla v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, i)
	case "fmul":
		op, text = 0x4f809000, fmt.Sprintf("fmul v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, i)
	case "sdot":
		op, text = 0x4f80e000, fmt.Sprintf("sdot v%d.4s, v%d.16b, v%d.4b[%d]", d, n, m, i)
	default:
		panic("encElem: " + mn)
	}
	if i < 0 || i > 3 {
		panic("encElem: lane")
	}
	return encoded{op | uint32(i&1)<<21 | uint32(m)<<16 | uint32(i>>1)<<11 | uint32(n)<<5 | uint32(d), text}
}

// encSSHRB encodes sshr Vd.16B, Vn.16B, #sh (1 <= sh <= 8).
func encSSHRB(d, n V, sh int) encoded {
	return encoded{0x4f000400 | uint32(16-sh)<<16 | uint32(n)<<5 | uint32(d),
		fmt.Sprintf("sshr v%d.16b, v%d.16b, #%d", d, n, sh)}
}

// encLD4Lane encodes ld4 {Vt.s-Vt+3.s}[lane], [Xn], #16: 4 words at Xn to
// lane lane of Vt..Vt+3 (Vt <= V28: no wrapping), Xn moving on by 16.
func encLD4Lane(t V, n R, lane int) encoded {
	if t > 28 || lane < 0 || lane > 3 {
		panic("encLD4Lane")
	}
	return encoded{0x0dffa000 | uint32(lane>>1)<<30 | uint32(lane&1)<<12 | uint32(n)<<5 | uint32(t),
		fmt.Sprintf("ld4 {v%d.s-v%d.s}[%d], [x%d], #16", t, t+3, lane, n)}
}

// The instructions, Arm operand order.

func (a *asm) fadd(d, n, m V)  { a.word(enc3("fadd", d, n, m)) }
func (a *asm) fsub(d, n, m V)  { a.word(enc3("fsub", d, n, m)) }
func (a *asm) fmul(d, n, m V)  { a.word(enc3("fmul", d, n, m)) }
func (a *asm) fdiv(d, n, m V)  { a.word(enc3("fdiv", d, n, m)) }
func (a *asm) fmax(d, n, m V)  { a.word(enc3("fmax", d, n, m)) }
func (a *asm) fmin(d, n, m V)  { a.word(enc3("fmin", d, n, m)) }
func (a *asm) faddp(d, n, m V) { a.word(enc3("faddp", d, n, m)) }
func (a *asm) fmaxp(d, n, m V) { a.word(enc3("fmaxp", d, n, m)) }
func (a *asm) fcmgt(d, n, m V) { a.word(enc3("fcmgt", d, n, m)) }
func (a *asm) sdot(d, n, m V)  { a.word(enc3("sdot", d, n, m)) }
func (a *asm) smmla(d, n, m V) { a.word(enc3("smmla", d, n, m)) }

func (a *asm) fcvtl(d, n V)   { a.word(enc2("fcvtl", d, n)) }
func (a *asm) fcvtl2(d, n V)  { a.word(enc2("fcvtl2", d, n)) }
func (a *asm) fcvtn(d, n V)   { a.word(enc2("fcvtn", d, n)) }
func (a *asm) fcvtn2(d, n V)  { a.word(enc2("fcvtn2", d, n)) }
func (a *asm) scvtf(d, n V)   { a.word(enc2("scvtf", d, n)) }
func (a *asm) fcvtns(d, n V)  { a.word(enc2("fcvtns", d, n)) }
func (a *asm) fcvtzs(d, n V)  { a.word(enc2("fcvtzs", d, n)) }
func (a *asm) frintn(d, n V)  { a.word(enc2("frintn", d, n)) }
func (a *asm) fabs(d, n V)    { a.word(enc2("fabs", d, n)) }
func (a *asm) fneg(d, n V)    { a.word(enc2("fneg", d, n)) }
func (a *asm) sqxtn(d, n V)   { a.word(enc2("sqxtn", d, n)) }
func (a *asm) sqxtn2(d, n V)  { a.word(enc2("sqxtn2", d, n)) }
func (a *asm) sqxtnb(d, n V)  { a.word(enc2("sqxtnb", d, n)) }
func (a *asm) sqxtnb2(d, n V) { a.word(enc2("sqxtnb2", d, n)) }
func (a *asm) shll(d, n V)    { a.word(enc2("shll", d, n)) }
func (a *asm) shll2(d, n V)   { a.word(enc2("shll2", d, n)) }
func (a *asm) faddps(d, n V)  { a.word(enc2("faddps", d, n)) }
func (a *asm) fmaxv(d, n V)   { a.word(enc2("fmaxv", d, n)) }
func (a *asm) addv(d, n V)    { a.word(enc2("addv", d, n)) }

func (a *asm) fmlaElem(d, n, m V, i int)  { a.word(encElem("fmla", d, n, m, i)) }
func (a *asm) fmulElem(d, n, m V, i int)  { a.word(encElem("fmul", d, n, m, i)) }
func (a *asm) sdotElem(d, n, m V, i int)  { a.word(encElem("sdot", d, n, m, i)) }
func (a *asm) sshrB(d, n V, sh int)       { a.word(encSSHRB(d, n, sh)) }
func (a *asm) ld4Lane(t V, n R, lane int) { a.word(encLD4Lane(t, n, lane)) }

// Go mnemonics (Go writes the sources first, reversed, then the destination).

func (a *asm) fmla(d, n, m V)  { a.op("VFMLA", fmt.Sprintf("%s, %s, %s", m.S4(), n.S4(), d.S4())) }
func (a *asm) fmls(d, n, m V)  { a.op("VFMLS", fmt.Sprintf("%s, %s, %s", m.S4(), n.S4(), d.S4())) }
func (a *asm) add(d, n, m V)   { a.op("VADD", fmt.Sprintf("%s, %s, %s", m.S4(), n.S4(), d.S4())) }
func (a *asm) sub(d, n, m V)   { a.op("VSUB", fmt.Sprintf("%s, %s, %s", m.S4(), n.S4(), d.S4())) }
func (a *asm) addp(d, n, m V)  { a.op("VADDP", fmt.Sprintf("%s, %s, %s", m.S4(), n.S4(), d.S4())) }
func (a *asm) and(d, n, m V)   { a.op("VAND", fmt.Sprintf("%s, %s, %s", m.B16(), n.B16(), d.B16())) }
func (a *asm) orr(d, n, m V)   { a.op("VORR", fmt.Sprintf("%s, %s, %s", m.B16(), n.B16(), d.B16())) }
func (a *asm) eor(d, n, m V)   { a.op("VEOR", fmt.Sprintf("%s, %s, %s", m.B16(), n.B16(), d.B16())) }
func (a *asm) zero(d V)        { a.eor(d, d, d) }
func (a *asm) mov(d, n V)      { a.orr(d, n, n) }
func (a *asm) zip1s(d, n, m V) { a.op("VZIP1", fmt.Sprintf("%s, %s, %s", m.S4(), n.S4(), d.S4())) }
func (a *asm) zip2s(d, n, m V) { a.op("VZIP2", fmt.Sprintf("%s, %s, %s", m.S4(), n.S4(), d.S4())) }
func (a *asm) zip1d(d, n, m V) { a.op("VZIP1", fmt.Sprintf("%s, %s, %s", m.D2(), n.D2(), d.D2())) }
func (a *asm) zip2d(d, n, m V) { a.op("VZIP2", fmt.Sprintf("%s, %s, %s", m.D2(), n.D2(), d.D2())) }

// ushrB is ushr Vd.16B, Vn.16B, #sh; shlS is shl Vd.4S, Vn.4S, #sh.
func (a *asm) ushrB(d, n V, sh int) { a.opf("VUSHR", "$%d, %s, %s", sh, n.B16(), d.B16()) }
func (a *asm) shlS(d, n V, sh int)  { a.opf("VSHL", "$%d, %s, %s", sh, n.S4(), d.S4()) }

// dupS sets every lane of d to lane i of n; dupR to the low 32 bits of r.
func (a *asm) dupS(d, n V, i int) { a.opf("VDUP", "V%d.S[%d], %s", int(n), i, d.S4()) }
func (a *asm) dupR(d V, r R)      { a.opf("VDUP", "%s, %s", r, d.S4()) }

// splat sets every lane of d to the 32-bit constant c, using r.
func (a *asm) splat(d V, c uint32, r R) {
	a.opf("MOVW", "$0x%08x, %s", c, r)
	a.dupR(d, r)
}
