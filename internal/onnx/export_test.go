package onnx

import (
	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program"
)

// QuantGraphs returns, for a q8 or q4 tensor [N, K] of a program, two graphs over its
// MatMulNBits initializers: "product" maps x f32 [R, K] to y = x Wᵀ f32 [R, N], and
// "rows" maps ids i64 [R] to the dequantized rows W[ids] f32 [R, K] (the embedding path).
func QuantGraphs(tensors []program.Tensor, name string, R int) (product, rows []byte, inits []Initializer) {
	w := newWeights(tensors)
	t := w.tensors[name]
	N, K := int64(t.Shape[0]), int64(t.Shape[1])

	g := newGraph("product")
	g.input("x", Float, int64(R), K)
	blocks, scales, bits := w.quantized(g, t)
	y := g.msOp("MatMulNBits", []string{"x", blocks, scales},
		attrInt("K", K), attrInt("N", N), attrInt("bits", int64(bits)), attrInt("block_size", kernels.BlockSize))
	g.opNamed("Identity", "y", []string{y})
	g.outputs = []valueInfo{{name: "y", typ: Float, dims: []int64{int64(R), N}}}
	product = g.encode(Producer, "test", nil)

	g = newGraph("rows")
	g.input("ids", Int64, int64(R))
	b := &builder{g: g, w: w, B: 1, S: R}
	g.opNamed("Identity", "y", []string{b.gatherQuantized(t, "ids")})
	g.outputs = []valueInfo{{name: "y", typ: Float, dims: []int64{int64(R), K}}}
	rows = g.encode(Producer, "test", nil)
	return product, rows, w.list
}

// InitializerData is Initializer.Data for a tensor given by its table entry and bytes.
func InitializerData(in Initializer, t program.Tensor, data []byte) ([]byte, error) {
	return in.convert(t, data)
}
