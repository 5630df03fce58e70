package kernels

import (
	"fmt"
	"unsafe"
)

// CheckMatMul reports whether y, x, m and bias fit a MatMul by w. Executors
// call it once when planning; MatMul itself does not check beyond slice
// indexing.
func (w Matrix) CheckMatMul(y, x []float32, m int, bias []float32) error {
	if err := w.Validate(); err != nil {
		return err
	}
	switch {
	case m < 1:
		return fmt.Errorf("matmul [%d][%d]: %w: m = %d, want >= 1", w.Rows, w.Cols, ErrShape, m)
	case len(x) < m*w.Cols:
		return fmt.Errorf("matmul [%d][%d] m=%d: %w: x has %d values, want %d", w.Rows, w.Cols, m, ErrShape, len(x), m*w.Cols)
	case len(y) < m*w.Rows:
		return fmt.Errorf("matmul [%d][%d] m=%d: %w: y has %d values, want %d", w.Rows, w.Cols, m, ErrShape, len(y), m*w.Rows)
	case bias != nil && len(bias) < w.Rows:
		return fmt.Errorf("matmul [%d][%d]: %w: bias has %d values, want %d", w.Rows, w.Cols, ErrShape, len(bias), w.Rows)
	}
	return nil
}

// MatMul computes y[i*w.Rows+r] = sum_c x[i*w.Cols+c]*W[r][c] (+ bias[r] if
// bias != nil) for i < m, splitting the rows of w across the pool. m == 1 is
// the decode matrix-vector product, m > 1 the prefill matrix product. y must
// not overlap x. Shapes are the caller's responsibility (see CheckMatMul).
// Accuracy: float32 accumulation, except that q8/q4 may quantize x to int8
// blocks (with AVX-512 VNNI, or with AVX2 but no AVX-512; see the package
// comment for the bound) unless
// the pool was made with PoolOptions.ExactQuantized. Row i of y never
// depends on m or on the other rows of x.
func (p *Pool) MatMul(y, x []float32, m int, w Matrix, bias []float32) {
	_ = x[m*w.Cols-1]
	_ = y[m*w.Rows-1]
	if bias != nil {
		_ = bias[w.Rows-1]
	}
	p.call.Lock()
	defer p.call.Unlock()
	var chunks int
	if m == 1 {
		chunks = guidedChunks(p.starts[:], w.Rows, p.threads, w.Type.RowBytes(w.Cols))
		p.job = matmulJob{y: y, x: x, m: m, w: w, bias: bias, starts: p.starts[:chunks+1]}
	} else {
		chunk := rowChunk(w.Rows, p.threads, m*w.Rows*w.Type.RowBytes(w.Cols), chunkAlign(w))
		chunks = (w.Rows + chunk - 1) / chunk
		p.job = matmulJob{y: y, x: x, m: m, w: w, bias: bias, chunk: chunk}
	}
	p.prepare(&p.job)
	p.runJob(chunks)
	p.job = matmulJob{}
}

// maxGuided bounds the chunks of a matrix-vector product (guidedChunks).
const maxGuided = 64

// guidedMin is the smallest chunk of a matrix-vector product, in weight bytes:
// below it a claim (a cache line moving between cores) costs more than the
// imbalance it saves.
const guidedMin = 64 << 10

// guidedChunks splits the rows of a matrix-vector product into chunks that
// shrink as the work runs out, writing their starts (and rows, last) to starts
// and returning the number of chunks. Each round of threads chunks covers half
// of the rows left, down to chunks of guidedMin bytes, so the first claims take
// big contiguous runs and the last ones are small: threads finish within a
// small chunk of each other with few claims. (Equal chunks, four for a 3 MB
// matrix on two threads, left a thread spinning for up to a quarter of the
// product when one ran ahead; docs/performance.md has the cost.) Starts are
// multiples of 16 rows except rows itself.
func guidedChunks(starts []int, rows, threads, rowBytes int) int {
	minRows := max((guidedMin/max(rowBytes, 1)+15)&^15, 16)
	n, lo := 0, 0
	if threads == 1 {
		starts[0], starts[1] = 0, rows
		return 1
	}
	for lo < rows && n < len(starts)-2 {
		starts[n] = lo
		n++
		left := rows - lo
		c := max((left/(2*threads))&^15, minRows)
		if n == len(starts)-2 || c >= left {
			c = left
		}
		lo += c
	}
	starts[n] = rows
	return n
}

// rowChunk picks how many weight rows a thread takes at a time: a multiple of
// align (16, or 48 where the tiles take 3 weight rows: chunkAlign) so tiles
// stay whole, few enough chunks to fit the pool's claim word, and
// a number of chunks that grows with the work (m × weight bytes): claiming a
// chunk moves a cache line between cores, which a decode matmul of 1 MB cannot
// afford 16 times (docs/performance.md), while long jobs want small chunks so
// that threads finish together. The default (eight per
// thread) is kept from chunkWork × 8 × threads bytes of work up.
func rowChunk(rows, threads, work, align int) int {
	if threads == 1 {
		return rows
	}
	per := min(max(work/(chunkWork*threads), 2), 8)
	c := (rows/(threads*per) + 15) &^ 15
	if align != 16 {
		c = max(c/align, 1) * align
	}
	c = max(c, (rows/(maxChunks-1)+align)/align*align)
	return max(c, align)
}

// chunkWork is the work (m × weight bytes) per chunk below which matrix
// products use fewer than eight chunks per thread.
const chunkWork = 1 << 20

type matmulJob struct {
	y, x   []float32
	m      int
	w      Matrix
	bias   []float32
	chunk  int       // rows per chunk (m > 1)
	starts []int     // chunk c is rows [starts[c], starts[c+1]) (m == 1)
	xq     []float32 // x padded to whole blocks (quantized matrix-vector path)
	xs     []float32 // per-block sums of xq (q4 matrix-vector path), or of xq8 (VNNI)
	xq8    []byte    // x quantized to int8 blocks (VNNI matrix-vector path)
	dx     []float32 // scales of xq8 blocks
	nbp    int       // blocks per row of xq8 (a multiple of 16; of 8 on the AVX2 routes); 0 when unused
	i8     bool      // xq8 holds x prepared for the int8 kernels of the AVX2 routes (i8_amd64.go)
	xs8    []int32   // the block sums of xq8 (arm64 q8/q4 products)
	bp     []float32 // per group and row: scales and offset sums (VNNI batch stream; see prepareBatch)
}

// runChunk computes the weight rows of chunk c on thread id.
func (j *matmulJob) runChunk(p *Pool, id, c int) {
	if j.starts != nil {
		matmulRows(p, id, j, j.starts[c], j.starts[c+1])
		return
	}
	lo := c * j.chunk
	matmulRows(p, id, j, lo, min(lo+j.chunk, j.w.Rows))
}

// matmulRowsGeneric computes output columns [lo, hi) of y with pure Go.
func matmulRowsGeneric(p *Pool, id int, y, x []float32, m int, w Matrix, bias []float32, lo, hi int) {
	cols := w.Cols
	var row []float32
	if w.Type != F32 {
		row = p.grow(id, cols)
	}
	for r := lo; r < hi; r++ {
		if w.Type == F32 {
			row = f32Row(w, r)
		} else {
			dequantizeRow(w.Type, w.row(r), row)
		}
		var b float32
		if bias != nil {
			b = bias[r]
		}
		for i := range m {
			y[i*w.Rows+r] = dot(x[i*cols:(i+1)*cols], row) + b
		}
	}
}

// f32Row views row r of an F32 matrix as float32 without copying.
func f32Row(w Matrix, r int) []float32 {
	b := w.row(r)
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), w.Cols)
}
