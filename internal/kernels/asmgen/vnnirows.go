//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// q4Prefetch is how far ahead (bytes) the matrix-vector kernel prefetches
// weights, which it reads as one stream (rows are contiguous). The hint is
// PREFETCHNTA: the weights are read once per token, and NTA fills the line
// without the L2 allocation T0 asks for. The distances were chosen by end-to-end
// decode measurements (docs/performance.md, "Tuning constants").
const q4Prefetch = 4096

// q8Prefetch is as q4Prefetch, for q8 weights (measured the same way:
// docs/performance.md, "Tuning constants").
const q8Prefetch = 8192

// genVNNIRows emits vnniRows<q>_<nr>(xq, dx, xqs, w, ldw, nb, y): for
// j < nr, y[j] = q8 or q4 weight row j (ldw bytes apart, nb blocks: scales
// then quants) dotted with activations quantized by quantizeX<q> (padded
// with zero blocks to a multiple of 16); or with stream,
// vnniRowStream<q>(xq, dx, xqs, w, ldw, nb, y, n): vnniRows<q>_1 for n
// weight rows one after another in one call, so that the weights are read
// as one sequential stream.
func genVNNIRows(q string, nr int, stream bool) {
	f := vnniRowsFrame(q, nr, stream)
	if q == "Q8" {
		vnniRowsQ8(f)
	} else {
		vnniRowsQ4(f)
	}
}

// vnniRowsQ8 is the body of the q8 kernels. A group is 8 units of 64 weight
// bytes (two blocks); the VPDPBUSD lanes of each unit are reduced with
// in-lane unpacks, then two permutes pair the half-block sums.
func vnniRowsQ8(f *vnniFrame) {
	c80 := Z10
	avx512.splat(0x80808080, c80)
	idxE, idxO := Z8, Z9
	VMOVDQU32(q8EvenOdd, idxE)
	VMOVDQU32(q8EvenOdd.Offset(64), idxO)
	T := []VecPhysical{Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18}
	E := []VecPhysical{Z19, Z24, Z25, Z26}
	// group handles cnt blocks (16 for a whole group); units past the
	// blocks are zero, and a last half unit is loaded as 32 bytes.
	group := func(cnt int) {
		nu := (cnt + 1) / 2
		if f.stream && cnt == 16 {
			f.pageKick(Mem{Base: f.wr[0], Index: f.qoff, Scale: 1})
		}
		for j, wr := range f.wr {
			for u := range 8 {
				if u >= nu {
					VPXORD(T[u], T[u], T[u])
					continue
				}
				wv := []VecPhysical{Z27, Z28}[u%2]
				src := Mem{Base: wr, Index: f.qoff, Scale: 1, Disp: 64 * u}
				if cnt == 16 {
					PREFETCHNTA(src.Offset(q8Prefetch))
				}
				if 2*u+1 == cnt {
					VMOVDQU32(src, wv.AsY())
					VPXORD(c80, wv, wv)
				} else {
					VPXORD(src, c80, wv)
				}
				VPXORD(T[u], T[u], T[u])
				VPDPBUSD(Mem{Base: f.xp, Disp: 64 * u}, wv, T[u])
			}
			sumLanes4(T[0], T[1], T[2], T[3], E[0], E[1])
			if nu > 4 { // else T[4] is zero
				sumLanes4(T[4], T[5], T[6], T[7], E[0], E[1])
			}
			r := T[0]
			VMOVDQA64(T[0], E[2])
			VPERMT2D(T[4], idxE, E[2])
			VPERMT2D(T[4], idxO, r)
			VPADDD(E[2], r, r)
			f.accumulate(j, r)
		}
	}
	f.groups(func() { group(16) }, func() {
		for cnt := 1; cnt < 16; cnt++ {
			Label(fmt.Sprintf("tail%d", cnt))
			if cnt < 15 {
				CMPQ(f.nb, U8(cnt))
				JNE(LabelRef(fmt.Sprintf("tail%d", cnt+1)))
			}
			group(cnt)
			JMP(LabelRef("reduce"))
		}
	})
}

// q8EvenOdd holds the two permutes that pair half-block sums (see genQ8EvenOdd).
var q8EvenOdd Mem

func genQ8EvenOdd() {
	q8EvenOdd = GLOBL("vnniQ8EvenOdd", RODATA|NOPTR)
	// lane b of the reduced vector sums the two half-block sums of block b:
	// after the in-lane reduction, 128-bit lane L of vector h holds dword
	// v = unit%4 of units 4h..4h+3, half L%2 of block 2*unit + L/2.
	for l := range 32 {
		b, half := l%16, l/16
		DATA(4*l, U32(16*(b/8)+4*(2*(b%2)+half)+(b%8)/2))
	}
}

// q4BlockOrder is the permute that puts the reduced lanes in block order.
var q4BlockOrder Mem

func genQ4BlockOrder() {
	q4BlockOrder = GLOBL("vnniQ4BlockOrder", RODATA|NOPTR)
	// after the reduction, lane 4k+u holds block 4u+k of the group
	for b := range 16 {
		DATA(4*b, U32(4*(b%4)+b/4))
	}
}

// vnniRowsQ4 is the body of the q4 kernels. A group is 4 units of 64 packed
// weight bytes (4 blocks), multiplied with activations laid out by
// quantizeXQ4; the 4 dword partials of each block are reduced with in-lane
// unpacks and one permute puts the blocks in order.
func vnniRowsQ4(f *vnniFrame) {
	masks := AllocLocal(32)
	c0f := Z10
	avx512.splat(0x0f0f0f0f, c0f)
	perm := Z8
	VMOVDQU32(q4BlockOrder, perm)
	T := []VecPhysical{Z11, Z12, Z13, Z14}
	E := []VecPhysical{Z19, Z24}
	A := [][2]VecPhysical{{Z27, Z28}, {Z29, Z30}, {Z15, Z16}, {Z17, Z18}}
	// group does the first nu units (4 blocks each) of a group; the rest
	// are zero. mk (when not nil) holds the byte masks of unitMasks.
	group := func(mk *Mem, nu int) {
		if f.stream && mk == nil {
			f.pageKick(Mem{Base: f.wr[0], Index: f.qoff, Scale: 1})
		}
		for j, wr := range f.wr {
			for u := range 4 {
				if u >= nu {
					if j == 0 {
						VPXORD(T[u], T[u], T[u])
					}
					continue
				}
				a, h := A[u][0], A[u][1]
				src := Mem{Base: wr, Index: f.qoff, Scale: 1, Disp: 64 * u}
				if mk == nil {
					PREFETCHNTA(src.Offset(q4Prefetch))
					VMOVDQU64(src, a)
				} else {
					KMOVQ(mk.Offset(8*u), K2)
					VMOVDQU8_Z(src, K2, a)
				}
				VPSRLW(U8(4), a, h)
				VPANDD(c0f, a, a)
				VPANDD(c0f, h, h)
				VPXORD(T[u], T[u], T[u])
				VPDPBUSD(Mem{Base: f.xp, Disp: 128 * u}, a, T[u])
				VPDPBUSD(Mem{Base: f.xp, Disp: 128*u + 64}, h, T[u])
			}
			// 128-bit lane k of T[u] holds the 4 partials of block 4u+k
			sumLanes4(T[0], T[1], T[2], T[3], E[0], E[1])
			VPERMD(T[0], perm, T[0])
			f.accumulate(j, T[0])
		}
	}
	f.groups(func() { group(nil, 4) }, func() {
		unitMasks(f.nb, masks, 4, 4, 64)
		for nu := 1; nu <= 4; nu++ { // only the units holding blocks
			Label(fmt.Sprintf("tail%d", nu))
			if nu < 4 {
				CMPQ(f.nb, U8(4*nu))
				JG(LabelRef(fmt.Sprintf("tail%d", nu+1)))
			}
			group(&masks, nu)
			JMP(LabelRef("reduce"))
		}
	})
}
