// Package onnx builds ONNX graphs of a program's methods (the delegate payload of
// `hfstatic export --delegate onnx`) and reads them back.
//
// A graph translates a method's op list, op by op, into ONNX nodes (opset 17; the
// com.microsoft MatMulNBits for q4 and q8 weights) with fixed shapes. It takes the
// contract's inputs (input_ids, attention_mask, position_ids and every cache, read-only)
// and returns the logits and, per layer, the step's new key and value rows
// (k_rows_l, v_rows_l); it mutates nothing and takes no counters. Writing those rows into
// the caches and advancing the counters is left to the caller, as the contract's
// cache_write and advance ops say. The weights stay in the program file: every weight is
// an external initializer whose bytes Initializer.Data returns (the program tensor itself,
// or a q4/q8 tensor converted to MatMulNBits' layout).
//
// The package owns the graph construction, a small hand-written encoder of the ONNX
// protobuf messages it needs, and the payload's assets. It does not run graphs (see
// internal/ort) nor know Hugging Face checkpoints.
package onnx

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hfstatic/hfstatic/program"
)

// Asset names of the payload in a program file.
const (
	// AssetInitializers lists the external initializers of every graph (JSON).
	AssetInitializers = "onnx/initializers.json"
	assetPrefix       = "onnx/"
	graphSuffix       = ".onnx"
)

// GraphAsset is the asset name of a method's graph, e.g. onnx/decode.onnx.
func GraphAsset(method string) string { return assetPrefix + method + graphSuffix }

// BatchGraphAsset is the asset name of a method's graph for B sessions at once, e.g.
// onnx/decode.batch4.onnx.
func BatchGraphAsset(method string, B int) string {
	return fmt.Sprintf("%s%s.batch%d%s", assetPrefix, method, B, graphSuffix)
}

// BatchSizes are the session counts of the batched decode graphs Build writes (a step of
// k sessions runs in the smallest graph of at least k, the other slots idle).
var BatchSizes = []int{2, 4, 8}

// GraphVersion is recorded in every graph's metadata (hfstatic.graph). Version 1 (no
// entry) had no batched graphs and computed q4/q8 products in float32; version 2 adds the
// batched decode graphs, MatMulNBits with accuracy_level 4 and fused norms; version 3
// multiplies f32 weights with MatMul over their transposed copy (LayoutF32T), not
// Gemm(transB=1) over the program's bytes. A reader runs any of them.
const GraphVersion = 3

// RowsName is the graph output holding the step's rows for cache: k_cache_3 → k_rows_3.
func RowsName(cache string) string { return strings.Replace(cache, "_cache_", "_rows_", 1) }

// Asset is one named blob of the payload.
type Asset struct {
	Name string
	Data []byte
}

// ErrNoPayload reports a program exported without the ONNX payload.
var ErrNoPayload = errors.New("the program has no ONNX graphs: export it with `hfstatic export DIR -o X.hfs --delegate onnx`")

// OpError reports an op the graph builder cannot translate.
type OpError struct {
	Method  string
	Index   int
	Kind    program.OpKind
	Problem string
}

func (e *OpError) Error() string {
	return fmt.Sprintf("onnx: method %q op %d (%s): %s", e.Method, e.Index, e.Kind, e.Problem)
}

// Producer names this package in the graphs' ModelProto.
const Producer = "hfstatic"

// Build builds the ONNX payload of the program described by man: one graph per method
// and the list of their external initializers, as assets to store in the program file.
// version is recorded as the graphs' producer version.
func Build(man *program.Manifest, version string) ([]Asset, error) {
	w := newWeights(man.Tensors)
	var assets []Asset
	for i := range man.Methods {
		m := &man.Methods[i]
		sizes := []int{1}
		if m.Name == program.MethodDecode && m.Step == 1 && man.Metadata.Contract != program.EncodeContractName {
			sizes = append(sizes, BatchSizes...)
		}
		for _, B := range sizes {
			var g *graph
			var err error
			if man.Metadata.Contract == program.EncodeContractName {
				g, err = buildEncodeMethod(&man.Metadata, m, w) // encode.go
			} else {
				g, err = buildMethod(&man.Metadata, m, w, B)
			}
			if err != nil {
				return nil, err
			}
			meta := [][2]string{{"hfstatic.method", m.Name}, {"hfstatic.contract", fmt.Sprintf("%s/%d", man.Metadata.Contract, man.Metadata.Version)},
				{"hfstatic.graph", fmt.Sprint(GraphVersion)}}
			name := GraphAsset(m.Name)
			if B > 1 {
				meta = append(meta, [2]string{"hfstatic.batch", fmt.Sprint(B)})
				name = BatchGraphAsset(m.Name, B)
			}
			assets = append(assets, Asset{Name: name, Data: g.encode(Producer, version, meta)})
		}
	}
	js, err := json.Marshal(w.list)
	if err != nil {
		return nil, fmt.Errorf("onnx: encode initializers: %w", err)
	}
	return append(assets, Asset{Name: AssetInitializers, Data: js}), nil
}

// Payload is the ONNX payload of a program file.
type Payload struct {
	// Graphs maps a method name to its serialized ModelProto (aliasing the file's data).
	Graphs map[string][]byte
	// Batches maps B to the graph of the decode method for B sessions (programs exported
	// before graph version 2 have none).
	Batches map[int][]byte
	// Initializers are the external initializers of every graph.
	Initializers []Initializer
}

// ReadPayload returns the ONNX payload of f; errors.Is(err, ErrNoPayload) when it has none.
func ReadPayload(f *program.File) (*Payload, error) {
	js, ok := f.Asset(AssetInitializers)
	if !ok {
		return nil, ErrNoPayload
	}
	p := &Payload{Graphs: map[string][]byte{}, Batches: map[int][]byte{}}
	if err := json.Unmarshal(js, &p.Initializers); err != nil {
		return nil, fmt.Errorf("onnx: asset %s: %w", AssetInitializers, err)
	}
	for _, m := range f.Manifest.Methods {
		g, ok := f.Asset(GraphAsset(m.Name))
		if !ok {
			return nil, fmt.Errorf("onnx: method %q has no graph %s: %w", m.Name, GraphAsset(m.Name), ErrNoPayload)
		}
		p.Graphs[m.Name] = g
		if m.Name == program.MethodDecode && m.Step == 1 {
			for _, B := range BatchSizes {
				if g, ok := f.Asset(BatchGraphAsset(m.Name, B)); ok {
					p.Batches[B] = g
				}
			}
		}
	}
	for _, in := range p.Initializers {
		if in.Location == "" || strings.ContainsAny(in.Location, `/\`) || strings.HasPrefix(in.Location, ".") {
			return nil, fmt.Errorf("onnx: initializer %q has an unsafe location %q", in.Name, in.Location)
		}
	}
	return p, nil
}

// Extract writes f's payload as standalone ONNX files through write: each method's graph
// as "<method>.onnx" (its bytes as stored), the batched decode graphs as
// "decode.batch<B>.onnx" and each initializer's data as the external
// data file the graphs name (Initializer.Location, converted layouts included), so that
// any ONNX tool loads a graph from a folder holding these files.
func Extract(f *program.File, write func(name string, data []byte) error) error {
	p, err := ReadPayload(f)
	if err != nil {
		return err
	}
	for _, m := range f.Manifest.Methods {
		if err := write(m.Name+graphSuffix, p.Graphs[m.Name]); err != nil {
			return err
		}
	}
	for _, B := range BatchSizes {
		if g, ok := p.Batches[B]; ok {
			if err := write(strings.TrimPrefix(BatchGraphAsset(program.MethodDecode, B), assetPrefix), g); err != nil {
				return err
			}
		}
	}
	for i := range p.Initializers {
		in := &p.Initializers[i]
		data, err := in.Data(f)
		if err != nil {
			return err
		}
		if err := write(in.Location, data); err != nil {
			return err
		}
	}
	return nil
}
