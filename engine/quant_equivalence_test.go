package engine

import (
	"fmt"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
)

// Quantized weights: prefill rows run the same int8 block arithmetic as the decode
// matrix-vector product, so chunked prefill equals decode-only bit for bit.
func TestQuantizedPrefillEqualsDecodeOnlyExactly(t *testing.T) {
	ref, _ := readRunc(t)
	for _, w := range []string{"q8", "q4"} {
		opts := export.Options{Context: 80, Weights: w, CacheDType: program.F32, PrefillLogits: program.LogitsAll}
		want := allLogits(t, loadModel(t, exporttest.Program(t, models.Stories260K(), opts), 2), ref.InputIDs)
		for _, p := range []int{5, 16} {
			t.Run(fmt.Sprintf("%s/prefill=%d", w, p), func(t *testing.T) {
				o := opts
				o.Prefill = p
				got := allLogits(t, loadModel(t, exporttest.Program(t, models.Stories260K(), o), 2), ref.InputIDs)
				if d, at := maxAbsDiff(want, got); d != 0 {
					t.Errorf("prefill %d vs decode-only: max |diff| %g at position %d, want 0", p, d, at)
				}
			})
		}
	}
}
