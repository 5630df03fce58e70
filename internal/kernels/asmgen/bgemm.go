//go:build asmgen

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

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
	y, ldy := bgemmStoreArgs()
	bgemmAddStore(mr, y, ldy)
	VZEROUPPER()
	RET()
}

// bgemmStoreArgs loads the output's address, its row stride in bytes, and
// the lane mask into K1 (lanes 0-15) and K2 (lanes 16-31), as the broadcast
// GEMM kernels' stores take them.
func bgemmStoreArgs() (y, ldy Register) {
	y = Load(Param("y"), GP64())
	ldy = Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	m := Load(Param("mask"), GP32())
	KMOVW(m, K1)
	SHRL(U8(16), m)
	KMOVW(m, K2)
	return y, ldy
}

// bgemmAddStore adds the mr×32 accumulators zr to the rows of y (ldy bytes
// apart), lanes masked by K1 and K2; it advances y.
func bgemmAddStore(mr int, y, ldy Register) {
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
}

// genPackGather emits packX, which packs the inputs of the broadcast GEMM
// with gathers (a handful of rows, reused across every weight panel).
func genPackGather() {
	// packX(dst, src, idx, mr, kl): for k < kl, i < mr:
	// dst[k*mr+i] = float32 at src + idx[i] + 4k.
	text("packX", NOSPLIT, "func(dst *float32, src *byte, idx *int32, mr int, kl int)")
	Doc("packX interleaves mr <= 16 float32 rows (byte offsets idx) into k-major groups of mr.")
	d := Load(Param("dst"), GP64())
	s := Load(Param("src"), GP64())
	ix := Load(Param("idx"), GP64())
	mrr := Load(Param("mr"), GP64())
	kl := Load(Param("kl"), GP64())
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

// genPackTranspose emits packW32T(dst, src, rowoff, kl): for k < kl and
// l < 32, dst[k*32+l] = float32 at src + rowoff[l] + 4k (rowoff holds
// int64 byte offsets), using 16×16 in-register transposes.
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
