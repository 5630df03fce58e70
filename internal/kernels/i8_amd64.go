//go:build amd64 && !purego

package kernels

// The q8/q4 matrix product of x86 CPUs without AVX-512 VNNI: the avx2 and
// avx512 routes (int8 dot products by VPMADDUBSW and VPMADDWD) and the
// avx2+vnni route (VPDPBUSD on ymm, AVX-VNNI), for weights whose rows are
// whole blocks. The
// kernels are asmgen/i8.go's; what they compute is described there: per
// group of 8 blocks, the exact integer dot product of each block in its own
// lane, then the same float operations whatever kernel runs them, so every
// output is the same whatever m is (and on both routes).
//
// One input row (decode) streams the weight rows (<p>RowStream<q>AVX2); up
// to i8StreamMax rows take the stream once per row over blocks of weight
// rows small enough to stay in L1 between the passes; more rows (prefill)
// take register tiles (<p>Tile<q>AVX2_<mr>x<nr>) of activation rows
// transposed per group when they are quantized (quantizeXI8TAVX2) and of
// weight rows transposed per panel into the thread's scratch
// (transposeW<q>AVX2).

// Sizes of the records the kernels read (must match asmgen/i8.go): a group
// of 8 blocks of a prepared activation row (256 bytes of quants, 8 scales,
// 8 offsets) and of a laid-out weight row (256 bytes of quants, 8 scales).
const (
	i8XGroup = 320
	i8WGroup = 288
)

// i8StreamMax is the most input rows that take the row stream (once per
// row); i8PassBytes bounds the weight rows each pass covers, so that the
// passes after the first read them from L1. (A variable: tests and
// benchmarks compare the stream with the tiles.)
var i8StreamMax = 2

const i8PassBytes = 16 << 10

type i8TileFunc func(xg *byte, ldx int, wt *byte, ldwt int, ng int, y *float32, ldy int)

// i8TileSet is a family of int8 tiles: up to m activation rows × n weight
// rows, f[mr-1][nr-1].
type i8TileSet struct {
	m, n int
	f    [4][3]i8TileFunc
}

// i8Kernels are one route's int8 kernels, per weight type ([0] q8, [1] q4),
// and the shift of the offset the quantized activations carry (xo =
// -(block sum << shift), for the weights' offsets: q4 8, q8 128 on
// avx2+vnni; avx2's q8 has none).
type i8Kernels struct {
	stream    [2]func(xg *byte, w *byte, ldw int, nb int, y *float32, n int)
	transpose [2]func(w *byte, nb int, dst *byte)
	tiles     [2]*i8TileSet
	shift     [2]int
}

var (
	i8AVX2 = i8Kernels{
		stream:    [2]func(xg *byte, w *byte, ldw int, nb int, y *float32, n int){i8RowStreamQ8AVX2, i8RowStreamQ4AVX2},
		transpose: [2]func(w *byte, nb int, dst *byte){transposeWQ8AVX2, transposeWQ4AVX2},
		tiles: [2]*i8TileSet{
			{m: 3, n: 3, f: [4][3]i8TileFunc{
				{i8TileQ8AVX2_1x1, i8TileQ8AVX2_1x2, i8TileQ8AVX2_1x3},
				{i8TileQ8AVX2_2x1, i8TileQ8AVX2_2x2, i8TileQ8AVX2_2x3},
				{i8TileQ8AVX2_3x1, i8TileQ8AVX2_3x2, i8TileQ8AVX2_3x3},
			}},
			{m: 4, n: 3, f: [4][3]i8TileFunc{
				{i8TileQ4AVX2_1x1, i8TileQ4AVX2_1x2, i8TileQ4AVX2_1x3},
				{i8TileQ4AVX2_2x1, i8TileQ4AVX2_2x2, i8TileQ4AVX2_2x3},
				{i8TileQ4AVX2_3x1, i8TileQ4AVX2_3x2, i8TileQ4AVX2_3x3},
				{i8TileQ4AVX2_4x1, i8TileQ4AVX2_4x2, i8TileQ4AVX2_4x3},
			}},
		},
		shift: [2]int{0, 3},
	}
	i8AVXVNNI = i8Kernels{
		stream:    [2]func(xg *byte, w *byte, ldw int, nb int, y *float32, n int){vnniRowStreamQ8AVX2, vnniRowStreamQ4AVX2},
		transpose: [2]func(w *byte, nb int, dst *byte){transposeWQ8UAVX2, transposeWQ4AVX2},
		tiles: [2]*i8TileSet{
			{m: 4, n: 3, f: [4][3]i8TileFunc{
				{vnniTileQ8AVX2_1x1, vnniTileQ8AVX2_1x2, vnniTileQ8AVX2_1x3},
				{vnniTileQ8AVX2_2x1, vnniTileQ8AVX2_2x2, vnniTileQ8AVX2_2x3},
				{vnniTileQ8AVX2_3x1, vnniTileQ8AVX2_3x2, vnniTileQ8AVX2_3x3},
				{vnniTileQ8AVX2_4x1, vnniTileQ8AVX2_4x2, vnniTileQ8AVX2_4x3},
			}},
			{m: 4, n: 3, f: [4][3]i8TileFunc{
				{vnniTileQ4AVX2_1x1, vnniTileQ4AVX2_1x2, vnniTileQ4AVX2_1x3},
				{vnniTileQ4AVX2_2x1, vnniTileQ4AVX2_2x2, vnniTileQ4AVX2_2x3},
				{vnniTileQ4AVX2_3x1, vnniTileQ4AVX2_3x2, vnniTileQ4AVX2_3x3},
				{vnniTileQ4AVX2_4x1, vnniTileQ4AVX2_4x2, vnniTileQ4AVX2_4x3},
			}},
		},
		shift: [2]int{7, 3},
	}
)

// i8Route returns the int8 kernels of the route in use.
func i8Route() *i8Kernels {
	if useAVXVNNI {
		return &i8AVXVNNI
	}
	return &i8AVX2
}

// i8Type indexes i8Kernels by weight type.
func i8Type(t WeightType) int {
	if t == Q4 {
		return 1
	}
	return 0
}

// useI8 reports whether a matrix product takes these int8 kernels: q8/q4
// rows of whole blocks, outside ExactQuantized pools, on the AVX2 routes and
// on avx512 (AVX-512 without VNNI, whose CPUs all have AVX2): its own
// float kernels for q8/q4 (a packed GEMM for prefill, rows for decode) do
// not give a prefill row the decode product's arithmetic.
func (p *Pool) useI8(w Matrix) bool {
	return (useAVX2 || useAVX512 && !useVNNI) && (w.Type == Q8 || w.Type == Q4) && w.Cols%BlockSize == 0 && useRowStream && !p.exact
}

// prepareI8 quantizes the input rows into records for the int8 kernels
// (see the top of this file), on every thread for a prefill.
func (p *Pool) prepareI8(j *matmulJob) {
	nb := j.w.Cols / BlockSize
	ng := (nb + 7) / 8
	ld := ng * i8XGroup
	if cap(p.xq8) < j.m*ld {
		p.xq8 = make([]byte, j.m*ld)
	}
	j.xq8, j.i8, j.nbp = p.xq8[:j.m*ld], true, 8*ng
	if p.prepRow == nil {
		p.prepRow = p.prepareRow
	}
	if j.m > i8StreamMax && p.threads > 1 && !p.closed.Load() {
		p.runFor(j.m, (j.m+2*p.threads-1)/(2*p.threads), p.prepRow)
		return
	}
	for i := range j.m {
		p.prepareRowI8(i)
	}
}

// prepareRowI8 quantizes input row i of the current job (p.job) in the
// layout its kernel reads: transposed for the tiles, in order for the q8
// stream, in pairs of half blocks for the q4 one.
func (p *Pool) prepareRowI8(i int) {
	j := &p.job
	cols := j.w.Cols
	nb := cols / BlockSize
	ld := j.nbp / 8 * i8XGroup
	rec := j.xq8[i*ld : (i+1)*ld]
	if nb%8 != 0 {
		clear(rec[ld-i8XGroup:]) // the last group's missing blocks count as zero
	}
	quantize := quantizeXI8AVX2
	switch {
	case j.m > i8StreamMax:
		quantize = quantizeXI8TAVX2
	case j.w.Type == Q4:
		quantize = quantizeXI8PairsAVX2
	}
	quantize(&j.x[i*cols], nb, &rec[0], i8Route().shift[i8Type(j.w.Type)])
}

// i8Rows computes output columns [lo, hi) of the int8 matrix product.
func i8Rows(p *Pool, id int, j *matmulJob, lo, hi int) {
	w := j.w
	k, q := i8Route(), i8Type(w.Type)
	nb := w.Cols / BlockSize
	rb := w.Type.RowBytes(w.Cols)
	ld := j.nbp / 8 * i8XGroup
	switch {
	case j.m == 1:
		k.stream[q](&j.xq8[0], &w.Data[lo*rb], rb, nb, &j.y[lo], hi-lo)
	case j.m <= i8StreamMax:
		blk := max(1, i8PassBytes/rb)
		for b := lo; b < hi; b += blk {
			e := min(b+blk, hi)
			for i := range j.m {
				k.stream[q](&j.xq8[i*ld], &w.Data[b*rb], rb, nb, &j.y[i*w.Rows+b], e-b)
			}
		}
	default:
		i8TileRows(p, id, j, k, q, lo, hi)
	}
	if j.bias != nil {
		for i := range j.m {
			y := j.y[i*w.Rows+lo : i*w.Rows+hi]
			for r := range y {
				y[r] += j.bias[lo+r]
			}
		}
	}
}

// i8TileRows is the int8 matrix product of many input rows: each panel of
// weight rows laid out into the thread's scratch once, then multiplied with
// every group of activation rows.
func i8TileRows(p *Pool, id int, j *matmulJob, k *i8Kernels, q, lo, hi int) {
	w := j.w
	ts := k.tiles[q]
	nb := w.Cols / BlockSize
	rb := w.Type.RowBytes(w.Cols)
	ng := j.nbp / 8
	ldx, ldw := ng*i8XGroup, ng*i8WGroup
	s := &p.scratch[id]
	if len(s.wt) < ts.n*ldw {
		s.wt = make([]byte, ts.n*ldw)
	}
	for r := lo; r < hi; r += ts.n {
		nr := min(ts.n, hi-r)
		for kk := range nr {
			k.transpose[q](&w.Data[(r+kk)*rb], nb, &s.wt[kk*ldw])
		}
		for i := 0; i < j.m; i += ts.m {
			mr := min(ts.m, j.m-i)
			ts.f[mr-1][nr-1](&j.xq8[i*ldx], ldx, &s.wt[0], ldw, ng, &j.y[i*w.Rows+r], w.Rows)
		}
	}
}
