package accuracy

import (
	"math"
	"testing"
)

func TestIdenticalLogitsAgreeWithZeroKL(t *testing.T) {
	var a Accumulator
	row := []float32{1, 2, 3, -1}
	a.Add(row, row)
	r := a.Report()
	if r.ArgmaxAgreement != 1 || r.MeanKL > 1e-12 || r.MaxAbsDiff != 0 {
		t.Errorf("report %+v", r)
	}
}

func TestKLMatchesHandComputedValue(t *testing.T) {
	var a Accumulator
	// p = softmax(0, 0) = (.5, .5); q = softmax(0, ln 3) = (.25, .75)
	a.Add([]float32{0, 0}, []float32{0, float32(math.Log(3))})
	want := 0.5*math.Log(0.5/0.25) + 0.5*math.Log(0.5/0.75)
	if r := a.Report(); math.Abs(r.MeanKL-want) > 1e-6 || r.ArgmaxAgreement != 0 {
		t.Errorf("report %+v, want KL %.6f and agreement 0 (the reference's tie goes to id 0)", r, want)
	}
	a.Add([]float32{0, 1}, []float32{0, 2})
	if r := a.Report(); r.ArgmaxAgreement != 0.5 || r.Positions != 2 {
		t.Errorf("report %+v, want agreement 0.5 over 2 positions", r)
	}
}

func TestMismatchedLengthsAreAnError(t *testing.T) {
	var a Accumulator
	if err := a.Add([]float32{1}, []float32{1, 2}); err == nil {
		t.Error("no error")
	}
}
