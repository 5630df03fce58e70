package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// A program is untrusted input, and so are its graphs: an ONNX tensor whose data is
// "external" names a file that ONNX Runtime reads relative to its working directory when
// nothing else supplies the tensor. Resolve is the gate every graph passes before a
// runtime sees it: it accepts a graph only when each external tensor is one the loader
// supplies itself from the program file (a top-level initializer listed in
// initializers.json, with the declared type and shape), and rewrites those references so
// that no runtime could read a file for them even if a value were missing.

// ErrExternalData reports a graph that refers to tensor data the loader did not resolve
// from the program; the *DataRefError that wraps it says which tensor and why.
var ErrExternalData = errors.New("onnx graph refers to data outside the program")

// DataRefError says which tensor of a graph is refused and why.
type DataRefError struct {
	Tensor   string // the tensor's name ("" when it has none)
	Location string // the external data location it names, if any
	Where    string // e.g. "initializer", "attribute of node v12_Constant", "subgraph"
	Problem  string
}

func (e *DataRefError) Error() string {
	msg := fmt.Sprintf("onnx: %s tensor %q", e.Where, e.Tensor)
	if e.Location != "" {
		msg += fmt.Sprintf(" (external data %q)", e.Location)
	}
	return msg + ": " + e.Problem
}

func (e *DataRefError) Unwrap() error { return ErrExternalData }

// ResolvedLocation is the external data location Resolve writes into every initializer
// the loader supplies: a path that is always a directory, never a file with data, so
// that a runtime asked to read it fails instead of reading something.
const ResolvedLocation = "."

// maxGraphDepth bounds the nesting of subgraphs (If/Loop/Scan bodies) Resolve walks.
const maxGraphDepth = 32

// Supplied describes an initializer the loader supplies: its element type and shape.
type Supplied struct {
	DType ElemType
	Dims  []int64
}

// Resolved is a graph that passed Resolve.
type Resolved struct {
	// Model is the graph with every supplied initializer referring to ResolvedLocation.
	Model []byte
	// Supplied are the supplied initializers the graph declares (the values the runtime
	// must be given), sorted.
	Supplied []string
	// Folded are those of Supplied that a top-level node reads with nothing but constants,
	// initializers or values computed from them alone (a Cast of a float16 weight; an
	// encoder's rotary table gathered at fixed positions): a runtime folds such nodes while it optimizes the
	// graph, reading the initializer from the graph itself, so these must be given as
	// graph data (ONNX Runtime's AddExternalInitializers, a copy) rather than as values
	// read in place.
	Folded []string
	// Ops counts the top-level nodes by operator type (domain-qualified outside the ONNX
	// domain: com.microsoft.MatMulNBits).
	Ops map[string]int
}

// Resolve checks model (a serialized ModelProto) and returns a copy in which every
// top-level initializer named in supplied refers to ResolvedLocation and holds no data of
// its own. It returns a *DataRefError (errors.Is ErrExternalData) when any tensor anywhere
// in the model (top-level initializers, node attributes, subgraphs, sparse tensors,
// functions, training graphs) has external data that is not a supplied initializer of
// the declared type and shape, or when the model cannot be parsed.
func Resolve(model []byte, supplied map[string]Supplied) (*Resolved, error) {
	r := resolver{supplied: supplied, seen: map[string]bool{}, consts: map[string]bool{}, folded: map[string]bool{}, ops: map[string]int{}}
	out, err := r.model(model)
	if err != nil {
		return nil, err
	}
	res := &Resolved{Model: out, Ops: r.ops}
	for name := range r.seen {
		res.Supplied = append(res.Supplied, name)
	}
	slices.Sort(res.Supplied)
	// a node reading only constants makes constants (ONNX graphs are sorted: one pass)
	for _, n := range r.topNodes {
		if slices.ContainsFunc(n.in, func(in string) bool { return in != "" && !r.consts[in] }) {
			continue
		}
		for _, out := range n.out {
			r.consts[out] = true
		}
		for _, in := range n.in {
			if r.seen[in] && !r.folded[in] {
				r.folded[in] = true
				res.Folded = append(res.Folded, in)
			}
		}
	}
	slices.Sort(res.Folded)
	return res, nil
}

// topNode is a top-level node's inputs and outputs.
type topNode struct{ in, out []string }

type resolver struct {
	supplied map[string]Supplied
	seen     map[string]bool // supplied initializers found at the top level
	consts   map[string]bool // names of the top-level initializers (then of every constant)
	topNodes []topNode       // every top-level node, in order
	folded   map[string]bool
	ops      map[string]int
}

// field is one protobuf field of a message: its number, wire type, value (varint) or
// payload (length-delimited), and the raw bytes of the whole field, tag included.
type field struct {
	num, wire int
	v         uint64
	payload   []byte
	raw       []byte
}

// fields splits a message into its fields.
func fields(msg []byte) ([]field, error) {
	var out []field
	for i := 0; i < len(msg); {
		start := i
		tag, n := binary.Uvarint(msg[i:])
		if n <= 0 {
			return nil, errors.New("bad field tag")
		}
		i += n
		f := field{num: int(tag >> 3), wire: int(tag & 7)}
		if f.num <= 0 {
			return nil, errors.New("field number 0")
		}
		switch f.wire {
		case wireVarint:
			v, n := binary.Uvarint(msg[i:])
			if n <= 0 {
				return nil, errors.New("bad varint")
			}
			f.v, i = v, i+n
		case wireFixed64:
			if len(msg)-i < 8 {
				return nil, errors.New("truncated fixed64")
			}
			i += 8
		case wireFixed32:
			if len(msg)-i < 4 {
				return nil, errors.New("truncated fixed32")
			}
			i += 4
		case wireLenDelimited:
			l, n := binary.Uvarint(msg[i:])
			if n <= 0 || l > uint64(len(msg)-i-n) {
				return nil, errors.New("bad length")
			}
			i += n
			f.payload = msg[i : i+int(l)]
			i += int(l)
		default:
			return nil, fmt.Errorf("wire type %d (groups are not used by ONNX)", f.wire)
		}
		f.raw = msg[start:i]
		out = append(out, f)
	}
	return out, nil
}

// Field numbers of onnx.proto that can hold tensors, beyond those proto.go writes.
const (
	modelTrainingInfo = 20
	modelFunctions    = 25

	trainingInit      = 1 // TrainingInfoProto.initialization (GraphProto)
	trainingAlgorithm = 2 // TrainingInfoProto.algorithm (GraphProto)

	functionNode = 7 // FunctionProto.node

	graphSparseInit = 15

	attrT            = 5
	attrG            = 6
	attrTensors      = 10
	attrGraphs       = 11
	attrSparseTensor = 22
	attrSparseTensrs = 23

	sparseValues  = 1
	sparseIndices = 2

	wireFixed64 = 1
)

func badModel(where string, err error) error {
	return &DataRefError{Where: where, Problem: "cannot be parsed: " + err.Error()}
}

func (r *resolver) model(msg []byte) ([]byte, error) {
	fs, err := fields(msg)
	if err != nil {
		return nil, badModel("model", err)
	}
	var out message
	for _, f := range fs {
		if f.wire != wireLenDelimited {
			out = append(out, f.raw...)
			continue
		}
		switch f.num {
		case modelGraph:
			// Every occurrence is the top-level graph (a parser merges them).
			g, err := r.graph(f.payload, 0, true)
			if err != nil {
				return nil, err
			}
			out.bytes(modelGraph, g)
			continue
		case modelTrainingInfo:
			if err := r.walk(f.payload, 0, "training graph", map[int]walker{trainingInit: (*resolver).graphOnly, trainingAlgorithm: (*resolver).graphOnly}); err != nil {
				return nil, err
			}
		case modelFunctions:
			if err := r.walk(f.payload, 0, "function", map[int]walker{functionNode: (*resolver).node}); err != nil {
				return nil, err
			}
		}
		out = append(out, f.raw...)
	}
	return out, nil
}

// walker checks one length-delimited field's payload at a nesting depth.
type walker func(r *resolver, payload []byte, depth int, where string) error

// walk checks the fields of msg that the map names.
func (r *resolver) walk(msg []byte, depth int, where string, check map[int]walker) error {
	fs, err := fields(msg)
	if err != nil {
		return badModel(where, err)
	}
	for _, f := range fs {
		if w, ok := check[f.num]; ok && f.wire == wireLenDelimited {
			if err := w(r, f.payload, depth, where); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *resolver) graphOnly(msg []byte, depth int, where string) error {
	_, err := r.graph(msg, depth, false)
	return err
}

// graph checks a GraphProto; top is the model's own graph, whose supplied initializers are
// rewritten (the returned bytes; nil for a subgraph, which is only checked).
func (r *resolver) graph(msg []byte, depth int, top bool) ([]byte, error) {
	if depth > maxGraphDepth {
		return nil, &DataRefError{Where: "subgraph", Problem: fmt.Sprintf("nested deeper than %d graphs", maxGraphDepth)}
	}
	fs, err := fields(msg)
	if err != nil {
		return nil, badModel("graph", err)
	}
	var out message
	for _, f := range fs {
		if f.wire != wireLenDelimited {
			out = append(out, f.raw...)
			continue
		}
		switch f.num {
		case graphInitializer:
			t, err := parseTensor(f.payload)
			if err != nil {
				return nil, badModel("initializer", err)
			}
			if top {
				r.consts[t.name] = true
			}
			if sup, ok := r.supplied[t.name]; ok && top {
				if r.seen[t.name] {
					return nil, &DataRefError{Tensor: t.name, Where: "initializer", Problem: "declared twice"}
				}
				r.seen[t.name] = true
				if t.dtype != sup.DType || !slices.Equal(t.dims, sup.Dims) {
					return nil, &DataRefError{Tensor: t.name, Location: t.location, Where: "initializer",
						Problem: fmt.Sprintf("declared as type %d %v, but the program supplies type %d %v", t.dtype, t.dims, sup.DType, sup.Dims)}
				}
				out.bytes(graphInitializer, t.resolved())
				continue
			}
			if err := t.check("initializer"); err != nil {
				return nil, err
			}
		case graphSparseInit:
			if err := r.sparse(f.payload, "sparse initializer"); err != nil {
				return nil, err
			}
		case graphNode:
			if err := r.node(f.payload, depth, "node"); err != nil {
				return nil, err
			}
			if top {
				ins, outs, op, err := nodeInputs(f.payload)
				if err != nil {
					return nil, badModel("node", err)
				}
				r.topNodes = append(r.topNodes, topNode{ins, outs})
				r.ops[op]++
			}
		}
		out = append(out, f.raw...)
	}
	if !top {
		return nil, nil
	}
	return out, nil
}

// node checks a NodeProto's attributes (tensors and subgraphs).
func (r *resolver) node(msg []byte, depth int, where string) error {
	fs, err := fields(msg)
	if err != nil {
		return badModel(where, err)
	}
	name := ""
	for _, f := range fs {
		if f.num == nodeName && f.wire == wireLenDelimited {
			name = string(f.payload)
		}
	}
	where = fmt.Sprintf("attribute of node %q", name)
	for _, f := range fs {
		if f.num == nodeAttribute && f.wire == wireLenDelimited {
			if err := r.attribute(f.payload, depth, where); err != nil {
				return err
			}
		}
	}
	return nil
}

// nodeInputs returns a NodeProto's inputs, outputs and operator type (domain.type outside
// the ONNX domain).
func nodeInputs(msg []byte) (in, out []string, op string, err error) {
	fs, err := fields(msg)
	if err != nil {
		return nil, nil, "", err
	}
	domain := ""
	for _, f := range fs {
		if f.wire != wireLenDelimited {
			continue
		}
		switch f.num {
		case nodeInput:
			in = append(in, string(f.payload))
		case nodeOutput:
			out = append(out, string(f.payload))
		case nodeOpType:
			op = string(f.payload)
		case nodeDomain:
			domain = string(f.payload)
		}
	}
	if domain != "" && domain != "ai.onnx" {
		op = domain + "." + op
	}
	return in, out, op, nil
}

func (r *resolver) attribute(msg []byte, depth int, where string) error {
	fs, err := fields(msg)
	if err != nil {
		return badModel(where, err)
	}
	for _, f := range fs {
		if f.wire != wireLenDelimited {
			continue
		}
		switch f.num {
		case attrT, attrTensors:
			t, err := parseTensor(f.payload)
			if err != nil {
				return badModel(where, err)
			}
			if err := t.check(where); err != nil {
				return err
			}
		case attrSparseTensor, attrSparseTensrs:
			if err := r.sparse(f.payload, where); err != nil {
				return err
			}
		case attrG, attrGraphs:
			if _, err := r.graph(f.payload, depth+1, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// sparse checks a SparseTensorProto's values and indices.
func (r *resolver) sparse(msg []byte, where string) error {
	fs, err := fields(msg)
	if err != nil {
		return badModel(where, err)
	}
	for _, f := range fs {
		if (f.num == sparseValues || f.num == sparseIndices) && f.wire == wireLenDelimited {
			t, err := parseTensor(f.payload)
			if err != nil {
				return badModel(where, err)
			}
			if err := t.check(where); err != nil {
				return err
			}
		}
	}
	return nil
}

// tensorInfo is what Resolve reads of a TensorProto (the last occurrence of each
// non-repeated field wins, as in any protobuf parser).
type tensorInfo struct {
	name     string
	dtype    ElemType
	dims     []int64
	external bool   // data_location EXTERNAL or external_data entries
	location string // the external_data "location" value, if any
}

func parseTensor(msg []byte) (tensorInfo, error) {
	var t tensorInfo
	fs, err := fields(msg)
	if err != nil {
		return t, err
	}
	for _, f := range fs {
		switch {
		case f.num == tensorName && f.wire == wireLenDelimited:
			t.name = string(f.payload)
		case f.num == tensorDataType && f.wire == wireVarint:
			t.dtype = ElemType(int32(f.v))
		case f.num == tensorDims && f.wire == wireVarint:
			t.dims = append(t.dims, int64(f.v))
		case f.num == tensorDims && f.wire == wireLenDelimited: // packed
			for p := f.payload; len(p) > 0; {
				v, n := binary.Uvarint(p)
				if n <= 0 {
					return t, errors.New("bad packed dims")
				}
				t.dims, p = append(t.dims, int64(v)), p[n:]
			}
		case f.num == tensorDataLocation:
			if f.wire != wireVarint || f.v != 0 {
				t.external = true
			}
		case f.num == tensorExternalData:
			t.external = true
			if k, v, ok := parseEntry(f.payload); ok && k == "location" {
				t.location = v
			}
		}
	}
	return t, nil
}

// parseEntry reads a StringStringEntryProto.
func parseEntry(msg []byte) (key, value string, ok bool) {
	fs, err := fields(msg)
	if err != nil {
		return "", "", false
	}
	for _, f := range fs {
		if f.wire != wireLenDelimited {
			continue
		}
		switch f.num {
		case entryKey:
			key = string(f.payload)
		case entryValue:
			value = string(f.payload)
		}
	}
	return key, value, true
}

// check refuses a tensor with external data (a tensor the loader did not supply).
func (t tensorInfo) check(where string) error {
	if !t.external {
		return nil
	}
	return &DataRefError{Tensor: t.name, Location: t.location, Where: where, Problem: "its data is external and the program does not supply it"}
}

// resolved is the TensorProto of a supplied initializer: name, type, shape and an external
// reference to ResolvedLocation, nothing else.
func (t tensorInfo) resolved() []byte {
	var m message
	for _, d := range t.dims {
		m.varint(tensorDims, d)
	}
	m.varint(tensorDataType, int64(t.dtype))
	m.str(tensorName, t.name)
	m.bytes(tensorExternalData, entry("location", ResolvedLocation))
	m.varint(tensorDataLocation, locationExternal)
	return m
}
