package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/safetensors"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
)

// compareAbsolute checks logits rows against a float64 reference summary (log-sum-exp,
// top-10 and probe logits), each within tol absolute, and returns the worst difference.
func compareAbsolute(t *testing.T, ref *testckpt.Summary, rows [][]float32, tol float64) float64 {
	t.Helper()
	worst := 0.0
	for i, p := range ref.Positions {
		row := rows[i]
		check := func(what string, got, want float64) {
			d := math.Abs(got - want)
			worst = math.Max(worst, d)
			if !(d <= tol) {
				t.Errorf("position %d %s: got %.6f, float64 reference %.6f (|diff| %.2g > %g)", i, what, got, want, d, tol)
			}
		}
		check("logsumexp", logSumExp(row), p.LogSumExp)
		for _, tl := range p.Top10 {
			check(fmt.Sprintf("logit[%d]", tl.ID), float64(row[tl.ID]), float64(tl.Logit))
		}
		for k, id := range ref.ProbeIDs {
			check(fmt.Sprintf("probe logit[%d]", id), float64(row[id]), float64(p.ProbeLogits[k]))
		}
	}
	return worst
}

// Mixture-of-experts checkpoints (f32 and bf16 weights), through decode only and through
// prefill steps of 3 and 16 rows, against a float64 reference written from transformers'
// modeling code (1e-4 absolute) and against llama.cpp's float32 results on its own
// conversion (1e-3 of the logit range).
func TestMoECheckpointsMatchReferences(t *testing.T) {
	for _, name := range []string{"qwen3moe", "qwen3moe-bf16", "mixtral", "mixtral-bf16"} {
		fsys, err := testckpt.Random(name)
		if err != nil {
			t.Fatal(err)
		}
		f64, err := testckpt.Float64Reference(name)
		if err != nil {
			t.Fatal(err)
		}
		llama, err := testckpt.Reference(name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f64.InputIDs, llama.InputIDs) {
			t.Fatalf("%s: the two references read different prompts", name)
		}
		for _, prefill := range []int{0, 3, 16} {
			t.Run(fmt.Sprintf("%s/prefill=%d", name, prefill), func(t *testing.T) {
				data := exporttest.Program(t, fsys, export.Options{Context: 64, Prefill: prefill, PrefillLogits: program.LogitsAll, CacheDType: program.F32})
				rows := allLogits(t, loadModel(t, data, 2), f64.InputIDs)
				worst := compareAbsolute(t, f64, rows, 1e-4)
				worstRel := compareReference(t, llama, rows, 1e-3)
				t.Logf("float64: worst |diff| %.2g (smallest router margin %.2g); llama.cpp: worst |diff|/range %.2g", worst, f64.MinRouterMargin, worstRel)
			})
		}
	}
}

// A checkpoint missing one expert's tensor is refused with an error naming it, and a
// router is exported as float32 whatever the weight type, so quantized programs route
// as float ones do.
func TestMoEExportNamesAMissingExpertAndKeepsTheRouterFloat(t *testing.T) {
	fsys, err := testckpt.Random("mixtral")
	if err != nil {
		t.Fatal(err)
	}
	const missing = "model.layers.1.block_sparse_moe.experts.5.w3.weight"
	broken := maps.Clone(fsys)
	broken["model.safetensors"] = &fstest.MapFile{Data: rewriteTensors(t, fsys["model.safetensors"].Data,
		func(ts safetensors.Tensor, raw []byte) []safetensors.WriteTensor {
			if ts.Name == missing {
				return nil
			}
			return []safetensors.WriteTensor{{Name: ts.Name, DType: ts.DType, Shape: ts.Shape, Data: raw}}
		})}
	ckpt, err := hf.Open(broken)
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	_, _, err = export.ToMemory(context.Background(), ckpt, export.Options{Context: 32})
	var te *export.TensorError
	if !errors.As(err, &te) || te.Name != missing {
		t.Errorf("export without %s: %v, want an *export.TensorError naming it", missing, err)
	}

	data := exporttest.Program(t, fsys, export.Options{Context: 32, Weights: "q4"})
	f, err := program.Decode(data, program.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"model.layers.0.block_sparse_moe.gate.weight", "model.layers.0.block_sparse_moe.experts.0.w1.weight"} {
		tt, _, ok := f.TensorData(name)
		want := map[bool]program.DType{true: program.F32, false: program.Q4}[strings.HasSuffix(name, "gate.weight")]
		if !ok || tt.DType != want {
			t.Errorf("%s stored as %v, want %s", name, tt.DType, want)
		}
	}
}
