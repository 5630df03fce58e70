package engine

import (
	"fmt"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
)

// OLMo 2 (post-norms, whole-width q/k norm), SmolLM3 (a layer without RoPE) and Granite
// (embedding, attention, residual and logits multipliers), f32 and bf16 weights, against two
// independent references: llama.cpp's float32 run on its own conversion (within 1e-3 of the
// logit range) and a float64 forward pass written from transformers' modeling code (within
// 1e-4 absolute), at prefill sizes 0 (decode only), 3 and 16 over a 20-token prompt.
// smollm3-swa switches SmolLM3's sliding window on (window 4 on its two NoPE layers), which
// llama.cpp's SmolLM3 graph does not implement: it has the float64 reference only.
func TestFamiliesMatchLlamaCppAndFloat64(t *testing.T) {
	tests := []struct {
		fixture  string
		llamaCpp bool // whether the fixture has llama.cpp's reference.summary.json
	}{
		{"olmo2", true}, {"olmo2-bf16", true}, {"smollm3", true}, {"smollm3-bf16", true},
		{"smollm3-swa", false}, {"granite", true}, {"granite-bf16", true},
	}
	for _, tt := range tests {
		fsys, err := testckpt.Random(tt.fixture)
		if err != nil {
			t.Fatal(err)
		}
		float64Ref, err := testckpt.Float64Reference(tt.fixture)
		if err != nil {
			t.Fatal(err)
		}
		var llamaCpp *testckpt.Summary
		if tt.llamaCpp {
			if llamaCpp, err = testckpt.Reference(tt.fixture); err != nil {
				t.Fatal(err)
			}
		}
		for _, prefill := range []int{0, 3, 16} {
			t.Run(fmt.Sprintf("%s/prefill=%d", tt.fixture, prefill), func(t *testing.T) {
				data := exporttest.Program(t, fsys, export.Options{Context: 64, Prefill: prefill, PrefillLogits: program.LogitsAll, CacheDType: program.F32})
				rows := allLogits(t, loadModel(t, data, 2), float64Ref.InputIDs)
				abs := compareSummary(t, float64Ref, rows, 1e-4, false)
				if llamaCpp == nil {
					t.Logf("worst |diff|: float64 %.2g absolute", abs)
					return
				}
				rel := compareSummary(t, llamaCpp, rows, 1e-3, true)
				t.Logf("worst |diff|: llama.cpp %.2g of the logit range, float64 %.2g absolute", rel, abs)
			})
		}
	}
}
