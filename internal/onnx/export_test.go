package onnx

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"

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

// MatMulNBitsGraph is a graph of one MatMulNBits node, y = x Wᵀ with x f32 [M, K] and W
// [N, K] as random bits-bit blocks of blockSize (uint8 zero points of the midpoint if zp,
// none otherwise) at accuracy level acc: for timing MLAS's variants
// (BenchmarkMatMulNBitsVariants).
func MatMulNBitsGraph(M, N, K, bits, blockSize, acc int64, zp bool) []byte {
	rng := rand.New(rand.NewPCG(uint64(N), uint64(K)))
	g := newGraph("matmulnbits")
	g.input("x", Float, M, K)
	nb := (K + blockSize - 1) / blockSize
	b := make([]byte, N*nb*blockSize*bits/8)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	s := make([]byte, 4*N*nb)
	for i := 0; i < len(s); i += 4 {
		binary.LittleEndian.PutUint32(s[i:], math.Float32bits(0.01+0.01*rng.Float32()))
	}
	g.inits = append(g.inits, tensor{name: "B", typ: Uint8, dims: []int64{N, nb, blockSize * bits / 8}, raw: b},
		tensor{name: "S", typ: Float, dims: []int64{N, nb}, raw: s})
	in := []string{"x", "B", "S"}
	if zp {
		z := bytes.Repeat([]byte{0x88}, int(N*((nb+1)/2))) // two 4-bit zero points of 8 a byte
		if bits == 8 {
			z = bytes.Repeat([]byte{128}, int(N*nb))
		}
		g.inits = append(g.inits, tensor{name: "Z", typ: Uint8, dims: []int64{int64(len(z))}, raw: z})
		in = append(in, "Z")
	}
	y := g.msOp("MatMulNBits", in, attrInt("K", K), attrInt("N", N), attrInt("bits", bits),
		attrInt("block_size", blockSize), attrInt("accuracy_level", acc))
	g.opNamed("Identity", "y", []string{y})
	g.outputs = []valueInfo{{name: "y", typ: Float, dims: []int64{M, N}}}
	return g.encode(Producer, "test", nil)
}
