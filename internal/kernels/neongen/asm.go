//go:build asmgen

package main

import (
	"fmt"
	"strings"
)

// asm collects the assembly text and the Go declarations of the generated
// routines. Its methods emit one instruction each: Go's own mnemonic where
// Go's arm64 assembler has one (loads, stores, integer and bitwise vector
// operations, FMLA), else a WORD from the encoder in enc.go, commented
// with the instruction in Arm's syntax. Operands are always given in Arm's
// order (destination first), whatever order the Go syntax writes them in.
type asm struct {
	text  strings.Builder // the routines
	data  strings.Builder // read-only tables (DATA/GLOBL)
	stubs strings.Builder // the Go declarations
	args  map[string]param
	name  string // the routine being written
	// words lists every encoded instruction (word and Arm text), for the
	// encoder's tests.
	words []encoded
}

type encoded struct {
	word uint32
	arm  string
}

type param struct {
	off  int
	kind string // "ptr" (pointers and ints) or "f32"
}

// R is a general-purpose register. Kernels use R0-R15 and R19-R25 only:
// R16/R17 may be clobbered by linker veneers, R18 is the platform
// register, R26 the closure context, R27 the assembler's temporary, R28
// the goroutine, R29 the frame pointer, R30 the link register.
type R int

func (r R) String() string { return fmt.Sprintf("R%d", int(r)) }

// V is a SIMD register (V0-V31, all caller-saved in Go's ABI0).
type V int

func (v V) B16() string { return fmt.Sprintf("V%d.B16", int(v)) }
func (v V) B8() string  { return fmt.Sprintf("V%d.B8", int(v)) }
func (v V) H8() string  { return fmt.Sprintf("V%d.H8", int(v)) }
func (v V) H4() string  { return fmt.Sprintf("V%d.H4", int(v)) }
func (v V) S4() string  { return fmt.Sprintf("V%d.S4", int(v)) }
func (v V) S2() string  { return fmt.Sprintf("V%d.S2", int(v)) }
func (v V) D2() string  { return fmt.Sprintf("V%d.D2", int(v)) }

// F is the scalar view of v (FMOVS, FMOVD, FMOVQ, FADDS ...).
func (v V) F() string { return fmt.Sprintf("F%d", int(v)) }

// list writes a register list of n consecutive registers from v.
func list(v V, n int, arr string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("V%d.%s", (int(v)+i)%32, arr)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// fn starts a routine: a TEXT line for the signature sig (Go syntax,
// pointer, int and float32 parameters, at most one float32 result) and its
// Go declaration with the doc comment. Routines are leaves without a frame.
func (a *asm) fn(name, sig, doc string) {
	if !strings.HasPrefix(sig, "func(") {
		panic("bad signature " + sig)
	}
	close := strings.Index(sig, ")")
	params, result := sig[5:close], strings.TrimSpace(sig[close+1:])
	a.name = name
	a.args = map[string]param{}
	off := 0
	for _, p := range strings.Split(params, ",") {
		f := strings.Fields(p)
		if len(f) != 2 {
			panic("bad parameter " + p + " in " + sig)
		}
		size, kind := 8, "ptr"
		if f[1] == "float32" {
			size, kind = 4, "f32"
		}
		off = (off + size - 1) &^ (size - 1)
		a.args[f[0]] = param{off, kind}
		off += size
	}
	switch result {
	case "":
	case "float32":
		off = (off + 7) &^ 7
		a.args["ret"] = param{off, "f32"}
		off += 4
	default:
		panic("bad result in " + sig)
	}
	fmt.Fprintf(&a.text, "\n// %s\nTEXT ·%s(SB), NOSPLIT|NOFRAME, $0-%d\n", strings.Replace(sig, "func", "func "+name, 1), name, off)
	fmt.Fprintf(&a.stubs, "\n%s\n//\n//go:noescape\n%s\n", comment(doc), strings.Replace(sig, "func", "func "+name, 1))
}

// comment formats doc as Go line comments.
func comment(doc string) string {
	lines := strings.Split(strings.TrimSpace(doc), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight("// "+strings.TrimSpace(l), " ")
	}
	return strings.Join(lines, "\n")
}

// load loads the parameter name (a pointer or int) into r.
func (a *asm) load(name string, r R) {
	p, ok := a.args[name]
	if !ok || p.kind != "ptr" {
		panic(a.name + ": no integer parameter " + name)
	}
	a.op("MOVD", fmt.Sprintf("%s+%d(FP), %s", name, p.off, r))
}

// loadF loads the float32 parameter name into lane 0 of v.
func (a *asm) loadF(name string, v V) {
	p, ok := a.args[name]
	if !ok || p.kind != "f32" {
		panic(a.name + ": no float32 parameter " + name)
	}
	a.op("FMOVS", fmt.Sprintf("%s+%d(FP), %s", name, p.off, v.F()))
}

// retF returns lane 0 of v as the float32 result.
func (a *asm) retF(v V) {
	a.op("FMOVS", fmt.Sprintf("%s, ret+%d(FP)", v.F(), a.args["ret"].off))
	a.ret()
}

func (a *asm) ret() { a.op("RET", "") }

// op writes one instruction in Go syntax.
func (a *asm) op(mnemonic, operands string) {
	if operands == "" {
		fmt.Fprintf(&a.text, "\t%s\n", mnemonic)
		return
	}
	fmt.Fprintf(&a.text, "\t%-8s%s\n", mnemonic, operands)
}

// opf is op with the operands formatted.
func (a *asm) opf(mnemonic, format string, args ...any) { a.op(mnemonic, fmt.Sprintf(format, args...)) }

func (a *asm) label(l string) { fmt.Fprintf(&a.text, "%s:\n", l) }

// note writes a comment line into the routine.
func (a *asm) note(format string, args ...any) {
	fmt.Fprintf(&a.text, "\t// %s\n", fmt.Sprintf(format, args...))
}

// word writes an instruction the Go assembler has no mnemonic for.
func (a *asm) word(e encoded) {
	a.words = append(a.words, e)
	fmt.Fprintf(&a.text, "\tWORD    $0x%08x // %s\n", e.word, e.arm)
}

// table emits a read-only table of 32-bit words named name.
func (a *asm) table(name string, words []uint32) {
	for i, w := range words {
		fmt.Fprintf(&a.data, "DATA %s<>+%d(SB)/4, $0x%08x\n", name, 4*i, w)
	}
	fmt.Fprintf(&a.data, "GLOBL %s<>(SB), RODATA|NOPTR, $%d\n\n", name, 4*len(words))
}

// tableAddr loads the address of table name into r.
func (a *asm) tableAddr(name string, r R) { a.opf("MOVD", "$%s<>(SB), %s", name, r) }
