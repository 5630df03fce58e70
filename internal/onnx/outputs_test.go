package onnx_test

import (
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/onnx"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
)

// The k/v rows outputs are written by the nodes that make them: no Identity node per cache
// (ONNX Runtime runs each one as a copy, 56 per Qwen3 decode step), in the method graphs
// and the batched ones, where each slot has its own outputs.
func TestRowsOutputsNeedNoIdentity(t *testing.T) {
	data := exporttest.Program(t, models.Stories260K(), export.Options{Context: 32, Prefill: 7, CacheDType: program.F32, Weights: "f32", Delegate: export.DelegateONNX})
	f, err := program.Decode(data, program.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := onnx.ReadPayload(f)
	if err != nil {
		t.Fatal(err)
	}
	supplied := map[string]onnx.Supplied{}
	for _, in := range p.Initializers {
		supplied[in.Name] = onnx.Supplied{DType: in.DType, Dims: in.Dims}
	}
	graphs := map[string][]byte{}
	for name, g := range p.Graphs {
		graphs[name] = g
	}
	for B, g := range p.Batches {
		graphs[onnx.BatchGraphAsset(program.MethodDecode, B)] = g
	}
	if len(graphs) < 3 {
		t.Fatalf("%d graphs, want decode, prefill and the batched ones", len(graphs))
	}
	for name, g := range graphs {
		res, err := onnx.Resolve(g, supplied)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := res.Ops["Identity"]; n != 0 {
			t.Errorf("%s has %d Identity nodes, want none", name, n)
		}
	}
}
