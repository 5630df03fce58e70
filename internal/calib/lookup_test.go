package calib

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hfstatic/hfstatic/internal/kernels"
)

// A tied embedding's statistics are normalized to a mean square of 1 per channel, and the
// lookup side's plain squared error is added to the diagonal.
func TestLookupTooNormalizesAndAddsLookupWeight(t *testing.T) {
	got := lookupToo(kernels.Calibration{
		Importance: []float32{1, 3},
		Gram:       []float32{1, 0.5, 0.5, 3},
	})
	want := kernels.Calibration{
		Importance: []float32{0.5 + lookupWeight, 1.5 + lookupWeight},
		Gram:       []float32{0.5 + lookupWeight, 0.25, 0.25, 1.5 + lookupWeight},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lookupToo (-want +got):\n%s", diff)
	}
}
