package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// Opset versions of the graphs: the ONNX domain at 17 (IR version 8) and, for
// MatMulNBits, com.microsoft at 1.
const (
	OpsetVersion = 17
	IRVersion    = 8
	MSDomain     = "com.microsoft"
)

// graph is an ONNX graph under construction. Values are named by the node that makes
// them ("v12" or a chosen name), so every name is written once (SSA).
type graph struct {
	name     string
	nodes    []node
	inits    []tensor // small constants with inline data, then external weights
	inputs   []valueInfo
	outputs  []valueInfo
	next     int
	consts   map[string]string // constant key → value name
	msDomain bool              // a node is in com.microsoft
	opset    int64             // the ONNX domain's opset, when not OpsetVersion (IR 10 then)
}

type node struct {
	op, domain string
	in, out    []string
	attrs      []attr
}

type attr struct {
	name string
	typ  int // attrTFloat, attrTInt, attrTStr, attrTInts
	f    float32
	i    int64
	s    string
	ints []int64
}

func attrInt(name string, v int64) attr     { return attr{name: name, typ: attrTInt, i: v} }
func attrFloat(name string, v float32) attr { return attr{name: name, typ: attrTFloat, f: v} }
func attrInts(name string, v ...int64) attr { return attr{name: name, typ: attrTInts, ints: v} }
func attrString(name string, v string) attr { return attr{name: name, typ: attrTStr, s: v} }
func newGraph(name string) *graph           { return &graph{name: name, consts: map[string]string{}} }
func (g *graph) fresh(hint string) string   { g.next++; return "v" + strconv.Itoa(g.next) + "_" + hint }
func (g *graph) input(name string, t ElemType, dims ...int64) {
	g.inputs = append(g.inputs, valueInfo{name: name, typ: t, dims: dims})
}

// tensor is an initializer: inline data (raw) or external (location, length).
type tensor struct {
	name     string
	typ      ElemType
	dims     []int64
	raw      []byte
	location string // external data file, when raw is nil
	length   int64
}

type valueInfo struct {
	name string
	typ  ElemType
	dims []int64
}

// op adds a node with one output and returns the output's name.
func (g *graph) op(opType string, in []string, attrs ...attr) string {
	return g.opNamed(opType, g.fresh(opType), in, attrs...)
}

// opNamed adds a node whose one output has the given name.
func (g *graph) opNamed(opType, out string, in []string, attrs ...attr) string {
	g.nodes = append(g.nodes, node{op: opType, in: in, out: []string{out}, attrs: attrs})
	return out
}

// node adds a node with n outputs and returns their names.
func (g *graph) node(opType string, in []string, n int, attrs ...attr) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = g.fresh(opType)
	}
	g.nodes = append(g.nodes, node{op: opType, in: in, out: out, attrs: attrs})
	return out
}

// msOp adds a com.microsoft node with one output.
func (g *graph) msOp(opType string, in []string, attrs ...attr) string {
	out := g.fresh(opType)
	g.nodes = append(g.nodes, node{op: opType, domain: MSDomain, in: in, out: []string{out}, attrs: attrs})
	g.msDomain = true
	return out
}

// rename gives the value old the name new in the node that makes it and in every node
// that reads it, so that a graph output needs no Identity node (ORT runs those: 56 copies
// per Qwen3 decode step). It does nothing and returns false unless exactly one node makes
// old and old is no graph output.
func (g *graph) rename(old, new string) bool {
	made := 0
	for i := range g.nodes {
		for _, out := range g.nodes[i].out {
			if out == old {
				made++
			}
		}
	}
	if made != 1 {
		return false
	}
	for _, v := range g.outputs {
		if v.name == old {
			return false
		}
	}
	for i := range g.nodes {
		for j, in := range g.nodes[i].in {
			if in == old {
				g.nodes[i].in[j] = new
			}
		}
		for j, out := range g.nodes[i].out {
			if out == old {
				g.nodes[i].out[j] = new
			}
		}
	}
	return true
}

// constant returns the name of an inline initializer, made once per distinct value.
func (g *graph) constant(t ElemType, dims []int64, raw []byte) string {
	key := fmt.Sprint(t, dims, string(raw))
	if n, ok := g.consts[key]; ok {
		return n
	}
	n := g.fresh("const")
	g.inits = append(g.inits, tensor{name: n, typ: t, dims: dims, raw: raw})
	g.consts[key] = n
	return n
}

// ints is a 1-D int64 constant; scalar an int64 scalar.
func (g *graph) ints(v ...int64) string {
	raw := make([]byte, 0, 8*len(v))
	for _, x := range v {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(x))
	}
	return g.constant(Int64, []int64{int64(len(v))}, raw)
}

// f32 is a float32 scalar constant.
func (g *graph) f32(v float32) string {
	return g.constant(Float, nil, binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
}

// u8 is a uint8 scalar constant.
func (g *graph) u8(v uint8) string { return g.constant(Uint8, nil, []byte{v}) }

// external adds an initializer whose data lives outside the model.
func (g *graph) external(name string, t ElemType, dims []int64, location string, length int64) {
	for _, in := range g.inits {
		if in.name == name {
			return
		}
	}
	g.inits = append(g.inits, tensor{name: name, typ: t, dims: dims, location: location, length: length})
}

// Shorthands for the ops used most.
func (g *graph) reshape(x string, dims ...int64) string {
	return g.op("Reshape", []string{x, g.ints(dims...)})
}
func (g *graph) transpose(x string, perm ...int64) string {
	return g.op("Transpose", []string{x}, attrInts("perm", perm...))
}
func (g *graph) cast(x string, to ElemType) string {
	return g.op("Cast", []string{x}, attrInt("to", int64(to)))
}
func (g *graph) binary(opType, a, b string) string { return g.op(opType, []string{a, b}) }

// slice takes [start, end) of axis.
func (g *graph) slice(x string, axis, start, end int64) string {
	return g.op("Slice", []string{x, g.ints(start), g.ints(end), g.ints(axis)})
}

// encode serializes the graph as a ModelProto.
func (g *graph) encode(producer, version string, metadata [][2]string) []byte {
	var gp message
	for _, n := range g.nodes {
		gp.bytes(graphNode, n.encode())
	}
	gp.str(graphName, g.name)
	for _, t := range g.inits {
		gp.bytes(graphInitializer, t.encode())
	}
	for _, v := range g.inputs {
		gp.bytes(graphInput, v.encode())
	}
	for _, v := range g.outputs {
		gp.bytes(graphOutput, v.encode())
	}
	var m message
	ir, opsetV := int64(IRVersion), int64(OpsetVersion)
	if g.opset != 0 {
		ir, opsetV = 10, g.opset
	}
	m.varint(modelIRVersion, ir)
	m.str(modelProducer, producer)
	m.str(modelProducerVer, version)
	m.bytes(modelGraph, gp)
	var opset message
	opset.str(opsetDomain, "")
	opset.varint(opsetVersion, opsetV)
	m.bytes(modelOpsetImport, opset)
	if g.msDomain {
		var ms message
		ms.str(opsetDomain, MSDomain)
		ms.varint(opsetVersion, 1)
		m.bytes(modelOpsetImport, ms)
	}
	for _, kv := range metadata {
		m.bytes(modelMetadata, entry(kv[0], kv[1]))
	}
	return m
}

func (n *node) encode() []byte {
	var m message
	for _, in := range n.in {
		m.str(nodeInput, in)
	}
	for _, out := range n.out {
		m.str(nodeOutput, out)
	}
	m.str(nodeName, n.out[0])
	m.str(nodeOpType, n.op)
	for _, a := range n.attrs {
		m.bytes(nodeAttribute, a.encode())
	}
	if n.domain != "" {
		m.str(nodeDomain, n.domain)
	}
	return m
}

func (a *attr) encode() []byte {
	var m message
	m.str(attrName, a.name)
	switch a.typ {
	case attrTFloat:
		m.float(attrF, a.f)
	case attrTInt:
		m.varint(attrI, a.i)
	case attrTStr:
		m.str(attrS, a.s)
	case attrTInts:
		for _, v := range a.ints {
			m.varint(attrIntsField, v)
		}
	}
	m.varint(attrType, int64(a.typ))
	return m
}

func (t *tensor) encode() []byte {
	var m message
	for _, d := range t.dims {
		m.varint(tensorDims, d)
	}
	m.varint(tensorDataType, int64(t.typ))
	m.str(tensorName, t.name)
	if t.raw != nil {
		m.bytes(tensorRawData, t.raw)
		return m
	}
	m.bytes(tensorExternalData, entry("location", t.location))
	m.bytes(tensorExternalData, entry("length", strconv.FormatInt(t.length, 10)))
	m.varint(tensorDataLocation, locationExternal)
	return m
}

func (v *valueInfo) encode() []byte {
	var m message
	m.str(valueName, v.name)
	m.bytes(valueType, tensorType(v.typ, v.dims))
	return m
}
