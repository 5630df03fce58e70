package onnx

import (
	"encoding/binary"
	"math"
)

// The protobuf wire format of the ONNX messages this package writes, by hand: a varint
// or a length-delimited field per tag, field numbers from onnx/onnx.proto. Repeated
// scalars are written unpacked (proto2's default; every parser reads both forms).

// ElemType is an ONNX TensorProto.DataType.
type ElemType int32

// The element types the graphs use.
const (
	Float    ElemType = 1
	Uint8    ElemType = 2
	Int64    ElemType = 7
	Bool     ElemType = 9
	Float16  ElemType = 10
	BFloat16 ElemType = 16
)

// Size is the byte size of one element.
func (t ElemType) Size() int {
	switch t {
	case Float:
		return 4
	case Uint8, Bool:
		return 1
	case Int64:
		return 8
	case Float16, BFloat16:
		return 2
	}
	return 0
}

// Field numbers of onnx.proto.
const (
	modelIRVersion   = 1
	modelProducer    = 2
	modelProducerVer = 3
	modelGraph       = 7
	modelOpsetImport = 8
	modelMetadata    = 14

	opsetDomain  = 1
	opsetVersion = 2

	graphNode        = 1
	graphName        = 2
	graphInitializer = 5
	graphInput       = 11
	graphOutput      = 12

	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5
	nodeDomain    = 7

	attrName      = 1
	attrF         = 2
	attrI         = 3
	attrS         = 4
	attrIntsField = 8
	attrType      = 20
	attrTFloat    = 1
	attrTInt      = 2
	attrTStr      = 3
	attrTInts     = 7

	tensorDims         = 1
	tensorDataType     = 2
	tensorName         = 8
	tensorRawData      = 9
	tensorExternalData = 13
	tensorDataLocation = 14
	locationExternal   = 1

	entryKey   = 1
	entryValue = 2

	valueName        = 1
	valueType        = 2
	typeTensor       = 1
	typeTensorElem   = 1
	typeTensorShape  = 2
	shapeDim         = 1
	dimValue         = 1
	wireVarint       = 0
	wireFixed32      = 5
	wireLenDelimited = 2
)

// message is a protobuf message being encoded.
type message []byte

func (m *message) tag(field, wire int) {
	*m = binary.AppendUvarint(*m, uint64(field<<3|wire))
}

func (m *message) varint(field int, v int64) {
	m.tag(field, wireVarint)
	*m = binary.AppendUvarint(*m, uint64(v))
}

func (m *message) float(field int, f float32) {
	m.tag(field, wireFixed32)
	*m = binary.LittleEndian.AppendUint32(*m, math.Float32bits(f))
}

func (m *message) bytes(field int, b []byte) {
	m.tag(field, wireLenDelimited)
	*m = binary.AppendUvarint(*m, uint64(len(b)))
	*m = append(*m, b...)
}

func (m *message) str(field int, s string) { m.bytes(field, []byte(s)) }

// entry encodes a StringStringEntryProto.
func entry(key, value string) []byte {
	var e message
	e.str(entryKey, key)
	e.str(entryValue, value)
	return e
}

// tensorType encodes a TypeProto holding a tensor type of fixed shape.
func tensorType(t ElemType, dims []int64) []byte {
	var shape message
	for _, d := range dims {
		var dim message
		dim.varint(dimValue, d)
		shape.bytes(shapeDim, dim)
	}
	var tt message
	tt.varint(typeTensorElem, int64(t))
	tt.bytes(typeTensorShape, shape)
	var typ message
	typ.bytes(typeTensor, tt)
	return typ
}
