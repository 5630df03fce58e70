package onnx

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// resolveGraph is a small graph with one supplied weight "w" [2, 3] used by a MatMul; extra
// adds more to it.
func resolveGraph(extra func(g *graph)) []byte {
	g := newGraph("t")
	g.input("x", Float, 1, 2)
	g.external("w", Float, []int64{2, 3}, "w.bin", 24)
	g.opNamed("MatMul", "y", []string{"x", "w"})
	g.outputs = []valueInfo{{name: "y", typ: Float, dims: []int64{1, 3}}}
	if extra != nil {
		extra(g)
	}
	return g.encode(Producer, "test", nil)
}

var suppliedW = map[string]Supplied{"w": {DType: Float, Dims: []int64{2, 3}}}

// externalTensor is a TensorProto named name whose data is in the file location.
func externalTensor(name, location string) []byte {
	t := tensor{name: name, typ: Float, dims: []int64{2}, location: location, length: 8}
	return t.encode()
}

// withField appends a length-delimited field to an encoded message.
func withField(msg []byte, field int, payload []byte) []byte {
	m := message(slices.Clone(msg))
	m.bytes(field, payload)
	return m
}

func TestResolveRewritesSuppliedInitializers(t *testing.T) {
	res, err := Resolve(resolveGraph(nil), suppliedW)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Supplied, []string{"w"}) || len(res.Folded) != 0 {
		t.Fatalf("Supplied %v Folded %v, want [w] and none", res.Supplied, res.Folded)
	}
	if strings.Contains(string(res.Model), "w.bin") || !strings.Contains(string(res.Model), "location") {
		t.Fatal("the resolved model still names w.bin, or names no location at all")
	}
	// resolving the result again gives the same bytes (the rewrite is canonical)
	again, err := Resolve(res.Model, suppliedW)
	if err != nil || string(again.Model) != string(res.Model) {
		t.Fatalf("Resolve(Resolve(m)) differs or fails: %v", err)
	}
}

func TestResolveReportsFoldedInitializers(t *testing.T) {
	g := newGraph("t")
	g.external("h", Float16, []int64{2, 3}, "h.bin", 12)
	g.input("x", Float, 1, 2)
	g.opNamed("MatMul", "y", []string{"x", g.cast("h", Float)})
	g.outputs = []valueInfo{{name: "y", typ: Float, dims: []int64{1, 3}}}
	res, err := Resolve(g.encode(Producer, "test", nil), map[string]Supplied{"h": {DType: Float16, Dims: []int64{2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Folded, []string{"h"}) {
		t.Fatalf("Folded = %v, want [h] (a Cast of nothing but constants)", res.Folded)
	}
}

// TestResolveRefusesDataOutsideTheProgram: every way a graph can name a file is refused
// with a *DataRefError, whatever the file's name.
func TestResolveRefusesDataOutsideTheProgram(t *testing.T) {
	// extraNode adds a node to the model's graph (as a second occurrence of the graph
	// field, which a protobuf parser merges into the first)
	extraNode := func(n []byte) []byte { return withField(resolveGraph(nil), modelGraph, withField(nil, graphNode, n)) }
	constant := func(tensorField int) []byte {
		a := message{}
		a.str(attrName, "value")
		a.bytes(tensorField, externalTensor("c", "secret.txt"))
		n := message{}
		n.str(nodeOutput, "c")
		n.str(nodeName, "k")
		n.str(nodeOpType, "Constant")
		n.bytes(nodeAttribute, a)
		return extraNode(n)
	}
	subgraph := func(depth int) []byte {
		inner := message{}
		inner.str(graphName, "body")
		inner.bytes(graphInitializer, externalTensor("s", "../../etc/passwd"))
		var n message
		for range depth {
			a := message{}
			a.str(attrName, "then_branch")
			a.bytes(attrG, inner)
			n = message{}
			n.str(nodeName, "if")
			n.str(nodeOpType, "If")
			n.bytes(nodeAttribute, a)
			inner = message{}
			inner.str(graphName, "outer")
			inner.bytes(graphNode, n)
		}
		return extraNode(n)
	}
	sparse := message{}
	sparse.bytes(sparseValues, externalTensor("sv", "values.bin"))
	cases := []struct {
		name     string
		model    []byte
		supplied map[string]Supplied
		want     string
	}{
		{"unlisted initializer", resolveGraph(func(g *graph) { g.external("extra", Float, []int64{2}, "extra.bin", 8) }), suppliedW, `"extra"`},
		{"nothing supplied", resolveGraph(nil), nil, `"w"`},
		{"wrong shape", resolveGraph(nil), map[string]Supplied{"w": {DType: Float, Dims: []int64{3, 2}}}, "declared as"},
		{"wrong type", resolveGraph(nil), map[string]Supplied{"w": {DType: Float16, Dims: []int64{2, 3}}}, "declared as"},
		{"declared twice", resolveGraph(func(g *graph) { g.inits = append(g.inits, g.inits[0]) }), suppliedW, "twice"},
		{"constant attribute", constant(attrT), suppliedW, "secret.txt"},
		{"constant tensors attribute", constant(attrTensors), suppliedW, "secret.txt"},
		{"subgraph initializer", subgraph(1), suppliedW, "passwd"},
		{"deep subgraphs", subgraph(maxGraphDepth + 2), suppliedW, "nested deeper"},
		{"sparse initializer", withField(resolveGraph(nil), modelGraph, withField(nil, graphSparseInit, sparse)), suppliedW, "values.bin"},
		{"second graph field", withField(resolveGraph(nil), modelGraph, withField(nil, graphInitializer, externalTensor("g2", "g2.bin"))), suppliedW, "g2.bin"},
		{"function", withField(resolveGraph(nil), modelFunctions, withField(nil, functionNode, withField(nil, nodeAttribute, withField(nil, attrT, externalTensor("f", "f.bin"))))), suppliedW, "f.bin"},
		{"training graph", withField(resolveGraph(nil), modelTrainingInfo, withField(nil, trainingInit, withField(nil, graphInitializer, externalTensor("ti", "ti.bin")))), suppliedW, "ti.bin"},
		{"truncated", resolveGraph(nil)[:40], suppliedW, "cannot be parsed"},
		{"garbage", []byte{0xff, 0xff, 0xff}, suppliedW, "cannot be parsed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Resolve(c.model, c.supplied)
			var de *DataRefError
			if !errors.Is(err, ErrExternalData) || !errors.As(err, &de) {
				t.Fatalf("Resolve = %v, want a *DataRefError", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// A node is folded too when its other inputs are computed from constants only: an
// encoder's rotary table gathered at Min(fixed positions, the table's end).
func TestResolveFoldsThroughComputedConstants(t *testing.T) {
	g := newGraph("t")
	g.external("cos", Float, []int64{4, 2}, "cos.bin", 32)
	g.input("x", Float, 3, 2)
	pos := g.op("Min", []string{g.ints(0, 1, 5), g.ints(3)})
	g.opNamed("Mul", "y", []string{"x", g.op("Gather", []string{"cos", pos}, attrInt("axis", 0))})
	g.outputs = []valueInfo{{name: "y", typ: Float, dims: []int64{3, 2}}}
	res, err := Resolve(g.encode(Producer, "test", nil), map[string]Supplied{"cos": {DType: Float, Dims: []int64{4, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Folded, []string{"cos"}) {
		t.Fatalf("Folded = %v, want [cos] (gathered at positions computed from constants)", res.Folded)
	}
}
