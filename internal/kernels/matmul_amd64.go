//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math"
)

// Shapes of the matrix-vector kernels (m < tileM): register tiles of up to
// 3 inputs × 5 weight rows of dot products for float weights, quantRows
// weight rows per call for quantized weights. panelRows weight rows are
// handled per pass so their tails are dotted while still in cache.
const (
	panelRows = 40
	tileM     = 4
	tileN     = 5
	quantRows = 4
)

type tileFunc func(x *float32, ldx int, w *byte, ldw int, k16 int, y *float32, ldy int)

// tileCFunc is a tile's carrying form (see genTile in asmgen).
type tileCFunc func(x *float32, ldx int, w *byte, ldw int, k16 int, acc *float32, flags int, y *float32, ldy int)

// tileSet is a family of register-tile kernels: up to m inputs × n weight
// rows, taking a multiple of lanes columns.
type tileSet struct {
	m, n, lanes int
	f           *[3][tileM][tileN]tileFunc
	// rows, when set, computes a single input row's products (m = 1) one
	// weight row after another with the tiles' arithmetic (rowStream*).
	rows *[3]func(x *float32, w *byte, ldw int, k16 int, y *float32, n int)
	// carry, when set, are the tiles' carrying forms: rows longer than kc
	// columns are taken kc at a time, so that a tile's input and weight
	// rows stay in L1 (floatTilesCarry).
	carry *[3][tileM][tileN]tileCFunc
	kc    int
}

var (
	tilesAVX512 = tileSet{m: tileM, n: tileN, lanes: 16, f: &tiles,
		rows: &[3]func(x *float32, w *byte, ldw int, k16 int, y *float32, n int){rowStreamF32, rowStreamF16, rowStreamBF16}}
	tilesAVX2 = tileSet{m: 4, n: 3, lanes: 8, rows: &[3]func(x *float32, w *byte, ldw int, k16 int, y *float32, n int){
		rowStreamF32AVX2, rowStreamF16AVX2, rowStreamBF16AVX2}, f: &[3][tileM][tileN]tileFunc{
		{
			{tileF32AVX2_1x1, tileF32AVX2_1x2, tileF32AVX2_1x3},
			{tileF32AVX2_2x1, tileF32AVX2_2x2, tileF32AVX2_2x3},
			{tileF32AVX2_3x1, tileF32AVX2_3x2, tileF32AVX2_3x3},
			{tileF32AVX2_4x1, tileF32AVX2_4x2, tileF32AVX2_4x3},
		},
		{
			{tileF16AVX2_1x1, tileF16AVX2_1x2, tileF16AVX2_1x3},
			{tileF16AVX2_2x1, tileF16AVX2_2x2, tileF16AVX2_2x3},
			{tileF16AVX2_3x1, tileF16AVX2_3x2, tileF16AVX2_3x3},
			{tileF16AVX2_4x1, tileF16AVX2_4x2, tileF16AVX2_4x3},
		},
		{
			{tileBF16AVX2_1x1, tileBF16AVX2_1x2, tileBF16AVX2_1x3},
			{tileBF16AVX2_2x1, tileBF16AVX2_2x2, tileBF16AVX2_2x3},
			{tileBF16AVX2_3x1, tileBF16AVX2_3x2, tileBF16AVX2_3x3},
			{tileBF16AVX2_4x1, tileBF16AVX2_4x2, tileBF16AVX2_4x3},
		},
	}, kc: 1024, carry: &[3][tileM][tileN]tileCFunc{
		{
			{tileF32AVX2C_1x1, tileF32AVX2C_1x2, tileF32AVX2C_1x3},
			{tileF32AVX2C_2x1, tileF32AVX2C_2x2, tileF32AVX2C_2x3},
			{tileF32AVX2C_3x1, tileF32AVX2C_3x2, tileF32AVX2C_3x3},
			{tileF32AVX2C_4x1, tileF32AVX2C_4x2, tileF32AVX2C_4x3},
		},
		{
			{tileF16AVX2C_1x1, tileF16AVX2C_1x2, tileF16AVX2C_1x3},
			{tileF16AVX2C_2x1, tileF16AVX2C_2x2, tileF16AVX2C_2x3},
			{tileF16AVX2C_3x1, tileF16AVX2C_3x2, tileF16AVX2C_3x3},
			{tileF16AVX2C_4x1, tileF16AVX2C_4x2, tileF16AVX2C_4x3},
		},
		{
			{tileBF16AVX2C_1x1, tileBF16AVX2C_1x2, tileBF16AVX2C_1x3},
			{tileBF16AVX2C_2x1, tileBF16AVX2C_2x2, tileBF16AVX2C_2x3},
			{tileBF16AVX2C_3x1, tileBF16AVX2C_3x2, tileBF16AVX2C_3x3},
			{tileBF16AVX2C_4x1, tileBF16AVX2C_4x2, tileBF16AVX2C_4x3},
		},
	}}
)

var tiles = [3][tileM][tileN]tileFunc{
	{
		{tileF32_1x1, tileF32_1x2, tileF32_1x3, tileF32_1x4, tileF32_1x5},
		{tileF32_2x1, tileF32_2x2, tileF32_2x3, tileF32_2x4, tileF32_2x5},
		{tileF32_3x1, tileF32_3x2, tileF32_3x3, tileF32_3x4, tileF32_3x5},
		{tileF32_4x1, tileF32_4x2, tileF32_4x3, tileF32_4x4, tileF32_4x5},
	},
	{
		{tileF16_1x1, tileF16_1x2, tileF16_1x3, tileF16_1x4, tileF16_1x5},
		{tileF16_2x1, tileF16_2x2, tileF16_2x3, tileF16_2x4, tileF16_2x5},
		{tileF16_3x1, tileF16_3x2, tileF16_3x3, tileF16_3x4, tileF16_3x5},
		{tileF16_4x1, tileF16_4x2, tileF16_4x3, tileF16_4x4, tileF16_4x5},
	},
	{
		{tileBF16_1x1, tileBF16_1x2, tileBF16_1x3, tileBF16_1x4, tileBF16_1x5},
		{tileBF16_2x1, tileBF16_2x2, tileBF16_2x3, tileBF16_2x4, tileBF16_2x5},
		{tileBF16_3x1, tileBF16_3x2, tileBF16_3x3, tileBF16_3x4, tileBF16_3x5},
		{tileBF16_4x1, tileBF16_4x2, tileBF16_4x3, tileBF16_4x4, tileBF16_4x5},
	},
}

var vnniRowsQ8 = [quantRows]func(xq *byte, dx *float32, xqs *float32, w *byte, ldw int, nb int, y *float32){vnniRowsQ8_1, vnniRowsQ8_2, vnniRowsQ8_3, vnniRowsQ8_4}

var vnniRowsQ4 = [quantRows]func(xq *byte, dx *float32, xqs *float32, w *byte, ldw int, nb int, y *float32){vnniRowsQ4_1, vnniRowsQ4_2, vnniRowsQ4_3, vnniRowsQ4_4}

var rowsQ8 = [quantRows]func(x *float32, w *byte, ldw int, nb int, y *float32){rowsQ8_1, rowsQ8_2, rowsQ8_3, rowsQ8_4}

var rowsQ4 = [quantRows]func(x *float32, xsum *float32, w *byte, ldw int, nb int, y *float32){rowsQ4_1, rowsQ4_2, rowsQ4_3, rowsQ4_4}

// prepare readies per-call inputs shared by all threads for the quantized
// matrix products: on the AVX2 routes x quantized for their int8 kernels
// (prepareI8); with AVX-512 VNNI, x quantized to int8 per block (see
// prepareVNNI); with AVX-512 alone, x padded with zeros to whole blocks and
// (q4) the per-block sums of x.
func (p *Pool) prepare(j *matmulJob) {
	if p.useI8(j.w) {
		p.prepareI8(j)
		return
	}
	if !useAVX512 || (j.w.Type != Q8 && j.w.Type != Q4) {
		return
	}
	cols := j.w.Cols
	nb := (cols + BlockSize - 1) / BlockSize
	if useVNNI && !p.exact {
		p.prepareVNNI(j, nb)
		return
	}
	if j.m >= tileM {
		return
	}
	j.xq = j.x
	if cols%BlockSize != 0 {
		if cap(p.xpad) < j.m*nb*BlockSize {
			p.xpad = make([]float32, j.m*nb*BlockSize)
		}
		j.xq = p.xpad[:j.m*nb*BlockSize]
		for i := range j.m {
			row := j.xq[i*nb*BlockSize : (i+1)*nb*BlockSize]
			copy(row, j.x[i*cols:(i+1)*cols])
			clear(row[cols:])
		}
	}
	if j.w.Type == Q4 {
		if cap(p.xsum) < j.m*nb {
			p.xsum = make([]float32, j.m*nb)
		}
		j.xs = p.xsum[:j.m*nb]
		for b := range j.m * nb {
			blk := j.xq[b*BlockSize : (b+1)*BlockSize]
			var s0, s1, s2, s3 float32
			for i := 0; i < BlockSize; i += 4 {
				s0 += blk[i]
				s1 += blk[i+1]
				s2 += blk[i+2]
				s3 += blk[i+3]
			}
			j.xs[b] = (s0 + s1) + (s2 + s3)
		}
	}
}

// prepareVNNI quantizes each input row to int8 blocks of 32 with a float32
// scale per block, padded with zero blocks to a multiple of 16, in the
// layout the VNNI kernel of the weight type expects.
func (p *Pool) prepareVNNI(j *matmulJob, nb int) {
	cols := j.w.Cols
	nbp := (nb + 15) &^ 15
	if batchStream(j.m) {
		p.prepareBatch(j, nbp)
		return
	}
	t := j.m >= tileM
	ld := nbp * BlockSize
	if cols != ld {
		p.xpad = growFloats(p.xpad, j.m*ld)
	}
	if !t && cap(p.xq8) < j.m*ld {
		p.xq8 = make([]byte, j.m*ld)
	}
	if t && cap(p.xq8t) < j.m*ld {
		p.xq8t = make([]byte, j.m*ld)
	}
	p.dx = growFloats(p.dx, j.m*nbp)
	p.xsum = growFloats(p.xsum, j.m*nbp)
	j.dx, j.xs, j.nbp = p.dx[:j.m*nbp], p.xsum[:j.m*nbp], nbp
	if p.prepRow == nil {
		p.prepRow = p.prepareRow
	}
	if j.m >= tileM && p.threads > 1 && !p.closed.Load() {
		// A prefill's rows are independent: prepare them on every thread,
		// in about two runs of rows per thread.
		p.runFor(j.m, (j.m+2*p.threads-1)/(2*p.threads), p.prepRow)
	} else {
		for i := range j.m {
			p.prepareRowVNNI(i)
		}
	}
	if t {
		j.xq8 = p.xq8t[:j.m*ld]
	} else {
		j.xq8 = p.xq8[:j.m*ld]
	}
}

// prepareRow prepares input row i of the current job (p.job) for the int8
// kernels of its route: the method value p.prepRow of the threads'
// parallel preparation.
func (p *Pool) prepareRow(_, i int) {
	if p.job.i8 {
		p.prepareRowI8(i)
		return
	}
	p.prepareRowVNNI(i)
}

// prepareRowVNNI quantizes input row i of the current job (p.job, readied
// by prepareVNNI) and, for the matrix product, transposes it.
func (p *Pool) prepareRowVNNI(i int) {
	j := &p.job
	cols, nbp := j.w.Cols, j.nbp
	ld := nbp * BlockSize
	x := j.x[i*cols : (i+1)*cols]
	if cols != ld {
		row := p.xpad[i*ld : (i+1)*ld]
		copy(row, x)
		clear(row[cols:])
		x = row
	}
	// The matrix product (m >= tileM) takes both weight types' activations
	// in the q8 layout, transposed (written so directly).
	switch {
	case j.m >= tileM:
		quantizeXQ8T(&x[0], nbp, &p.xq8t[i*ld], &j.dx[i*nbp], &j.xs[i*nbp])
	case j.w.Type == Q8:
		quantizeXQ8(&x[0], nbp, &p.xq8[i*ld], &j.dx[i*nbp], &j.xs[i*nbp])
	default:
		quantizeXQ4(&x[0], nbp, &p.xq8[i*ld], &j.dx[i*nbp], &j.xs[i*nbp])
	}
}

func growFloats(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func matmulRows(p *Pool, id int, j *matmulJob, lo, hi int) {
	if !useAVX512 {
		if useAVX2 && j.w.Type != Q8 && j.w.Type != Q4 {
			initRows(j.y, j.m, j.w.Rows, j.bias, lo, hi)
			rb := j.w.Type.RowBytes(j.w.Cols)
			floatTiles(tilesAVX2, j.w.Type, j.y[lo:], j.w.Rows, j.x, j.m, j.w.Cols, j.w.Data[lo*rb:hi*rb], rb, hi-lo, &p.scratch[id])
			return
		}
		if j.i8 {
			i8Rows(p, id, j, lo, hi)
			return
		}
		if useAVX2 && j.m == 1 && useRowStream && j.w.Cols%BlockSize == 0 {
			quantStreamAVX2(j, lo, hi)
			return
		}
		matmulRowsGeneric(p, id, j.y, j.x, j.m, j.w, j.bias, lo, hi)
		return
	}
	w, m := j.w, j.m
	switch {
	case j.i8: // avx512 without VNNI: the AVX2 int8 kernels (useI8)
		i8Rows(p, id, j, lo, hi)
	case j.bp != nil:
		vnniBatchRows(j, lo, hi)
	case j.nbp > 0 && m >= tileM:
		vnniTileRowsQ8(p, id, j, lo, hi)
	case m >= tileM && (w.Type == Q8 || w.Type == Q4):
		// Quantized weights without VNNI: dequantized panels through the packed GEMM.
		bgemmRows(p, id, j, lo, hi)
	case w.Type == Q8 || w.Type == Q4:
		quantRowsAVX512(j, lo, hi)
	default:
		initRows(j.y, m, w.Rows, j.bias, lo, hi)
		rb := w.Type.RowBytes(w.Cols)
		floatTiles(tilesAVX512, w.Type, j.y[lo:], w.Rows, j.x, m, w.Cols, w.Data[lo*rb:hi*rb], rb, hi-lo, &p.scratch[id])
	}
}

// quantStreamAVX2 is the q4 (and, in ExactQuantized pools, q8)
// matrix-vector product on CPUs with AVX2 but not AVX-512, for rows of whole
// blocks: one stream of rows, each block dequantized in registers
// (rowStreamQ4AVX2, rowStreamQ8AVX2) with the arithmetic of dequantizing the
// row and dotting it (matmulRowsGeneric, which the matrix products with more
// input rows use): bit-identical outputs.
func quantStreamAVX2(j *matmulJob, lo, hi int) {
	w := j.w
	initRows(j.y, 1, w.Rows, j.bias, lo, hi)
	rb := w.Type.RowBytes(w.Cols)
	stream := rowStreamQ4AVX2
	if w.Type == Q8 {
		stream = rowStreamQ8AVX2
	}
	stream(&j.x[0], &w.Data[lo*rb], rb, w.Cols/BlockSize, &j.y[lo], hi-lo)
}

// chunkAlign is what the rows of a matrix product's chunks are a multiple
// of (rowChunk): 48 for float weights on the AVX2 routes, whose tiles take 3
// weight rows (a chunk of 64 rows ended in a 1-row tile, a third as fast),
// else 16.
func chunkAlign(w Matrix) int {
	if !useAVX512 && useAVX2 && w.Type != Q8 && w.Type != Q4 {
		return 48
	}
	return 16
}

// initRows sets y[i][lo:hi] to the bias (or zero) before tiles accumulate.
func initRows(y []float32, m, rows int, bias []float32, lo, hi int) {
	for i := range m {
		out := y[i*rows+lo : i*rows+hi]
		if bias != nil {
			copy(out, bias[lo:hi])
		} else {
			clear(out)
		}
	}
}

// useRowStream selects the rowStream kernels for matrix-vector products
// (benchmarks turn it off to compare with the tiles).
var useRowStream = true

// floatTiles accumulates y[i*ldy+r] += x_i · W_r for r < n rows stored in w
// (ldw bytes apart, type t in {F32, F16, BF16}), for any number m of input rows:
// register tiles of dot products, each weight byte read once per tile. Every
// output is one dot product whose arithmetic does not depend on m, so a prefill
// row equals the decode matrix-vector product bit for bit; end to end it is
// also faster than the packed outer-product GEMM (docs/performance.md). s is
// the thread's scratch (nil: no carrying tiles).
func floatTiles(ts tileSet, t WeightType, y []float32, ldy int, x []float32, m, cols int, w []byte, ldw, n int, s *workerScratch) {
	ti := 0
	esize := 4
	switch t {
	case F16:
		ti, esize = 1, 2
	case BF16:
		ti, esize = 2, 2
	}
	k16 := cols / ts.lanes * ts.lanes
	if m == 1 && ts.rows != nil && useRowStream && k16 > 0 && n > 0 {
		// A matrix-vector product is memory-bound: one sequential stream of
		// weights reads faster than a tile's interleaved rows.
		ts.rows[ti](&x[0], &w[0], ldw, k16, &y[0], n)
		if k16 < cols {
			for r := range n {
				y[r] += tailDot(t, x[k16:cols], w[r*ldw+k16*esize:])
			}
		}
		return
	}
	carry := ts.carry != nil && s != nil && k16 > ts.kc
	var acc []float32
	if carry {
		// a panel row of tiles' accumulators
		acc = growFloats(s.buf, (panelRows+ts.n-1)/ts.n*ts.m*ts.n*ts.lanes)
		s.buf = acc
	}
	panel := panelRows / ts.n * ts.n // whole tiles
	for jb := 0; jb < n; jb += panel {
		jn := min(panel, n-jb)
		switch {
		case carry:
			floatTilesCarry(ts, ti, esize, y[jb:], ldy, x, m, cols, w[jb*ldw:], ldw, jn, k16, acc)
		case k16 > 0:
			for i := 0; i < m; i += ts.m {
				mr := min(ts.m, m-i)
				for jj := 0; jj < jn; jj += ts.n {
					nr := min(ts.n, jn-jj)
					ts.f[ti][mr-1][nr-1](&x[i*cols], cols, &w[(jb+jj)*ldw], ldw, k16, &y[i*ldy+jb+jj], ldy)
				}
			}
		}
		if k16 < cols {
			for i := range m {
				xt := x[i*cols+k16 : (i+1)*cols]
				for r := jb; r < jb+jn; r++ {
					y[i*ldy+r] += tailDot(t, xt, w[r*ldw+k16*esize:])
				}
			}
		}
	}
}

// floatTilesCarry is floatTiles' panel of jn weight rows for rows longer
// than ts.kc columns: per group of input rows, the columns kc at a time
// through every tile of the panel, their accumulators carried in acc.
func floatTilesCarry(ts tileSet, ti, esize int, y []float32, ldy int, x []float32, m, cols int, w []byte, ldw, jn, k16 int, acc []float32) {
	for i := 0; i < m; i += ts.m {
		mr := min(ts.m, m-i)
		for kb := 0; kb < k16; kb += ts.kc {
			kl := min(ts.kc, k16-kb)
			flags := 0
			if kb > 0 {
				flags |= 1 // continue the sums
			}
			if kb+kl == k16 {
				flags |= 2 // and end them
			}
			for jj := 0; jj < jn; jj += ts.n {
				nr := min(ts.n, jn-jj)
				a := acc[jj/ts.n*ts.m*ts.n*ts.lanes:]
				ts.carry[ti][mr-1][nr-1](&x[i*cols+kb], cols, &w[jj*ldw+kb*esize], ldw, kl, &a[0], flags, &y[i*ldy+jj], ldy)
			}
		}
	}
}

// tailDot returns x · w over len(x) values of w stored as t.
func tailDot(t WeightType, x []float32, w []byte) float32 {
	var s float32
	for c, v := range x {
		switch t {
		case F32:
			s += v * math.Float32frombits(binary.LittleEndian.Uint32(w[4*c:]))
		case F16:
			s += v * f16ToF32(binary.LittleEndian.Uint16(w[2*c:]))
		case BF16:
			s += v * bf16ToF32(binary.LittleEndian.Uint16(w[2*c:]))
		}
	}
	return s
}

// vnniBatchMax is the most activation rows one pass of the batch stream
// multiplies (vnniBatch<q>_<m> keeps their sums in registers).
// batchStreamMax is the most rows that take the batch stream (vnniBatchRows)
// rather than the tiles (vnniTileRowsQ8): beyond vnniBatchMax the rows go in
// passes of at most vnniBatchMax, each pass over a block of weight rows small
// enough to stay in L1 for the next, so the weights still come from memory
// once. Measured (BenchmarkBatchSweep, docs/performance.md), the passes beat
// the tiles up to batchStreamMax rows. useBatchStream turns the stream off
// (benchmarks and tests compare it with the tiles).
const (
	vnniBatchMax   = 8
	batchStreamMax = 32
	// batchBlockBytes bounds the weight rows one block of passes covers.
	batchBlockBytes = 12 << 10
)

var useBatchStream = true

// batchStream reports whether the VNNI matrix product of m activation rows
// takes the batch stream (vnniBatchRows).
func batchStream(m int) bool { return m > 1 && m <= batchStreamMax && useBatchStream }

// batchPasses is how many passes of at most vnniBatchMax rows the batch
// stream makes for m rows; pass k takes rows [batchPassStart(m, k),
// batchPassStart(m, k+1)) (sizes differing by at most one, so at least 2
// rows each for m > vnniBatchMax).
func batchPasses(m int) int { return (m + vnniBatchMax - 1) / vnniBatchMax }

func batchPassStart(m, k int) int { return k * m / batchPasses(m) }

// vnniBatch<q>[m] is vnniBatch<q>_<m>, the batch stream of m rows.
var (
	vnniBatchQ8 = [vnniBatchMax + 1]vnniBatchFunc{2: vnniBatchQ8_2, 3: vnniBatchQ8_3, 4: vnniBatchQ8_4,
		5: vnniBatchQ8_5, 6: vnniBatchQ8_6, 7: vnniBatchQ8_7, 8: vnniBatchQ8_8}
	vnniBatchQ4 = [vnniBatchMax + 1]vnniBatchFunc{2: vnniBatchQ4_2, 3: vnniBatchQ4_3, 4: vnniBatchQ4_4,
		5: vnniBatchQ4_5, 6: vnniBatchQ4_6, 7: vnniBatchQ4_7, 8: vnniBatchQ4_8}
)

type vnniBatchFunc func(xb *byte, bp *float32, w *byte, ldw int, nb int, y *float32, ldy int, n int)

// prepareBatch quantizes the input rows for the batch stream: for each pass
// (rows r0 ≤ r < r0+mp, see batchPasses), from xq8[r0*ld:] and bp[r0*2*nbp:],
// per group g of 16 blocks and row i of the pass (index k = g*mp+i), the
// row's quants in the layout of quantizeXQ8T at [k*512:], and at bp's
// [k*32:] the blocks' scales then -offset times their sums (int32 bits), the
// offset being the weights' (see vnni.go in asmgen).
func (p *Pool) prepareBatch(j *matmulJob, nbp int) {
	cols, m := j.w.Cols, j.m
	ld := nbp * BlockSize
	if cap(p.xq8t) < m*ld {
		p.xq8t = make([]byte, m*ld)
	}
	p.bp = growFloats(p.bp, 2*m*nbp)
	var sums [16]float32
	shift := 7 // q8: weights + 128
	if j.w.Type == Q4 {
		shift = 3 // q4: weights + 8
	}
	for k := range batchPasses(m) {
		r0, r1 := batchPassStart(m, k), batchPassStart(m, k+1)
		xq, bps := p.xq8t[r0*ld:], p.bp[r0*2*nbp:]
		for i := r0; i < r1; i++ {
			x := j.x[i*cols : (i+1)*cols]
			if cols != ld {
				p.xpad = growFloats(p.xpad, ld)
				copy(p.xpad, x)
				clear(p.xpad[cols:])
				x = p.xpad
			}
			for g := range nbp / 16 {
				at := g*(r1-r0) + i - r0
				b := bps[32*at : 32*at+32]
				quantizeXQ8T(&x[g*16*BlockSize], 16, &xq[512*at], &b[0], &sums[0])
				for l, s := range sums {
					b[16+l] = math.Float32frombits(uint32(-(int32(s) << shift)))
				}
			}
		}
	}
	j.xq8, j.bp, j.nbp = p.xq8t[:m*ld], p.bp[:2*m*nbp], nbp
}

// vnniBatchRows is the q8 and q4 matrix product with VNNI for a few
// activation rows (a batched decode step): one stream over weight rows
// [lo, hi), each multiplied with every activation row while in registers
// (vnniBatchQ8_<m>, vnniBatchQ4_<m>), with the tiles' arithmetic, so every
// row of y equals MatMul of that row alone, bit for bit.
func vnniBatchRows(j *matmulJob, lo, hi int) {
	w := j.w
	nb := (w.Cols + BlockSize - 1) / BlockSize
	rb := w.Type.RowBytes(w.Cols)
	table := &vnniBatchQ8
	if w.Type == Q4 {
		table = &vnniBatchQ4
	}
	if j.m <= vnniBatchMax {
		table[j.m](&j.xq8[0], &j.bp[0], &w.Data[lo*rb], rb, nb, &j.y[lo], w.Rows*4, hi-lo)
	} else {
		// Passes over L1-sized blocks of weight rows: the first reads them from
		// memory, the others from L1.
		ld, np := j.nbp*BlockSize, batchPasses(j.m)
		blk := max(1, batchBlockBytes/rb)
		for b := lo; b < hi; b += blk {
			e := min(b+blk, hi)
			for k := range np {
				r0, r1 := batchPassStart(j.m, k), batchPassStart(j.m, k+1)
				table[r1-r0](&j.xq8[r0*ld], &j.bp[r0*2*j.nbp], &w.Data[b*rb], rb, nb, &j.y[r0*w.Rows+b], w.Rows*4, e-b)
			}
		}
	}
	if j.bias != nil {
		for i := range j.m {
			y := j.y[i*w.Rows+lo : i*w.Rows+hi]
			for k := range y {
				y[k] += j.bias[lo+k]
			}
		}
	}
}

// vnniTileQ8 and vnniTileQ4 are the int8 matrix-product micro-kernels
// [mr-1][nr-1] for mr activation rows × nr weight rows (m >= tileM).
var (
	vnniTileQ8 = [vnniTileM][vnniTileQ8N]vnniTileQ8Func{
		{vnniTileQ8_1x1, vnniTileQ8_1x2, vnniTileQ8_1x3},
		{vnniTileQ8_2x1, vnniTileQ8_2x2, vnniTileQ8_2x3},
		{vnniTileQ8_3x1, vnniTileQ8_3x2, vnniTileQ8_3x3},
		{vnniTileQ8_4x1, vnniTileQ8_4x2, vnniTileQ8_4x3},
	}
	vnniTileQ4 = [vnniTileM][vnniTileQ8N]vnniTileQ8Func{
		{vnniTileQ4_1x1, vnniTileQ4_1x2, vnniTileQ4_1x3},
		{vnniTileQ4_2x1, vnniTileQ4_2x2, vnniTileQ4_2x3},
		{vnniTileQ4_3x1, vnniTileQ4_3x2, vnniTileQ4_3x3},
		{vnniTileQ4_4x1, vnniTileQ4_4x2, vnniTileQ4_4x3},
	}
)

// Tile shape of the int8 matrix product (must match asmgen).
const (
	vnniTileM   = 4
	vnniTileQ8N = 3
)

type vnniTileQ8Func func(xq *byte, ldx int, dx *float32, xqs *float32, ldd int, w *byte, ldw int, wt *byte, nb int, y *float32, ldy int)

// vnniTileChunkBytes bounds the transposed weight rows (ldx bytes each) of
// one chunk of vnniTileRowsQ8: small enough to stay in L1 while every group
// of activation rows passes over it. (A variable: benchmarks sweep it.)
var vnniTileChunkBytes = 32 << 10

// vnniTileRowsQ8 is the q8 and q4 matrix product with VNNI (m >= tileM):
// the weight rows are made unsigned bytes and transposed (transposeWQ8,
// transposeWQ4) into the thread's scratch a chunk at a time (about
// vnniTileChunkBytes), then each group of vnniTileM activation rows
// (transposed by prepareVNNI) is multiplied with every panel of vnniTileQ8N
// rows of the chunk while it is in L1, and the bias added to the group's
// outputs while they are in cache, so VPDPBUSD sums whole blocks in one lane.
// Each output is computed with the arithmetic of the matrix-vector kernel, so
// every row of y equals MatMul of that row alone, bit for bit.
func vnniTileRowsQ8(p *Pool, id int, j *matmulJob, lo, hi int) {
	w := j.w
	nb := (w.Cols + BlockSize - 1) / BlockSize
	rb := w.Type.RowBytes(w.Cols)
	ldx := j.nbp * BlockSize
	chunk := max(1, vnniTileChunkBytes/ldx/vnniTileQ8N) * vnniTileQ8N
	if chunk >= 48 {
		chunk = chunk / 48 * 48 // whole vectors for the bias add (add)
	}
	chunk = min(chunk, (hi-lo+vnniTileQ8N-1)/vnniTileQ8N*vnniTileQ8N)
	s := &p.scratch[id]
	if len(s.wt) < chunk*ldx {
		s.wt = make([]byte, chunk*ldx)
	}
	transpose, tiles := transposeWQ8, &vnniTileQ8
	if w.Type == Q4 {
		transpose, tiles = transposeWQ4, &vnniTileQ4
	}
	for c := lo; c < hi; c += chunk {
		cn := min(chunk, hi-c)
		for k := range cn {
			transpose(&w.Data[(c+k)*rb], nb, &s.wt[k*ldx])
		}
		for i := 0; i < j.m; i += vnniTileM {
			mr := min(vnniTileM, j.m-i)
			xq, dx, xs := &j.xq8[i*ldx], &j.dx[i*j.nbp], &j.xs[i*j.nbp]
			for r := c; r < c+cn; r += vnniTileQ8N {
				nr := min(vnniTileQ8N, c+cn-r)
				tiles[mr-1][nr-1](xq, ldx, dx, xs, j.nbp*4, &w.Data[r*rb], rb, &s.wt[(r-c)*ldx], nb, &j.y[i*w.Rows+r], w.Rows*4)
			}
			if j.bias != nil {
				b := j.bias[c : c+cn]
				for ii := i; ii < i+mr; ii++ {
					y := j.y[ii*w.Rows+c : ii*w.Rows+c+cn]
					add(y, y, b)
				}
			}
		}
	}
}

// quantRowsAVX512 is the quantized matrix-vector product (m < tileM):
// quantRows weight rows per kernel call, reading each weight byte once per
// input row.
func quantRowsAVX512(j *matmulJob, lo, hi int) {
	w := j.w
	nb := (w.Cols + BlockSize - 1) / BlockSize
	rb := w.Type.RowBytes(w.Cols)
	if j.m == 1 && j.nbp > 0 && useRowStream {
		// One sequential stream of weight rows (see rowStreamF32).
		y := j.y[lo:hi]
		stream := vnniRowStreamQ8
		if w.Type == Q4 {
			stream = vnniRowStreamQ4
		}
		stream(&j.xq8[0], &j.dx[0], &j.xs[0], &w.Data[lo*rb], rb, nb, &y[0], hi-lo)
		if j.bias != nil {
			for k := range y {
				y[k] += j.bias[lo+k]
			}
		}
		return
	}
	for r := lo; r < hi; r += quantRows {
		nr := min(quantRows, hi-r)
		wp := &w.Data[r*rb]
		for i := range j.m {
			y := j.y[i*w.Rows+r : i*w.Rows+r+nr]
			switch {
			case j.nbp > 0 && w.Type == Q8:
				vnniRowsQ8[nr-1](&j.xq8[i*j.nbp*BlockSize], &j.dx[i*j.nbp], &j.xs[i*j.nbp], wp, rb, nb, &y[0])
			case j.nbp > 0:
				vnniRowsQ4[nr-1](&j.xq8[i*j.nbp*BlockSize], &j.dx[i*j.nbp], &j.xs[i*j.nbp], wp, rb, nb, &y[0])
			case w.Type == Q8:
				xp := &j.xq[i*nb*BlockSize]
				rowsQ8[nr-1](xp, wp, rb, nb, &y[0])
			default:
				rowsQ4[nr-1](&j.xq[i*nb*BlockSize], &j.xs[i*nb], wp, rb, nb, &y[0])
			}
			if j.bias != nil {
				for k := range y {
					y[k] += j.bias[r+k]
				}
			}
		}
	}
}
