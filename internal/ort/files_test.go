//go:build ort

package ort_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/onnx"
	"github.com/hfstatic/hfstatic/internal/ort/orttest"
	"github.com/hfstatic/hfstatic/program"
)

// rewriteAsset returns the program data with asset name's bytes changed by edit.
func rewriteAsset(t *testing.T, data []byte, name string, edit func([]byte) []byte) []byte {
	t.Helper()
	f, err := program.Decode(data, program.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := program.NewWriter(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range f.Manifest.Tensors {
		_, b, _ := f.TensorData(tn.Name)
		if err := w.WriteTensor(tn.Name, tn.DType, tn.Shape, b); err != nil {
			t.Fatal(err)
		}
	}
	found := false
	for _, a := range f.Manifest.Assets {
		b, _ := f.Asset(a.Name)
		if a.Name == name {
			b, found = edit(bytes.Clone(b)), true
		}
		if err := w.WriteAsset(a.Name, b); err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatalf("program has no asset %q", name)
	}
	if _, err := w.Finish(f.Manifest.Metadata, f.Manifest.Methods); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// protoField is one length-delimited protobuf field (tag byte, one-byte length, payload).
func protoField(tag byte, payload string) []byte {
	return append([]byte{tag, byte(len(payload))}, payload...)
}

// TestGraphsCannotReadFiles: a program is untrusted input, and ONNX Runtime reads an
// initializer's external data from a file (relative to the working directory) when nothing
// supplies it. A graph naming data the loader did not resolve from the program is refused
// before any session exists, with a typed error; a supplied initializer's reference is
// rewritten, so a file of the name it gives is never read either.
func TestGraphsCannotReadFiles(t *testing.T) {
	lib := orttest.LibPath(t)
	data := exportONNX(t, "stories260K/prefill=7", stories, export.Options{Context: 32, Prefill: 7, CacheDType: program.F32, Weights: "f32"})
	dir := t.TempDir()
	t.Chdir(dir)
	load := func(data []byte) (*engine.Model, error) {
		return engine.Load(data, engine.Options{Threads: 1, Executor: engine.ExecutorORT, ORTLib: lib})
	}

	t.Run("unlisted initializer", func(t *testing.T) {
		// a second graph field holding one more initializer, its data in ./leak.bin
		if err := os.WriteFile(filepath.Join(dir, "leak.bin"), make([]byte, 64), 0o644); err != nil {
			t.Fatal(err)
		}
		var leak []byte
		leak = append(leak, 0x08, 4)                     // dims: 4
		leak = append(leak, 0x10, 1)                     // data_type: FLOAT
		leak = append(leak, protoField(0x42, "leak")...) // name
		leak = append(leak, protoField(0x6a, string(append(protoField(0x0a, "location"), protoField(0x12, "leak.bin")...)))...)
		leak = append(leak, 0x70, 1)            // data_location: EXTERNAL
		graph := protoField(0x2a, string(leak)) // GraphProto.initializer
		tampered := rewriteAsset(t, data, onnx.GraphAsset("decode"), func(b []byte) []byte {
			return append(b, protoField(0x3a, string(graph))...) // ModelProto.graph, merged by parsers
		})
		_, err := load(tampered)
		var de *onnx.DataRefError
		t.Log(err)
		if !errors.Is(err, onnx.ErrExternalData) || !errors.As(err, &de) || de.Tensor != "leak" {
			t.Fatalf("load = %v, want an *onnx.DataRefError naming tensor \"leak\"", err)
		}
	})

	t.Run("listed initializer with another location", func(t *testing.T) {
		// the graph's reference to model.norm.weight names ./model.norm.weigh (a file of
		// garbage): ignored, the weight still comes from the program
		want, err := load(data)
		if err != nil {
			t.Fatal(err)
		}
		defer want.Close()
		if err := os.WriteFile(filepath.Join(dir, "model.norm.weigh_"), bytes.Repeat([]byte{0x7f}, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
		from, to := protoField(0x12, "model.norm.weight"), protoField(0x12, "model.norm.weigh_")
		tampered := rewriteAsset(t, data, onnx.GraphAsset("decode"), func(b []byte) []byte {
			if !bytes.Contains(b, from) {
				t.Fatal("the graph has no location model.norm.weight")
			}
			return bytes.ReplaceAll(b, from, to)
		})
		got, err := load(tampered)
		if err != nil {
			t.Fatal(err)
		}
		defer got.Close()
		a := appendTokens(t, newSession(t, want.Runner), []int{1})
		b := appendTokens(t, newSession(t, got.Runner), []int{1})
		if d := maxDiff(a, b); d != 0 {
			t.Errorf("logits differ by %g after the location changed", d)
		}
	})
}
