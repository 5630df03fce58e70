//go:build ort

package ort

import (
	"encoding/binary"
	"math"
)

// A minimal ONNX ModelProto writer for tests: just the protobuf fields the test graphs use
// (field numbers from onnx/onnx.proto).

type pb []byte

func (b pb) varint(v uint64) pb        { return binary.AppendUvarint(b, v) }
func (b pb) tag(field, wire int) pb    { return b.varint(uint64(field<<3 | wire)) }
func (b pb) int(field int, v int64) pb { return b.tag(field, 0).varint(uint64(v)) }
func (b pb) bytes(field int, v []byte) pb {
	return append(b.tag(field, 2).varint(uint64(len(v))), v...)
}
func (b pb) str(field int, s string) pb { return b.bytes(field, []byte(s)) }

// valueInfo is a ValueInfoProto of a tensor.
func valueInfo(name string, elem int, dims ...int64) []byte {
	var shape pb
	for _, d := range dims {
		shape = shape.bytes(1, pb(nil).int(1, d)) // Dimension.dim_value
	}
	tensor := pb(nil).int(1, int64(elem)).bytes(2, shape) // TypeProto.Tensor
	typ := pb(nil).bytes(1, tensor)                       // TypeProto.tensor_type
	return pb(nil).str(1, name).bytes(2, typ)
}

// node is a NodeProto.
func node(op string, in, out []string, attrs ...[]byte) []byte {
	var b pb
	for _, s := range in {
		b = b.str(1, s)
	}
	for _, s := range out {
		b = b.str(2, s)
	}
	b = b.str(4, op)
	for _, a := range attrs {
		b = b.bytes(5, a)
	}
	return b
}

// externalTensor is a TensorProto whose data lives outside the model (supplied at
// session creation).
func externalTensor(name string, elem int, dims ...int64) []byte {
	var b pb
	for _, d := range dims {
		b = b.int(1, d)
	}
	b = b.int(2, int64(elem)).str(8, name)
	b = b.bytes(13, pb(nil).str(1, "location").str(2, "w.bin"))
	b = b.bytes(13, pb(nil).str(1, "offset").str(2, "0"))
	return b.int(14, 1) // data_location EXTERNAL
}

// f32Tensor is a TensorProto with inline float data.
func f32Tensor(name string, vals []float32, dims ...int64) []byte {
	var b pb
	for _, d := range dims {
		b = b.int(1, d)
	}
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return b.int(2, elemFloat).str(8, name).bytes(9, raw)
}

type graphSpec struct {
	nodes, inits, inputs, outputs [][]byte
}

// model is a ModelProto (IR version 8, opset 17).
func (g graphSpec) model() []byte {
	var gr pb
	for _, n := range g.nodes {
		gr = gr.bytes(1, n)
	}
	gr = gr.str(2, "test")
	for _, t := range g.inits {
		gr = gr.bytes(5, t)
	}
	for _, v := range g.inputs {
		gr = gr.bytes(11, v)
	}
	for _, v := range g.outputs {
		gr = gr.bytes(12, v)
	}
	opset := pb(nil).str(1, "").int(2, 17)
	return pb(nil).int(1, 8).bytes(8, opset).bytes(7, gr)
}
