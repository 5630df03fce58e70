//go:build purego || !(amd64 || arm64)

package kernels

func dot(a, b []float32) float32                   { return dotGeneric(a, b) }
func dots(out, q, k []float32, ld int)             { dotsGeneric(out, q, k, ld) }
func dotsF16(out, q []float32, k []uint16, ld int) { dotsF16Generic(out, q, k, ld) }
func axpys(y, p, v []float32, ld int)              { axpysGeneric(y, p, v, ld) }
func dotsF16N(out []float32, ldo, rows int, q []float32, ldq, nq, d int, k []uint16, ld int) {
	dotsF16NGeneric(out, ldo, rows, q, ldq, nq, d, k, ld)
}
func axpysF16N(y []float32, ldy, d int, p []float32, ldp, nq, rows int, v []uint16, ld int) {
	axpysF16NGeneric(y, ldy, d, p, ldp, nq, rows, v, ld)
}
func axpysF16(y, p []float32, v []uint16, ld int)    { axpysF16Generic(y, p, v, ld) }
func axpy(alpha float32, x, y []float32)             { axpyGeneric(alpha, x, y) }
func dotF16(a []float32, b []uint16) float32         { return dotF16Generic(a, b) }
func axpyF16(alpha float32, x []uint16, y []float32) { axpyF16Generic(alpha, x, y) }
func f32ToF16Slice(dst []uint16, src []float32)      { f32ToF16SliceGeneric(dst, src) }
func f16ToF32Slice(dst []float32, src []uint16)      { f16ToF32SliceGeneric(dst, src) }
func rmsNorm(dst, x, w []float32, eps float32)       { rmsNormGeneric(dst, x, w, eps) }
func softmax(x []float32)                            { softmaxGeneric(x) }
func siluMul(dst, gate, up []float32)                { siluMulGeneric(dst, gate, up) }
func geluTanhMul(dst, gate, up []float32)            { geluTanhMulGeneric(dst, gate, up) }
func add(dst, a, b []float32)                        { addGeneric(dst, a, b) }
func scale(x []float32, s float32)                   { scaleGeneric(x, s) }
func softCap(x []float32, cap float32)               { softCapGeneric(x, cap) }
func rope(x1, x2, cos, sin []float32)                { ropeGeneric(x1, x2, cos, sin) }
func dequantizeRow(t WeightType, row []byte, dst []float32) {
	dequantizeRowGeneric(t, row, dst)
}

func matmulRows(p *Pool, id int, j *matmulJob, lo, hi int) {
	matmulRowsGeneric(p, id, j.y, j.x, j.m, j.w, j.bias, lo, hi)
}

func (p *Pool) prepare(j *matmulJob) {}

// gemmScratch is the packing memory of the assembly matrix product; the
// pure-Go build has none.
type gemmScratch struct{}

// chunkAlign is what the rows of a matrix product's chunks are a multiple
// of (rowChunk).
func chunkAlign(Matrix) int { return 16 }
