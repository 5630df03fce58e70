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
func TestFamiliesMatchLlamaCppAndFloat64(t *testing.T) {
	for _, name := range []string{"olmo2", "olmo2-bf16", "smollm3", "smollm3-bf16", "granite", "granite-bf16"} {
		fsys, err := testckpt.Random(name)
		if err != nil {
			t.Fatal(err)
		}
		llamacpp, err := testckpt.Reference(name)
		if err != nil {
			t.Fatal(err)
		}
		float64Ref, err := testckpt.Float64Reference(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, prefill := range []int{0, 3, 16} {
			t.Run(fmt.Sprintf("%s/prefill=%d", name, prefill), func(t *testing.T) {
				data := exporttest.Program(t, fsys, export.Options{Context: 64, Prefill: prefill, PrefillLogits: program.LogitsAll, CacheDType: program.F32})
				rows := allLogits(t, loadModel(t, data, 2), llamacpp.InputIDs)
				rel := compareSummary(t, llamacpp, rows, 1e-3, true)
				abs := compareSummary(t, float64Ref, rows, 1e-4, false)
				t.Logf("worst |diff|: llama.cpp %.2g of the logit range, float64 %.2g absolute", rel, abs)
			})
		}
	}
}
