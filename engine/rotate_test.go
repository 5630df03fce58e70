package engine

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
)

// A rotated residual stream (export.Options.Rotate) leaves the float model as it is: every
// plain pre-norm family's float32 program gives the unrotated program's logits (biases,
// fused q/k/v and gate/up, residual and logit scales, q/k norms, routers and experts, tied
// and untied heads); its q8 and q4 programs load and run. Gemma 3 and OLMo 2, whose norms
// break the invariance, are refused.
func TestRotatedExportKeepsTheFloatModel(t *testing.T) {
	tokens := []int{1, 17, 300, 45, 45, 9, 120, 77, 3, 250, 64, 8}
	opts := export.Options{Context: 16, Prefill: 4, PrefillLogits: program.LogitsAll, CacheDType: program.F32, Weights: "f32"}
	for _, name := range []string{"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3moe", "phi3", "phi4mini", "granite", "smollm3"} {
		t.Run(name, func(t *testing.T) {
			fsys, err := testckpt.Random(name)
			if err != nil {
				t.Fatal(err)
			}
			plain := allLogits(t, loadModel(t, exporttest.Program(t, fsys, opts), 1), tokens)
			ro := opts
			ro.Rotate = export.RotateHadamard
			rotated := allLogits(t, loadModel(t, exporttest.Program(t, fsys, ro), 1), tokens)
			for i := range plain {
				var diff, scale float64
				for j, x := range plain[i] {
					diff = max(diff, math.Abs(float64(rotated[i][j]-x)))
					scale = max(scale, math.Abs(float64(x)))
				}
				if diff > 1e-4*max(scale, 1) {
					t.Fatalf("token %d: rotated logits differ by %g (largest logit %g)", i, diff, scale)
				}
			}
			for _, w := range []string{"q8", "q4"} {
				qo := ro
				qo.Weights = w
				for _, row := range allLogits(t, loadModel(t, exporttest.Program(t, fsys, qo), 1), tokens) {
					for _, x := range row {
						if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
							t.Fatalf("%s: logit %v", w, x)
						}
					}
				}
			}
		})
	}
	for _, name := range []string{"gemma3", "olmo2"} {
		t.Run(name, func(t *testing.T) {
			fsys, err := testckpt.Random(name)
			if err != nil {
				t.Fatal(err)
			}
			ckpt, err := hf.Open(fsys)
			if err != nil {
				t.Fatal(err)
			}
			defer ckpt.Close()
			ro := opts
			ro.Rotate = export.RotateHadamard
			var buf bytes.Buffer
			if _, err := export.Export(context.Background(), ckpt, &buf, ro); !errors.Is(err, export.ErrOptions) {
				t.Errorf("rotating %s: %v, want ErrOptions", name, err)
			}
		})
	}
}
