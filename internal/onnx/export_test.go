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
	return in.convertInto(t, data, nil)
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

// LinearForm is one way of writing y = x Wᵀ (x f32 [M, K], W [N, K]) as an ONNX graph, for
// timing against the others (BenchmarkLinearForms): Model is the graph, Inputs the
// weight tensors fed as graph inputs (name → type, dims, bytes) in the forms where ORT must
// not see them as constants, and Ref y in float64 over the same dequantized weights for x
// = float32(sin(i)) (time.mjs's input).
type LinearForm struct {
	Model  []byte
	Inputs []LinearInput
	Ref    []float64
}

// LinearInput is a weight fed as a graph input.
type LinearInput struct {
	Name, Type string // Type as onnxruntime-common names it: "int8", "uint8", "float32"
	Dims       []int64
	Data       []byte
}

// Element types of the DequantizeLinear forms (opset 21).
const (
	int8Type ElemType = 3
	int4Type ElemType = 22
)

// LinearFormGraph builds form for a random weight [N, K]: bits 4 or 8 quantized
// symmetrically in blocks of 32 along K (signed values, one f32 scale per block, no zero
// point: the programs' q4/q8), bits 0 for f32 weights (the q4 values dequantized). Forms:
//
//	"nbits"      MatMulNBits, accuracy_level 4, over [N, K/32, 32·bits/8] (the builder's q4/q8)
//	"dq"         DequantizeLinear (opset 21, block_size 32, axis 0) of an int4/int8 [K, N]
//	             initializer, then MatMul
//	"dq-input"   the same with the int8 [K, N] weight a graph input (never folded)
//	"gemm"       Gemm(transB=1) over the f32 [N, K] initializer (the builder's f32)
//	"matmul"     MatMul over an f32 [K, N] initializer (a transposed copy)
//	"transpose"  Transpose of the f32 [N, K] initializer, then MatMul
//	"fusedmatmul" com.microsoft FusedMatMul(transB=1) over the f32 [N, K] initializer
func LinearFormGraph(form string, M, N, K int64, bits int) LinearForm {
	const blk = 32
	rng := rand.New(rand.NewPCG(uint64(N), uint64(K)))
	nb := K / blk
	q := make([]int8, N*K)
	lim := int32(8)
	if bits == 8 {
		lim = 128
	}
	for i := range q {
		q[i] = int8(int32(rng.Uint32N(uint32(2*lim))) - lim)
	}
	if bits == 0 {
		lim = 8
		for i := range q {
			q[i] = int8(int32(rng.Uint32N(16)) - 8)
		}
	}
	scale := make([]float32, N*nb)
	for i := range scale {
		scale[i] = 0.01 + 0.01*rng.Float32()
	}
	w := func(n, k int64) float32 { return scale[n*nb+k/blk] * float32(q[n*K+k]) } // exact in f32
	x := make([]float32, M*K)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	ref := make([]float64, M*N)
	for m := range M {
		for n := range N {
			var s float64
			for k := range K {
				s += float64(x[m*K+k]) * float64(w(n, k))
			}
			ref[m*N+n] = s
		}
	}
	f32 := func(v []float32) []byte {
		b := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		return b
	}
	g := newGraph("linear")
	g.input("x", Float, M, K)
	var inputs []LinearInput
	var y string
	switch form {
	case "nbits":
		per := blk * int64(bits) / 8
		b := make([]byte, N*nb*per)
		for n := range N {
			for k := range K {
				i := n*nb*per + (k/blk)*per
				if bits == 8 {
					b[i+k%blk] = byte(int32(q[n*K+k]) + 128)
				} else {
					b[i+(k%blk)/2] |= byte(int32(q[n*K+k])+8) << (4 * (k % 2))
				}
			}
		}
		g.inits = append(g.inits, tensor{name: "B", typ: Uint8, dims: []int64{N, nb, per}, raw: b},
			tensor{name: "S", typ: Float, dims: []int64{N, nb}, raw: f32(scale)})
		y = g.msOp("MatMulNBits", []string{"x", "B", "S"}, attrInt("K", K), attrInt("N", N), attrInt("bits", int64(bits)),
			attrInt("block_size", blk), attrInt("accuracy_level", 4))
	case "dq", "dq-input":
		g.opset = 21
		// W [K, N], scales [K/32, N]
		st := make([]float32, nb*N)
		for n := range N {
			for j := range nb {
				st[j*N+n] = scale[n*nb+j]
			}
		}
		typ, raw := int8Type, make([]byte, K*N)
		if bits == 4 {
			typ, raw = int4Type, make([]byte, (K*N+1)/2)
		}
		for k := range K {
			for n := range N {
				i, v := k*N+n, q[n*K+k]
				if bits == 4 {
					raw[i/2] |= (byte(v) & 0xf) << (4 * (i % 2))
				} else {
					raw[i] = byte(v)
				}
			}
		}
		if form == "dq-input" {
			if bits != 8 {
				panic("dq-input: int8 only (onnxruntime-node feeds no int4 tensors)")
			}
			g.input("W", typ, K, N)
			inputs = append(inputs, LinearInput{Name: "W", Type: "int8", Dims: []int64{K, N}, Data: raw})
		} else {
			g.inits = append(g.inits, tensor{name: "W", typ: typ, dims: []int64{K, N}, raw: raw})
		}
		g.inits = append(g.inits, tensor{name: "S", typ: Float, dims: []int64{nb, N}, raw: f32(st)})
		d := g.opNamed("DequantizeLinear", "wf", []string{"W", "S"}, attrInt("axis", 0), attrInt("block_size", blk))
		y = g.opNamed("MatMul", "p", []string{"x", d})
	case "gemm", "matmul", "transpose", "fusedmatmul":
		wf := make([]float32, N*K)
		for n := range N {
			for k := range K {
				wf[n*K+k] = w(n, k)
			}
		}
		switch form {
		case "gemm":
			g.inits = append(g.inits, tensor{name: "W", typ: Float, dims: []int64{N, K}, raw: f32(wf)})
			y = g.opNamed("Gemm", "p", []string{"x", "W"}, attrInt("transB", 1))
		case "fusedmatmul":
			g.inits = append(g.inits, tensor{name: "W", typ: Float, dims: []int64{N, K}, raw: f32(wf)})
			y = g.msOp("FusedMatMul", []string{"x", "W"}, attrInt("transB", 1))
		case "matmul":
			wt := make([]float32, K*N)
			for n := range N {
				for k := range K {
					wt[k*N+n] = wf[n*K+k]
				}
			}
			g.inits = append(g.inits, tensor{name: "W", typ: Float, dims: []int64{K, N}, raw: f32(wt)})
			y = g.opNamed("MatMul", "p", []string{"x", "W"})
		default:
			g.inits = append(g.inits, tensor{name: "W", typ: Float, dims: []int64{N, K}, raw: f32(wf)})
			t := g.opNamed("Transpose", "wt", []string{"W"}, attrInts("perm", 1, 0))
			y = g.opNamed("MatMul", "p", []string{"x", t})
		}
	default:
		panic("LinearFormGraph: no form " + form)
	}
	g.rename(y, "y")
	g.outputs = []valueInfo{{name: "y", typ: Float, dims: []int64{M, N}}}
	return LinearForm{Model: g.encode(Producer, "test", nil), Inputs: inputs, Ref: ref}
}
