//go:build asmgen

package main

import (
	"fmt"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/reg"
)

// The Go assembler knows VPDPBUSD only in its EVEX form (AVX-512 VNNI, which
// needs AVX512VL for ymm registers and faults on a CPU that has AVX-VNNI
// alone: Alder Lake and later Intel client chips). The avx2+vnni route's
// kernels therefore emit the VEX form (AVX-VNNI) as bytes, register
// operands only (every vector register of these kernels is physical; the
// general-purpose ones are allocated after the bytes would have to be
// known).

// vexVPDPBUSD emits acc += the sums of four products of the unsigned bytes
// of u and the signed bytes of s, per dword (the Go assembler's
// VPDPBUSD s, u, acc), VEX-encoded; ymm registers Y0-Y15 only.
func vexVPDPBUSD(s, u, acc VecPhysical) {
	b := vexVPDPBUSDBytes(regIndex(s), regIndex(u), regIndex(acc))
	words := make([]string, len(b))
	for i, v := range b {
		words[i] = fmt.Sprintf("BYTE $0x%02x", v)
	}
	op := fmt.Sprintf("%s // VPDPBUSD %s, %s, %s (VEX: AVX-VNNI)", strings.Join(words, "; "), s.Asm(), u.Asm(), acc.Asm())
	Instruction(&ir.Instruction{Opcode: op})
}

// regIndex is the hardware number of a ymm register (Y0-Y15).
func regIndex(v VecPhysical) int {
	if v.Size() != 32 || v.PhysicalIndex() > 15 {
		panic(fmt.Sprintf("vex: %s is not one of Y0-Y15", v.Asm()))
	}
	return int(v.PhysicalIndex())
}

// vexVPDPBUSDBytes is the encoding of VPDPBUSD ymm(acc), ymm(u), ymm(s) in
// Intel's operand order: VEX.256.66.0F38.W0 50 /r with the three-byte prefix
// C4; ModRM.reg = acc, VEX.vvvv = u (inverted), ModRM.rm = s (register).
func vexVPDPBUSDBytes(s, u, acc int) []byte {
	inv := func(bit int) byte { return byte(^bit & 1) }
	b1 := inv(acc>>3)<<7 | 1<<6 | inv(s>>3)<<5 | 0x02 // R̄ X̄ B̄, map 0F38
	b2 := byte(^u&15)<<3 | 1<<2 | 0x01                // W0, v̄v̄v̄v̄, L=256, pp=66
	modrm := byte(0xc0 | (acc&7)<<3 | s&7)
	return []byte{0xc4, b1, b2, 0x50, modrm}
}
