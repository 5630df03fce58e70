//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/align"
)

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

func packedSupported() bool { return useAVX512 }

// The packed product's constants are bgemm's.
var (
	_ = [1]int{}[packNR-gemmNR]
	_ = [1]int{}[packMR-bgemmMR]
)

// packPanels writes the float32 rows of w (Rows × Cols) into pw's panels, each by
// packPanel; the lanes of rows past Rows are zero.
func packPanels(pw *PackedF32, w []byte) {
	K, N := pw.Cols, pw.Rows
	src := align.AsF32(w)
	for pn := 0; pn*gemmNR < N; pn++ {
		n := min(gemmNR, N-pn*gemmNR)
		dst := pw.data[pn*K*gemmNR:]
		packPanel(dst, src[pn*gemmNR*K:], K, n, K)
		if n < gemmNR {
			for k := range K {
				clear(dst[k*gemmNR+n : (k+1)*gemmNR])
			}
		}
	}
}

// packedKC is the most columns of a block of the packed product: a panel's block
// (48 KiB at 384) and a group's rows pass through L1 together. 128-384 measure
// alike (TestPerfEncoderPacked); 384 is one block at a hidden size of 384.
var packedKC = 384

// bgemmRM are the packed product's micro-kernels, by input rows: they broadcast the
// inputs straight from their rows. (bgemm on inputs packed per row block by packX
// ran the encoder's shapes at 64-71 GMAC/s per thread against 85-94 for these:
// packX's gathers cost as much as a fifth of a product with 192 weight rows.)
var bgemmRM = [bgemmMR]func(x *float32, ldx int, wp *float32, kc int, y *float32, ldy int, mask uint32, bias *float32){
	bgemmRM_1, bgemmRM_2, bgemmRM_3, bgemmRM_4, bgemmRM_5, bgemmRM_6, bgemmRM_7, bgemmRM_8, bgemmRM_9, bgemmRM_10, bgemmRM_11, bgemmRM_12,
}

// item computes item i of a packed product: row block i/pg, panel group i%pg.
// For each column block, each weight panel's block passes over every group of
// bgemmMR rows of the row block (the panel's block stays in L1, the rows in L2).
func (j *PackedMatMul) item(_, i int) {
	w := j.w
	K, N := w.Cols, w.Rows
	b, pgi := i/j.pg, i%j.pg
	g0, g1 := b*j.groups/j.rb, (b+1)*j.groups/j.rb
	panels := (N + gemmNR - 1) / gemmNR
	p0, p1 := pgi*panels/j.pg, (pgi+1)*panels/j.pg
	nkb := (K + packedKC - 1) / packedKC
	kc := (K + nkb - 1) / nkb
	for kb := 0; kb < K; kb += kc {
		kl := min(kc, K-kb)
		for pn := p0; pn < p1; pn++ {
			n := min(gemmNR, N-pn*gemmNR)
			wp, mask := &w.data[pn*K*gemmNR+kb*gemmNR], uint32(uint64(1)<<n-1)
			// The first column block writes its sums plus the bias; the others add theirs.
			var bias *float32
			if kb == 0 {
				bias = &zeroPanel[0]
				if j.bias != nil {
					bias = &j.bias[pn*gemmNR]
				}
			}
			for g := g0; g < g1; g++ {
				mr := min(bgemmMR, j.m-g*bgemmMR)
				bgemmRM[mr-1](&j.x[g*bgemmMR*K+kb], K, wp, kl, &j.y[g*bgemmMR*N+pn*gemmNR], N, mask, bias)
			}
		}
	}
	if j.Epilogue != nil {
		c0, c1 := p0*gemmNR, min(p1*gemmNR, N)
		for r := g0 * bgemmMR; r < min(g1*bgemmMR, j.m); r++ {
			row := j.y[r*N+c0 : r*N+c1]
			j.Epilogue(row, row)
		}
	}
}

// zeroPanel is the bias of a packed product without one.
var zeroPanel [gemmNR]float32

func gelu(dst, x []float32) bool {
	if !useAVX512 {
		return false
	}
	gelu16(&dst[0], &x[0], len(x), &geluPoly[0][0])
	return true
}

func panelMulAdd(y []float32, ldy int, x []float32, ldx, m int, p []float32, kc, n int) {
	mask := uint32(uint64(1)<<n - 1)
	for i := 0; i < m; i += bgemmMR {
		mr := min(bgemmMR, m-i)
		bgemmRM[mr-1](&x[i*ldx], ldx, &p[0], kc, &y[i*ldy], ldy, mask, nil)
	}
}

func packPanel(dst, src []float32, ld, rows, cols int) {
	var rowoff [gemmNR]int64
	for r := range rowoff {
		rowoff[r] = int64(min(r, rows-1) * ld * 4)
	}
	packW32T(&dst[0], f32Bytes(&src[0]), &rowoff[0], cols)
}

func layerNorm(dst, x, w, b []float32, eps float32) bool {
	if !useAVX512 {
		return false
	}
	layerNorm16(&dst[0], &x[0], &w[0], &b[0], len(x), eps)
	return true
}
