package onnx

import (
	"fmt"
	"math"

	"github.com/hfstatic/hfstatic/program"
)

// The graph of an hf_encode method (docs/contract.md, section 10): input_ids,
// attention_mask [B, S] (and token_type_ids) in, embeddings or scores [B, dim] out. Rows are
// the B·S tokens of the batch, padding included (a fixed-shape graph computes every row);
// attention is masked to each sequence's real keys, pooling to its real rows, and the rows of
// unused sequences are zeroed, as the contract asks.

// maskBias is added to the scores of masked keys: exp(maskBias - max) is 0 in float32, and a
// row whose keys are all masked (an unused sequence) stays finite.
const maskBias = -1e9

// buildEncodeMethod translates an hf_encode method.
func buildEncodeMethod(md *program.Metadata, m *program.Method, w *weights) (*graph, error) {
	e := md.Encoder
	if e == nil {
		return nil, fmt.Errorf("onnx: hf_encode program without encoder metadata")
	}
	B, L := e.Batch, md.MaxContext
	b := newBuilder(md, m, w, B*L, L)
	// encoders keep Gemm(transB=1) over the program's f32 bytes: they run many rows at once
	// (where it measured faster than MatMul over a transposed copy), and ORT 1.30 fails to
	// create the rerankers' sessions with the copy (it reads a supplied initializer from
	// its external location; not understood: disabling its fusions and constant folding
	// did not change it, docs/delegate.md)
	b.gemmF32 = true
	g := b.g
	g.input(program.InputIDs, Int64, int64(B), int64(L))
	g.input(program.AttentionMask, Bool, int64(B), int64(L))
	if e.TokenTypes > 0 {
		g.input(program.TokenTypeIDs, Int64, int64(B), int64(L))
	}
	pos := make([]int64, B*L) // a token's position: its index in its sequence
	for i := range pos {
		pos[i] = int64(i % L)
	}
	b.posFlat = g.ints(pos...)
	enc := &encodeBuilder{builder: b, B: int64(B), L: int64(L)}
	for i := range m.Ops {
		op := &m.Ops[i]
		if err := enc.op(op); err != nil {
			return nil, &OpError{Method: m.Name, Index: i, Kind: op.Kind, Problem: err.Error()}
		}
	}
	name, _ := e.OutputName()
	y, ok := b.cur[name]
	if !ok {
		return nil, fmt.Errorf("onnx: method %q writes no %s", m.Name, name)
	}
	used := g.reshape(g.cast(g.slice(program.AttentionMask, 1, 0, 1), Float), int64(B), 1) // [B,1]: 1 for used sequences
	g.opNamed("Mul", name, []string{y, used})
	g.outputs = append(g.outputs, valueInfo{name: name, typ: Float, dims: []int64{int64(B), int64(e.Dim)}})
	return g, nil
}

// encodeBuilder translates the ops of an hf_encode method; the ops they share with hf_static
// ones go through builder.op.
type encodeBuilder struct {
	*builder
	B, L  int64  // sequences, tokens per sequence
	maskF string // attention_mask as float [B, L]
	bias  string // the keys' mask bias [B, 1, 1, L]
}

func (b *encodeBuilder) op(op *program.Op) error {
	g := b.g
	var y string
	var err error
	switch op.Kind {
	case program.OpEmbed:
		if op.In[0] != program.TokenTypeIDs {
			return b.builder.op(op)
		}
		t, err := b.tensor(op.In[1])
		if err != nil {
			return err
		}
		table, typ, err := b.w.raw(g, t.Name)
		if err != nil {
			return err
		}
		y = g.op("Gather", []string{table, g.reshape(program.TokenTypeIDs, b.B*b.L)}, attrInt("axis", 0))
		if typ != Float {
			y = g.cast(y, Float)
		}
		if op.Attr.Scale != 1 {
			y = g.binary("Mul", y, g.f32(op.Attr.Scale))
		}
	case program.OpRoPE, program.OpRMSNorm, program.OpLinear, program.OpAdd, program.OpGLU, program.OpScale, program.OpSoftCap:
		return b.builder.op(op)
	case program.OpLayerNorm:
		y, err = b.layerNorm(op)
	case program.OpActivation:
		y, err = b.activation(op)
	case program.OpPositionEmbed:
		y, err = b.positionEmbed(op)
	case program.OpSelfAttention:
		y, err = b.selfAttention(op)
	case program.OpPool:
		y, err = b.pool(op)
	case program.OpL2Normalize:
		x, err := b.value(op.In[0])
		if err != nil {
			return err
		}
		norm := g.op("Sqrt", []string{g.op("ReduceSum", []string{g.binary("Mul", x, x), g.ints(-1)}, attrInt("keepdims", 1))})
		y = g.binary("Div", x, g.op("Max", []string{norm, g.f32(op.Attr.Eps)}))
	default:
		return fmt.Errorf("no ONNX translation for op kind %q in an hf_encode method", op.Kind)
	}
	if err != nil {
		return err
	}
	b.cur[op.Out[0]] = y
	return nil
}

// layerNorm is LayerNormalization over each group of width values.
func (b *encodeBuilder) layerNorm(op *program.Op) (string, error) {
	in, err := b.values(op)
	if err != nil {
		return "", err
	}
	g, w, W := b.g, int64(op.Attr.Width), int64(b.width[op.In[0]])
	if W == 0 || W%w != 0 {
		return "", fmt.Errorf("norm width %d does not divide %q's width %d", w, op.In[0], W)
	}
	x := in[0]
	if w != W {
		x = g.reshape(x, -1, w)
	}
	y := g.op("LayerNormalization", []string{x, in[1], in[2]}, attrInt("axis", -1), attrFloat("epsilon", op.Attr.Eps))
	if w != W {
		y = g.reshape(y, -1, W)
	}
	return y, nil
}

func (b *encodeBuilder) activation(op *program.Op) (string, error) {
	x, err := b.value(op.In[0])
	if err != nil {
		return "", err
	}
	g := b.g
	switch op.Attr.Activation {
	case program.ActGELU: // ½·x·(1 + erf(x/√2))
		erf := g.op("Erf", []string{g.binary("Mul", x, g.f32(float32(1/math.Sqrt2)))})
		return g.binary("Mul", g.binary("Mul", x, g.f32(0.5)), g.binary("Add", erf, g.f32(1))), nil
	case program.ActGELUTanh, program.ActSiLU:
		return b.glu(op.Attr.Activation, x, g.f32(1))
	case program.ActTanh:
		return g.op("Tanh", []string{x}), nil
	case program.ActReLU:
		return g.op("Relu", []string{x}), nil
	}
	return "", fmt.Errorf("activation %q", op.Attr.Activation)
}

// positionEmbed adds the position table's row of each token's position.
func (b *encodeBuilder) positionEmbed(op *program.Op) (string, error) {
	g := b.g
	x, err := b.value(op.In[0])
	if err != nil {
		return "", err
	}
	t, err := b.tensor(op.In[1])
	if err != nil {
		return "", err
	}
	if int64(t.Shape[0]) < b.L {
		return "", fmt.Errorf("position table %q has %d rows for sequences of %d", t.Name, t.Shape[0], b.L)
	}
	var rows string
	switch t.DType {
	case program.F32, program.F16, program.BF16:
		table, typ, err := b.w.raw(g, t.Name)
		if err != nil {
			return "", err
		}
		rows = g.op("Gather", []string{table, b.positions()}, attrInt("axis", 0))
		if typ != Float {
			rows = g.cast(rows, Float)
		}
	case program.Q8, program.Q4:
		rows = b.gatherQuantized(t, b.positions())
	default:
		return "", fmt.Errorf("position table %q has dtype %s", t.Name, t.DType)
	}
	return g.binary("Add", x, rows), nil
}

// keyBias is the mask bias of the keys, [B, 1, 1, L]: 0 for real keys, maskBias for padding.
func (b *encodeBuilder) keyBias() string {
	if b.bias == "" {
		g := b.g
		m := g.reshape(b.maskFloat(), b.B, 1, 1, b.L)
		b.bias = g.binary("Mul", g.binary("Sub", g.f32(1), m), g.f32(maskBias))
	}
	return b.bias
}

func (b *encodeBuilder) maskFloat() string {
	if b.maskF == "" {
		b.maskF = b.g.cast(program.AttentionMask, Float)
	}
	return b.maskF
}

// selfAttention: per sequence and head, softmax(q·kᵀ·scale + mask)·v over the sequence's keys.
func (b *encodeBuilder) selfAttention(op *program.Op) (string, error) {
	in, err := b.values(&program.Op{In: op.In[:3]})
	if err != nil {
		return "", err
	}
	g, at := b.g, op.Attr
	Hq, Hkv, Dk, Dv := int64(at.Heads), int64(at.KVHeads), int64(at.HeadDim), int64(at.VHeadDim)
	q := g.transpose(g.reshape(in[0], b.B, b.L, Hq, Dk), 0, 2, 1, 3)  // [B, Hq, L, Dk]
	k := g.transpose(g.reshape(in[1], b.B, b.L, Hkv, Dk), 0, 2, 3, 1) // [B, Hkv, Dk, L]
	v := g.transpose(g.reshape(in[2], b.B, b.L, Hkv, Dv), 0, 2, 1, 3) // [B, Hkv, L, Dv]
	if Hq != Hkv {                                                    // each kv head serves Hq/Hkv consecutive query heads
		rep := Hq / Hkv
		k = g.reshape(g.op("Expand", []string{g.op("Unsqueeze", []string{k, g.ints(2)}), g.ints(b.B, Hkv, rep, Dk, b.L)}), b.B, Hq, Dk, b.L)
		v = g.reshape(g.op("Expand", []string{g.op("Unsqueeze", []string{v, g.ints(2)}), g.ints(b.B, Hkv, rep, b.L, Dv)}), b.B, Hq, b.L, Dv)
	}
	s := g.binary("Add", g.binary("Mul", g.binary("MatMul", q, k), g.f32(at.Scale)), b.keyBias()) // [B, Hq, L, L]
	if at.Causal {
		tri := make([]byte, 4*b.L*b.L)
		for i := range b.L {
			for j := i + 1; j < b.L; j++ {
				putF32(tri[4*(i*b.L+j):], maskBias)
			}
		}
		s = g.binary("Add", s, g.constant(Float, []int64{b.L, b.L}, tri))
	}
	o := g.binary("MatMul", g.op("Softmax", []string{s}, attrInt("axis", -1)), v) // [B, Hq, L, Dv]
	return g.reshape(g.transpose(o, 0, 2, 1, 3), b.B*b.L, Hq*Dv), nil
}

// pool turns each sequence's real rows into one row: [B·L, D] → [B, D].
func (b *encodeBuilder) pool(op *program.Op) (string, error) {
	g := b.g
	x, err := b.value(op.In[0])
	if err != nil {
		return "", err
	}
	D := int64(b.width[op.In[0]])
	x3 := g.reshape(x, b.B, b.L, D)
	m3 := g.reshape(b.maskFloat(), b.B, b.L, 1)
	switch op.Attr.Pooling {
	case program.PoolCLS:
		return g.reshape(g.slice(x3, 1, 0, 1), b.B, D), nil
	case program.PoolMean:
		sum := g.op("ReduceSum", []string{g.binary("Mul", x3, m3), g.ints(1)}, attrInt("keepdims", 0))
		n := g.op("Max", []string{g.op("ReduceSum", []string{m3, g.ints(1)}, attrInt("keepdims", 0)), g.f32(1)})
		return g.binary("Div", sum, n), nil
	case program.PoolMax:
		masked := g.op("Where", []string{g.reshape(program.AttentionMask, b.B, b.L, 1), x3, g.f32(float32(math.Inf(-1)))})
		return g.op("ReduceMax", []string{masked}, attrInts("axes", 1), attrInt("keepdims", 0)), nil
	case program.PoolLast:
		n := g.op("ReduceSum", []string{m3, g.ints(1)}, attrInt("keepdims", 1))    // [B, 1, 1]
		idx := g.reshape(iotaF32(g, b.L), 1, b.L, 1)                               // [1, L, 1]
		hot := g.cast(g.binary("Equal", idx, g.binary("Sub", n, g.f32(1))), Float) // [B, L, 1]
		return g.op("ReduceSum", []string{g.binary("Mul", x3, hot), g.ints(1)}, attrInt("keepdims", 0)), nil
	}
	return "", fmt.Errorf("pooling %q", op.Attr.Pooling)
}

// iotaF32 is the constant 0, 1, …, n-1 as float32 [n].
func iotaF32(g *graph, n int64) string {
	raw := make([]byte, 4*n)
	for i := range n {
		putF32(raw[4*i:], float32(i))
	}
	return g.constant(Float, []int64{n}, raw)
}

func putF32(b []byte, v float32) {
	u := math.Float32bits(v)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}
