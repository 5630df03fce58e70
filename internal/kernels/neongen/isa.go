//go:build asmgen

package main

import "fmt"

// The target: A64 Advanced SIMD (NEON) with the dot-product extension
// (ARMv8.2 dotprod; I8MM's SMMLA for the neon+i8mm route's tiles).
//
//   - 32 vector registers V0-V31 of 128 bits: 4 float32 lanes, 16 int8
//     lanes, 4 int32 lanes of SDOT sums (each the sum of 4 int8 products).
//   - SDOT by element (sdotElem) multiplies the 4-byte groups of every lane
//     of one register with one 4-byte group of another, broadcast: the
//     matrix product's tiles use it with activations transposed so that a
//     lane is an activation row.
//   - FMLA is fused (one rounding), like FMA on amd64.
//   - Loads of 1 to 4 consecutive registers with post-increment (VLD1.P)
//     walk a stream with one instruction per 16 to 64 bytes.
//
// Every routine is a NOSPLIT leaf without a frame (ABI0, arguments at FP
// offsets). General registers: see R in asm.go.

// lanes is the float32 lanes of a vector; vecBytes its size.
const (
	lanes    = 4
	vecBytes = 16
)

// blockBytes is the int8 quants of a block of 32 (q8 weights and
// quantized activations); q4 weights hold a block in 16 bytes.
const blockBytes = 32

// qBytes is the bytes of a block's quants for weight type q.
func qBytes(q string) int {
	if q == "Q4" {
		return 16
	}
	return 32
}

// group is how many blocks one vector of block sums holds (a lane each):
// the per-output float accumulation of the q8/q4 products runs in lanes
// by block index mod group (see qstream.go).
const group = 4

// recBytes is the size of one block record of transposed activations (see
// quantize.go): 4 rows' dx, their offsets, and 8 vectors of quants.
const recBytes = 2*vecBytes + 8*vecBytes

// gp lists the general registers a kernel may use, in order.
var gp = []R{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 19, 20, 21, 22, 23, 24, 25}

// vrange returns n consecutive vector registers from v.
func vrange(v V, n int) []V {
	r := make([]V, n)
	for i := range r {
		r[i] = v + V(i)
	}
	return r
}

// lbl makes a label unique to its routine's variant.
func lbl(format string, args ...any) string { return fmt.Sprintf(format, args...) }
