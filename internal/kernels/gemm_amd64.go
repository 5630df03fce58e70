//go:build amd64 && !purego

package kernels

import "unsafe"

// The q8/q4 matrix product for m >= tileM input rows on AVX-512 where the
// int8 kernels do not apply (ExactQuantized pools, rows of partial blocks;
// the others take vnniTileRows or, without VNNI, i8TileRows) uses an
// outer-product micro-kernel (bgemm_<mr>): 12 input rows × 32 weight rows
// of accumulators, 32 weights loaded as two vectors and each input value
// broadcast per k. Both operands are packed k-major per block of gemmKC
// columns: inputs once per block for all panels, weights per 32-row panel
// (gathered, after converting f16/bf16/q8/q4 rows to float32).
const (
	bgemmMR = 12  // input rows per micro-kernel (must match asmgen)
	gemmKC  = 256 // columns per block: a packed weight panel (32 KiB) stays in L1
	gemmNR  = 32  // weight rows per panel: two vectors
)

var bgemm = [bgemmMR]func(xp *float32, wp *float32, kc int, y *float32, ldy int, mask uint32){
	bgemm_1, bgemm_2, bgemm_3, bgemm_4, bgemm_5, bgemm_6, bgemm_7, bgemm_8, bgemm_9, bgemm_10, bgemm_11, bgemm_12,
}

// gemmScratch is one thread's packing memory for the matrix product.
type gemmScratch struct {
	xpk    []float32 // [group][k][mr] packed inputs of one column block
	wpk    []float32 // [k][32] packed weight panel
	rowbuf []float32 // [32][gemmKC] weight rows converted to float32
	xidx   [16]int32 // byte offsets of the input rows of a group
	rowoff [32]int64 // byte offsets of the weight rows of a panel
}

func (p *Pool) gemmScratch(id, m int) *gemmScratch {
	s := p.scratch[id].gemm
	if s == nil {
		s = &gemmScratch{
			wpk:    make([]float32, gemmKC*gemmNR),
			rowbuf: make([]float32, gemmNR*gemmKC),
		}
		p.scratch[id].gemm = s
	}
	groups := (m + bgemmMR - 1) / bgemmMR
	if len(s.xpk) < groups*bgemmMR*gemmKC {
		s.xpk = make([]float32, groups*bgemmMR*gemmKC)
	}
	return s
}

// bgemmRows computes output columns [lo, hi) of y for m >= tileM.
func bgemmRows(p *Pool, id int, j *matmulJob, lo, hi int) {
	w, m, cols := j.w, j.m, j.w.Cols
	initRows(j.y, m, w.Rows, j.bias, lo, hi)
	s := p.gemmScratch(id, m)
	rb := w.Type.RowBytes(cols)
	for i := range s.xidx {
		s.xidx[i] = int32(i * cols * 4)
	}
	for kb := 0; kb < cols; kb += gemmKC {
		kl := min(gemmKC, cols-kb)
		for g := 0; g*bgemmMR < m; g++ {
			mr := min(bgemmMR, m-g*bgemmMR)
			packX(&s.xpk[g*bgemmMR*gemmKC], f32Bytes(&j.x[g*bgemmMR*cols+kb]), &s.xidx[0], mr, kl)
		}
		for jb := lo; jb < hi; jb += gemmNR {
			n := min(gemmNR, hi-jb)
			var src *byte
			ld := rb
			if w.Type == F32 {
				src = &w.Data[jb*rb+kb*4]
			} else {
				for r := range n {
					row := w.Data[(jb+r)*rb : (jb+r+1)*rb]
					convertColumns(w.Type, row, cols, kb, kl, s.rowbuf[r*gemmKC:(r+1)*gemmKC])
				}
				src, ld = f32Bytes(&s.rowbuf[0]), gemmKC*4
			}
			for r := range s.rowoff {
				s.rowoff[r] = 0 // rows past n re-read row 0; their lanes are never stored
				if r < n {
					s.rowoff[r] = int64(r * ld)
				}
			}
			packW32T(&s.wpk[0], src, &s.rowoff[0], kl)
			mask := uint32(uint64(1)<<n - 1)
			for g := 0; g*bgemmMR < m; g++ {
				mr := min(bgemmMR, m-g*bgemmMR)
				bgemm[mr-1](&s.xpk[g*bgemmMR*gemmKC], &s.wpk[0], kl, &j.y[g*bgemmMR*w.Rows+jb], w.Rows, mask)
			}
		}
	}
}

func f32Bytes(p *float32) *byte { return (*byte)(unsafe.Pointer(p)) }

// convertColumns writes columns [kb, kb+kl) of one weight row as float32
// into dst (kb is a multiple of gemmKC, so of the block size). Quantized
// rows are written in whole blocks: dst must hold kl rounded up to 32.
func convertColumns(t WeightType, row []byte, cols, kb, kl int, dst []float32) {
	switch t {
	case F16:
		f16ToF32Slice(dst[:kl], unsafe.Slice((*uint16)(unsafe.Pointer(&row[2*kb])), kl))
	case BF16:
		bf16ToF32Slice(dst[:kl], unsafe.Slice((*uint16)(unsafe.Pointer(&row[2*kb])), kl))
	case Q8, Q4:
		nb := (cols + BlockSize - 1) / BlockSize
		b0, nbl := kb/BlockSize, (kl+BlockSize-1)/BlockSize
		full := nbl
		if kb+kl == cols && cols%BlockSize != 0 {
			full--
		}
		if full > 0 {
			if t == Q8 {
				dequantQ8(&dst[0], &row[2*b0], &row[2*nb+b0*BlockSize], full)
			} else {
				dequantQ4(&dst[0], &row[2*b0], &row[2*nb+b0*BlockSize/2], full)
			}
		}
		if full < nbl {
			dequantBlock(t, row, nb, b0+full, dst[full*BlockSize:(full+1)*BlockSize])
		}
	}
}
