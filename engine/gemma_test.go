package engine

import (
	"fmt"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
)

// Gemma 3 (5 sliding layers with window 4, then 1 full; 17-token prompt) against llama.cpp.
func TestGemma3MatchesLlamaCpp(t *testing.T) {
	for _, name := range []string{"gemma3", "gemma3-bf16"} {
		ref, err := testckpt.Reference(name)
		if err != nil {
			t.Fatal(err)
		}
		fsys, err := testckpt.Random(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, prefill := range []int{0, 3, 8, 16} {
			t.Run(fmt.Sprintf("%s/prefill=%d", name, prefill), func(t *testing.T) {
				data := exportFS(t, fsys, export.Options{Context: 40, Prefill: prefill, PrefillLogits: program.LogitsAll, CacheDType: program.F32})
				rows := allLogits(t, loadModel(t, data, 2), ref.InputIDs)
				worst := compareReference(t, ref, rows, 2e-3)
				t.Logf("worst |diff|/range %.2g", worst)
			})
		}
	}
}
