//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// The f32 matrix products of the AVX2 routes in k order (asmgen/gemmf32.go):
// every output is one chain of FMAs over the columns in order, starting
// from the bias or zero (initRows), for any number of input rows. Products
// of two or more rows pack 16 weight rows at a time k-major and run
// outer-product tiles of up to 6 input rows (gemmF32AVX2_<mr>x16); a
// matrix-vector product streams the row-major weights, transposing 8×8
// blocks in registers (rowsKF32AVX2_<g>). Both do the same float operations
// per output, so a prefill row equals the decode product bit for bit and a
// batched row equals the same row alone.

// useF32K selects the k-order f32 kernels on the AVX2 routes (tests and
// benchmarks compare them with the dot-product tiles). Off: they were no
// faster than the tiles (docs/performance.md, "k-order f32 kernels").
var useF32K = false

// f32KC is the columns of a packed panel block (its 16 rows stay in L1 for
// every group of input rows); f32KRowGroups the 8-row groups the decode
// stream keeps in flight.
var (
	f32KC         = 1 << 20
	f32KRowGroups = 2
)

// f32K reports whether the f32 product of rows of cols columns takes the
// k-order kernels: on the AVX2 routes, for whole vectors of columns.
func f32K(t WeightType, cols int) bool {
	return useF32K && !useAVX512 && useAVX2 && t == F32 && cols%8 == 0 && cols > 0
}

var gemmF32AVX2 = [gemmF32MR]func(x *float32, ldx int, w *float32, k int, y *float32, ldy int, pf *byte){
	gemmF32AVX2_1x16, gemmF32AVX2_2x16, gemmF32AVX2_3x16, gemmF32AVX2_4x16, gemmF32AVX2_5x16, gemmF32AVX2_6x16,
}

// gemmF32MR is the most input rows of a gemmF32AVX2 tile.
const gemmF32MR = 6

// f32KRows computes y[i*ldy+r] = fma chain over c of w_r[c]*x[i*cols+c],
// starting from y's values, for r < n weight rows of cols float32 columns
// (ldw bytes apart) and m input rows. s is the thread's scratch.
func f32KRows(y []float32, ldy int, x []float32, m, cols int, w []byte, ldw, n int, s *workerScratch) {
	if n <= 0 {
		return
	}
	done := 0
	if m == 1 {
		g := f32KRowGroups
		for ; g > 0; g /= 2 {
			blk := 8 * g
			if nb := n / blk * blk; nb > done {
				k := rowsKF32AVX2_1
				switch g {
				case 2:
					k = rowsKF32AVX2_2
				case 4:
					k = rowsKF32AVX2_4
				}
				k(&x[0], &w[done*ldw], ldw, cols, &y[done], nb-done)
				done = nb
			}
		}
		if done == n {
			return
		}
	}
	if m >= f32KXMin {
		f32KRowsX(y, ldy, x, m, cols, w, ldw, n, s)
		return
	}
	kc := min(f32KC, cols)
	pack := growFloats(s.buf, 16*kc+gemmF32MR*16)
	s.buf = pack
	tmp := pack[16*kc:]
	for jb := done; jb < n; jb += 16 {
		jn := min(16, n-jb)
		for kb := 0; kb < cols; kb += kc {
			kl := min(kc, cols-kb)
			if jn == 16 {
				packF32x16AVX2(&pack[0], (*float32)(unsafe.Pointer(&w[jb*ldw+4*kb])), ldw/4, kl)
			} else {
				packF32Tail(pack, w[jb*ldw:], ldw, jn, kb, kl)
			}
			for i := 0; i < m; i += gemmF32MR {
				mr := min(gemmF32MR, m-i)
				// The first 4 tiles prefetch the next 16 rows (16*kl bytes
				// each), when whole rows are in a block.
				pf := (*byte)(unsafe.Pointer(&pack[0]))
				if g := i / gemmF32MR; kl == cols && g < 4 && jb+32 <= n {
					pf = &w[(jb+16)*ldw+g*16*kl]
				}
				if jn == 16 {
					gemmF32AVX2[mr-1](&x[i*cols+kb], cols, &pack[0], kl, &y[i*ldy+jb], ldy, pf)
					continue
				}
				for a := range mr {
					copy(tmp[16*a:16*a+jn], y[(i+a)*ldy+jb:])
				}
				gemmF32AVX2[mr-1](&x[i*cols+kb], cols, &pack[0], kl, &tmp[0], 16, pf)
				for a := range mr {
					copy(y[(i+a)*ldy+jb:(i+a)*ldy+jb+jn], tmp[16*a:])
				}
			}
		}
	}
}

// packF32Tail packs the columns kb..kb+kl of jn < 16 weight rows as
// packF32x16AVX2 does, the missing rows zero.
func packF32Tail(pack []float32, w []byte, ldw, jn, kb, kl int) {
	clear(pack[:16*kl])
	for r := range jn {
		row := w[r*ldw+4*kb:]
		for c := range kl {
			pack[16*c+r] = math.Float32frombits(binary.LittleEndian.Uint32(row[4*c:]))
		}
	}
}

// f32KXMin is the fewest input rows that take f32KRowsX (0: never).
var f32KXMin = 16

var gemmXF32AVX2 = [6]func(x *float32, w *byte, ldw int, k int, b *float32, y *float32, ldy int){
	gemmXF32AVX2_1, gemmXF32AVX2_2, gemmXF32AVX2_3, gemmXF32AVX2_4, gemmXF32AVX2_5, gemmXF32AVX2_6,
}

// f32KRowsX is f32KRows for many input rows: the inputs packed k-major 16
// rows at a time, outer products with 6 weight rows read in place.
func f32KRowsX(y []float32, ldy int, x []float32, m, cols int, w []byte, ldw, n int, s *workerScratch) {
	ng := (m + 15) / 16
	xp := growFloats(s.buf, ng*16*cols+16*6)
	s.buf = xp
	tmp := xp[ng*16*cols:]
	for g := range ng {
		if g*16+16 <= m {
			packF32x16AVX2(&xp[g*16*cols], &x[g*16*cols], cols, cols)
			continue
		}
		xb := unsafe.Slice((*byte)(unsafe.Pointer(&x[g*16*cols])), 4*(m-g*16)*cols)
		packF32Tail(xp[g*16*cols:], xb, 4*cols, m-g*16, 0, cols)
	}
	var b [6]float32
	for jb := 0; jb < n; jb += 6 {
		nr := min(6, n-jb)
		copy(b[:nr], y[jb:jb+nr]) // the bias or zero: initRows
		kern := gemmXF32AVX2[nr-1]
		for g := range ng {
			if mi := m - g*16; mi < 16 {
				kern(&xp[g*16*cols], &w[jb*ldw], ldw, cols, &b[0], &tmp[0], 6)
				for i := range mi {
					copy(y[(g*16+i)*ldy+jb:(g*16+i)*ldy+jb+nr], tmp[6*i:])
				}
				continue
			}
			kern(&xp[g*16*cols], &w[jb*ldw], ldw, cols, &b[0], &y[g*16*ldy+jb], ldy)
		}
	}
}
