package kernels

import (
	"fmt"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/align"
)

// The packed product's panel width and row group: bgemm's gemmNR and bgemmMR on amd64.
const (
	packNR = 32
	packMR = 12
)

// PackedF32 is a float32 weight matrix laid out once for the outer-product
// matrix product (the AVX-512 bgemm micro-kernels): panels of 32 weight rows,
// each k-major ([Cols][32], rows past Rows zero), so that a product reads its
// weights without repacking them. Encoders use it: their products have many
// input rows (a batch) and no decode step whose rows must agree with them.
type PackedF32 struct {
	Rows, Cols int
	data       []float32 // [panels][Cols][packNR]
}

// PackedBytes is the memory PackF32 takes for w (64-byte aligned).
func PackedBytes(w Matrix) int {
	// 16 groups of slack: the packing writes columns in runs of 16.
	return 4 * ((w.Rows+packNR-1)/packNR*w.Cols + 16) * packNR
}

// PackF32 packs w (float32) for MatMulPacked into mem (PackedBytes(w) bytes,
// 64-byte aligned; nil: allocated), or returns nil where this build or CPU has no
// packed product (then use Pool.MatMul).
func PackF32(w Matrix, mem []byte) *PackedF32 {
	if w.Type != F32 || !packedSupported() || w.Rows <= 0 || w.Cols <= 0 {
		return nil
	}
	n := PackedBytes(w)
	if mem == nil {
		mem = align.Bytes(n)
	}
	if len(mem) < n || uintptr(unsafe.Pointer(&mem[0]))%align.Boundary != 0 {
		panic(fmt.Sprintf("kernels: PackF32 into %d bytes (want %d, %d-byte aligned)", len(mem), n, align.Boundary))
	}
	pw := &PackedF32{Rows: w.Rows, Cols: w.Cols, data: align.AsF32(mem[:n])}
	packPanels(pw, w.Data)
	return pw
}

// PackedMatMul computes y = x Wᵀ + bias on a PackedF32 over a pool's threads:
// items of a block of rows (which stays in L2) by a group of weight panels, each
// panel's block of columns in L1 while the block's rows pass over it. A row's output does not depend on the rows beside
// it. Build one per weight matrix and reuse it (Run allocates nothing once
// its scratch has grown); Run calls are not concurrent.
type PackedMatMul struct {
	w          *PackedF32
	y, x, bias []float32
	m          int
	groups     int // input row groups of packMR
	rb, pg     int // row blocks and panel groups: items = rb × pg
	fn         func(worker, i int)
	// Epilogue, if set, is applied in place to each output row's part of an item once
	// the item's sums are complete (while they are in cache): y = Epilogue(xW + b),
	// an element-wise function such as an activation. dst and x are the same slice.
	Epilogue func(dst, x []float32)
}

// NewPackedMatMul returns the product for w.
func NewPackedMatMul(w *PackedF32) *PackedMatMul {
	j := &PackedMatMul{w: w}
	j.fn = j.item
	return j
}

// packedRowGroups is about how many groups of packMR rows a row block holds:
// 16 × 12 = 192 rows, whose inputs (a column block of them) stay in L2
// (8 and 21 measure alike, TestPerfEncoderPacked).
var packedRowGroups = 16

// packedItemsPerThread is about how many items a product has per thread, so that
// threads finish together.
var packedItemsPerThread = 16

// Run computes y[i*Rows+r] = bias[r] + Σ_k x[i*Cols+k] W[r][k] for i < m.
func (j *PackedMatMul) Run(p *Pool, y, x []float32, m int, bias []float32) {
	w := j.w
	if len(x) < m*w.Cols || len(y) < m*w.Rows || (bias != nil && len(bias) < w.Rows) {
		panic(fmt.Sprintf("kernels: packed product of %d rows: x %d, y %d, bias %d values for [%d,%d]", m, len(x), len(y), len(bias), w.Rows, w.Cols))
	}
	if m <= 0 {
		return
	}
	j.y, j.x, j.bias, j.m = y, x, bias, m
	j.groups = (m + packMR - 1) / packMR
	j.rb = (j.groups + packedRowGroups - 1) / packedRowGroups
	panels := (w.Rows + packNR - 1) / packNR
	j.pg = min(panels, max(1, (packedItemsPerThread*p.Threads()+j.rb-1)/j.rb))
	p.For(j.rb*j.pg, j.fn)
	j.y, j.x, j.bias = nil, nil, nil
}

// PanelWidth is how many columns a panel of PanelMulAdd holds.
const PanelWidth = packNR

// HasPacked reports whether PackF32 packs (for PackedMatMul) and PanelMulAdd has a
// kernel in this build and CPU.
func HasPacked() bool { return packedSupported() }

// PanelMulAdd accumulates y[i*ldy+c] += Σ_{k<kc} x[i*ldx+k]·p[k*PanelWidth+c] for
// i < m and c < n ≤ PanelWidth: the product of m rows with one panel of weights
// stored k-major (the layout of PackF32's panels), on the calling goroutine. Each
// row's sums are taken in the order of k whatever the rows beside it. Call only where
// HasPacked.
func PanelMulAdd(y []float32, ldy int, x []float32, ldx, m int, p []float32, kc, n int) {
	if m <= 0 || kc <= 0 || n <= 0 {
		return
	}
	if n > PanelWidth || len(p) < kc*PanelWidth || len(x) < (m-1)*ldx+kc || len(y) < (m-1)*ldy+n {
		panic(fmt.Sprintf("kernels: PanelMulAdd of %d rows, %d columns, kc %d: x %d (ld %d), y %d (ld %d), panel %d values",
			m, n, kc, len(x), ldx, len(y), ldy, len(p)))
	}
	panelMulAdd(y, ldy, x, ldx, m, p, kc, n)
}

// PackPanel writes rows ≤ PanelWidth rows of cols values (src[r*ld+k]) k-major into
// dst as one panel of PanelMulAdd: dst[k*PanelWidth+r] = src[r*ld+k]. The lanes of
// rows past rows hold unspecified values (PanelMulAdd's n leaves them out). dst must
// hold cols rounded up to 16, times PanelWidth. Call only where HasPacked.
func PackPanel(dst, src []float32, ld, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	if rows > PanelWidth || len(dst) < (cols+15)/16*16*PanelWidth || len(src) < (rows-1)*ld+cols {
		panic(fmt.Sprintf("kernels: PackPanel of %d rows × %d: dst %d, src %d (ld %d)", rows, cols, len(dst), len(src), ld))
	}
	packPanel(dst, src, ld, rows, cols)
}
