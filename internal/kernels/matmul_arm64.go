//go:build arm64 && !purego

package kernels

import (
	"encoding/binary"
	"math"
)

// The matrix product on arm64 (the neon+dotprod route).
//
// q8 and q4 weights multiply activations quantized per block of 32 to int8
// with a float32 scale (quantizeXNEON, quantizeXTNEON), with SDOT: one
// activation row (decode) streams the weight rows through qStream<q>_<t>;
// two or more (batched decode, prefill) go in groups of 4 rows, transposed,
// through qTile<q>_<t>, over panels of weight rows small enough to stay in
// L1 while every group passes. Both do the same float arithmetic per output
// (neongen's qstream.go), so a row's result does not depend on m.

// qRecBytes is the size of one block record of transposed activations
// (quantizeXTNEON): 4 rows' scales, 4 offsets, 4 × 32 quants.
const qRecBytes = 16 + 16 + 4*BlockSize

// qPanelBytes bounds the weight rows one panel of qTileRows covers (they
// stay in L1 while every group of activation rows passes over them).
const qPanelBytes = 16 << 10

// q4ExpandRows is the fewest activation rows for which qTileRows widens q4
// panels to q8 (expandQ4NEON) before multiplying: each block then costs 2
// instructions fewer per group of 4 rows, and about 8 once to widen.
const q4ExpandRows = 16

// The kernels by tail: a row of nb blocks is nb/4 groups of 4 and a tail of
// nb%4 blocks, and entry nb%4 of each table is the variant for it.
var (
	qStreamQ8 = [4]func(xq *byte, dx *float32, off *int32, w *byte, ng int, y *float32, n int){qStreamQ8_0, qStreamQ8_1, qStreamQ8_2, qStreamQ8_3}
	qStreamQ4 = [4]func(xq *byte, dx *float32, off *int32, w *byte, ng int, y *float32, n int){qStreamQ4_0, qStreamQ4_1, qStreamQ4_2, qStreamQ4_3}
	qTileQ8   = [4]qTileFunc{qTileQ8_0, qTileQ8_1, qTileQ8_2, qTileQ8_3}
	qTileQ4   = [4]qTileFunc{qTileQ4_0, qTileQ4_1, qTileQ4_2, qTileQ4_3}
)

type qTileFunc func(xt *byte, w *byte, ng int, y0, y1, y2, y3 *float32, n int)

// gemmScratch is the packing memory of amd64's float matrix product; arm64
// has none.
type gemmScratch struct{}

// prepare quantizes the activations of a q8/q4 product once for all
// threads: the plain layout for one row, transposed groups of 4 rows for
// more.
func (p *Pool) prepare(j *matmulJob) {
	if !useNEON || p.exact || (j.w.Type != Q8 && j.w.Type != Q4) {
		return
	}
	nb := (j.w.Cols + BlockSize - 1) / BlockSize
	if j.m == 1 {
		p.prepareStream(j, nb)
		return
	}
	p.prepareTiles(j, nb, useI8MM && j.m >= mmlaMinRows)
}

// prepareStream quantizes the single activation row for qStream<q>:
// quants, scales and offsets, padded with zeros to whole groups of 4 blocks
// (q4's quants in the order of its kernel).
func (p *Pool) prepareStream(j *matmulJob, nb int) {
	nbg := (nb + 3) &^ 3
	x := p.paddedRow(j, 0, nb)
	if cap(p.xq8) < nbg*BlockSize {
		p.xq8 = make([]byte, nbg*BlockSize)
	}
	p.dx = growFloats(p.dx, nbg)
	if cap(p.xs8) < nbg {
		p.xs8 = make([]int32, nbg)
	}
	j.xq8, j.dx, j.xs8, j.nbp = p.xq8[:nbg*BlockSize], p.dx[:nbg], p.xs8[:nbg], nb
	if j.w.Type == Q4 {
		clear(j.xq8[(nbg-4)*BlockSize:]) // the last group's padding
		quantizeXQ4NEON(&x[0], nb, &j.xq8[0], &j.dx[0], &j.xs8[0])
	} else {
		quantizeXNEON(&x[0], nb, &j.xq8[0], &j.dx[0], &j.xs8[0])
		clear(j.xq8[nb*BlockSize:])
	}
	clear(j.dx[nb:])
	clear(j.xs8[nb:])
}

// paddedRow returns activation row i of the job, copied into row i of
// p.xpad with zeros to whole blocks when its length is not a multiple of
// BlockSize (p.xpad must then hold m such rows).
func (p *Pool) paddedRow(j *matmulJob, i, nb int) []float32 {
	cols := j.w.Cols
	x := j.x[i*cols : (i+1)*cols]
	if cols == nb*BlockSize {
		return x
	}
	if i == 0 {
		p.xpad = growFloats(p.xpad, j.m*nb*BlockSize)
	}
	row := p.xpad[i*nb*BlockSize : (i+1)*nb*BlockSize]
	copy(row, x)
	clear(row[cols:])
	return row
}

// prepareTiles quantizes the activation rows for qTile<q>, transposed in
// groups of 4 rows, or with mmla for qMMLA<q> (the rows past m of the last
// group are zero).
func (p *Pool) prepareTiles(j *matmulJob, nb int, mmla bool) {
	groups := (j.m + 3) / 4
	rec := qRecBytes
	if mmla {
		rec = 2 * mmlaPairBytes
	}
	size := groups * nb * rec
	if cap(p.xq8t) < size {
		p.xq8t = make([]byte, size)
	}
	j.xq8, j.nbp, j.i8 = p.xq8t[:size], nb, mmla
	if j.m%4 != 0 {
		clear(j.xq8[(groups-1)*nb*rec:])
	}
	if j.w.Cols != nb*BlockSize {
		p.xpad = growFloats(p.xpad, j.m*nb*BlockSize)
	}
	if p.prepRow == nil {
		p.prepRow = p.prepareRowNEON
	}
	if j.m >= 8 && p.threads > 1 && !p.closed.Load() {
		// A prefill's rows are independent: prepare them on every thread.
		p.runFor(j.m, (j.m+2*p.threads-1)/(2*p.threads), p.prepRow)
		return
	}
	for i := range j.m {
		p.prepareRowNEON(0, i)
	}
}

// prepareRowNEON quantizes activation row i of the current job (p.job)
// into row i%4 of its group's records.
func (p *Pool) prepareRowNEON(_, i int) {
	j := &p.job
	nb := j.nbp
	cols := j.w.Cols
	x := j.x[i*cols : (i+1)*cols]
	if cols != nb*BlockSize {
		row := p.xpad[i*nb*BlockSize : (i+1)*nb*BlockSize]
		copy(row, x)
		clear(row[cols:])
		x = row
	}
	if j.i8 {
		quantizeXPNEON(&x[0], nb, &j.xq8[(i/4)*nb*2*mmlaPairBytes], i%4)
		return
	}
	quantizeXTNEON(&x[0], nb, &j.xq8[(i/4)*nb*qRecBytes], i%4)
}

func matmulRows(p *Pool, id int, j *matmulJob, lo, hi int) {
	w := j.w
	switch {
	case !useNEON || (j.nbp == 0 && (w.Type == Q8 || w.Type == Q4)):
		matmulRowsGeneric(p, id, j.y, j.x, j.m, w, j.bias, lo, hi)
	case j.nbp == 0:
		initRows(j.y, j.m, w.Rows, j.bias, lo, hi)
		rb := w.Type.RowBytes(w.Cols)
		floatTiles(w.Type, j.y[lo:], w.Rows, j.x, j.m, w.Cols, w.Data[lo*rb:hi*rb], rb, hi-lo)
	case j.m == 1:
		qStreamRows(j, lo, hi)
	case j.i8:
		qMMLARows(p, id, j, lo, hi)
	default:
		qTileRows(p, id, j, lo, hi)
	}
}

// qStreamRows is the q8/q4 matrix-vector product of weight rows [lo, hi).
func qStreamRows(j *matmulJob, lo, hi int) {
	w := j.w
	rb := w.Type.RowBytes(w.Cols)
	table := &qStreamQ8
	if w.Type == Q4 {
		table = &qStreamQ4
	}
	nb := j.nbp
	table[nb%4](&j.xq8[0], &j.dx[0], &j.xs8[0], &w.Data[lo*rb], nb/4, &j.y[lo], hi-lo)
	addBias(j, lo, hi)
}

// qTileRows is the q8/q4 product of m >= 2 activation rows with weight
// rows [lo, hi): per panel of weight rows, every group of 4 activation
// rows (lanes past m write to the thread's scratch).
func qTileRows(p *Pool, id int, j *matmulJob, lo, hi int) {
	w := j.w
	rb := w.Type.RowBytes(w.Cols)
	table := &qTileQ8
	if w.Type == Q4 {
		table = &qTileQ4
	}
	nb := j.nbp
	data := w.Data
	// Enough groups of activation rows pay for widening each panel of q4
	// weights to q8 once: the q8 tiles then serve every group.
	expand := w.Type == Q4 && j.m >= q4ExpandRows
	if expand {
		table, rb, data = &qTileQ8, Q8.RowBytes(w.Cols), nil
	}
	tile := table[nb%4]
	panel := max(3, qPanelBytes/rb/3*3) // the kernels take weight rows 3 at a time
	spare := p.grow(id, min(panel, hi-lo))
	if s := &p.scratch[id]; expand && len(s.wt) < panel*rb {
		s.wt = make([]byte, panel*rb)
	}
	for r := lo; r < hi; r += panel {
		n := min(panel, hi-r)
		wp := r * rb
		if expand {
			data, wp = p.scratch[id].wt, 0
			q4rb := Q4.RowBytes(w.Cols)
			if nb >= 8 { // the whole panel in one call
				_ = w.Data[(r+n)*q4rb-1]
				_ = data[n*rb-1]
				expandQ4RowsNEON(&w.Data[r*q4rb], nb, &data[0], n)
			} else {
				for k := range n {
					src, dst := w.Data[(r+k)*q4rb:], data[k*rb:]
					copy(dst[:2*nb], src[:2*nb])
					expandQ4NEON(&src[2*nb], nb, &dst[2*nb])
				}
			}
		}
		for g := 0; g*4 < j.m; g++ {
			var y [4]*float32
			for l := range y {
				if i := 4*g + l; i < j.m {
					y[l] = &j.y[i*w.Rows+r]
				} else {
					y[l] = &spare[0]
				}
			}
			tile(&j.xq8[g*nb*qRecBytes], &data[wp], nb/4, y[0], y[1], y[2], y[3], n)
		}
	}
	addBias(j, lo, hi)
}

// Float matrix products: register tiles of up to tileM input rows × tileN
// weight rows (tileF32NEON_<m>x<n> ...), over panels of panelRows weight
// rows whose tails are dotted while in cache; a single input row streams
// the weight rows (rowStream<wt>NEON). Both do the same arithmetic per
// output (neongen's rowstream.go), so prefill rows equal the decode
// product bit for bit.
const (
	panelRows = 40
	tileM     = 4
	tileN     = 2
)

type tileFunc func(x *float32, ldx int, w *byte, ldw int, k8 int, y *float32, ldy int)

var (
	tiles = [3][tileM][tileN]tileFunc{
		{{tileF32NEON_1x1, tileF32NEON_1x2}, {tileF32NEON_2x1, tileF32NEON_2x2}, {tileF32NEON_3x1, tileF32NEON_3x2}, {tileF32NEON_4x1, tileF32NEON_4x2}},
		{{tileF16NEON_1x1, tileF16NEON_1x2}, {tileF16NEON_2x1, tileF16NEON_2x2}, {tileF16NEON_3x1, tileF16NEON_3x2}, {tileF16NEON_4x1, tileF16NEON_4x2}},
		{{tileBF16NEON_1x1, tileBF16NEON_1x2}, {tileBF16NEON_2x1, tileBF16NEON_2x2}, {tileBF16NEON_3x1, tileBF16NEON_3x2}, {tileBF16NEON_4x1, tileBF16NEON_4x2}},
	}
	rowStreams = [3]func(x *float32, w *byte, ldw int, k8 int, y *float32, n int){rowStreamF32NEON, rowStreamF16NEON, rowStreamBF16NEON}
)

// useRowStream selects the row streams for matrix-vector products (tests
// turn it off to compare them with the tiles).
var useRowStream = true

// floatTiles accumulates y[i*ldy+r] += x_i · W_r for the n rows stored in w
// (ldw bytes apart, type t in {F32, F16, BF16}) and m input rows.
func floatTiles(t WeightType, y []float32, ldy int, x []float32, m, cols int, w []byte, ldw, n int) {
	ti, esize := 0, 4
	switch t {
	case F16:
		ti, esize = 1, 2
	case BF16:
		ti, esize = 2, 2
	}
	k8 := cols &^ 7
	if m == 1 && useRowStream && k8 > 0 && n > 0 {
		rowStreams[ti](&x[0], &w[0], ldw, k8, &y[0], n)
		if k8 < cols {
			for r := range n {
				y[r] += tailDot(t, x[k8:cols], w[r*ldw+k8*esize:])
			}
		}
		return
	}
	for jb := 0; jb < n; jb += panelRows {
		jn := min(panelRows, n-jb)
		if k8 > 0 {
			for i := 0; i < m; i += tileM {
				mr := min(tileM, m-i)
				for jj := 0; jj < jn; jj += tileN {
					nr := min(tileN, jn-jj)
					tiles[ti][mr-1][nr-1](&x[i*cols], cols, &w[(jb+jj)*ldw], ldw, k8, &y[i*ldy+jb+jj], ldy)
				}
			}
		}
		if k8 < cols {
			for i := range m {
				xt := x[i*cols+k8 : (i+1)*cols]
				for r := jb; r < jb+jn; r++ {
					y[i*ldy+r] += tailDot(t, xt, w[r*ldw+k8*esize:])
				}
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

// The SMMLA products (route neon+i8mm) for m >= mmlaMinRows activation
// rows: block records of mmlaPairBytes per pair of activation rows
// (quantizeXPNEON), weight rows packed in pairs per panel, mmlaWBytes per
// block (packPair<q>NEON), so that every group of 4 activation rows reuses
// them (see mmla.go in neongen).
const (
	mmlaMinRows    = 8
	mmlaPairBytes  = 16 + 16 + 4*16
	mmlaWBytes     = 16 + 4*16
	mmlaPanelBytes = 24 << 10
)

var (
	qMMLAQ8 = [4]qTileFunc{qMMLAQ8_0, qMMLAQ8_1, qMMLAQ8_2, qMMLAQ8_3}
	qMMLAQ4 = [4]qTileFunc{qMMLAQ4_0, qMMLAQ4_1, qMMLAQ4_2, qMMLAQ4_3}
)

// qMMLARows is the q8/q4 product of weight rows [lo, hi) with SMMLA: per
// panel, the weight rows packed in pairs into the thread's scratch (an odd
// last row with a row of zeros, its outputs through a buffer), then every
// group of 4 activation rows.
func qMMLARows(p *Pool, id int, j *matmulJob, lo, hi int) {
	w := j.w
	rb := w.Type.RowBytes(w.Cols)
	nb := j.nbp
	table, pack := &qMMLAQ8, packPairQ8NEON
	if w.Type == Q4 {
		table, pack = &qMMLAQ4, packPairQ4NEON
	}
	tile := table[nb%4]
	pairBytes := nb * mmlaWBytes
	panel := max(2, mmlaPanelBytes/pairBytes*2)
	s := &p.scratch[id]
	if need := (panel/2)*pairBytes + rb; len(s.wt) < need {
		s.wt = make([]byte, need) // the last rb bytes stay zero: the partner of an odd row
	}
	zeros := s.wt[len(s.wt)-rb:]
	// spare takes the outputs of lanes past m; its last 8 floats those of
	// an odd last row (in the thread's scratch: a local array passed to a
	// kernel through its table would be moved to the heap).
	spare := p.grow(id, min(panel, hi-lo)+8)
	odd := spare[len(spare)-8:]
	for r := lo; r < hi; r += panel {
		n := min(panel, hi-r)
		for k := range (n + 1) / 2 {
			w1 := zeros
			if 2*k+1 < n {
				w1 = w.Data[(r+2*k+1)*rb:]
			}
			pack(&w.Data[(r+2*k)*rb], &w1[0], nb, &s.wt[k*pairBytes])
		}
		for g := 0; g*4 < j.m; g++ {
			var y [4]*float32
			for l := range y {
				y[l] = &spare[0]
				if i := 4*g + l; i < j.m {
					y[l] = &j.y[i*w.Rows+r]
				}
			}
			xr := &j.xq8[g*nb*2*mmlaPairBytes]
			if n >= 2 {
				tile(xr, &s.wt[0], nb/4, y[0], y[1], y[2], y[3], n/2)
			}
			if n%2 == 1 {
				tile(xr, &s.wt[(n/2)*pairBytes], nb/4, &odd[0], &odd[2], &odd[4], &odd[6], 1)
				for l := range y {
					if i := 4*g + l; i < j.m {
						j.y[i*w.Rows+r+n-1] = odd[2*l]
					}
				}
			}
		}
	}
	addBias(j, lo, hi)
}

// addBias adds the bias to outputs [lo, hi) of every row.
func addBias(j *matmulJob, lo, hi int) {
	if j.bias == nil {
		return
	}
	for i := range j.m {
		y := j.y[i*j.w.Rows+lo : i*j.w.Rows+hi]
		for k := range y {
			y[k] += j.bias[lo+k]
		}
	}
}

func growFloats(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// chunkAlign is what the rows of a matrix product's chunks are a multiple
// of (rowChunk).
func chunkAlign(Matrix) int { return 16 }
