package engine

import (
	"fmt"
	"math"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/sample"
)

// compareReference checks logits rows against llama.cpp's summary: log-sum-exp, top-10
// and probe logits, each within tol × the position's logit range.
func compareReference(t *testing.T, ref *testckpt.Summary, rows [][]float32, tol float64) float64 {
	t.Helper()
	return compareSummary(t, ref, rows, tol, true)
}

// compareSummary checks logits rows against a reference summary: log-sum-exp, top-10 and
// probe logits, each within tol, relative to the position's logit range when perRange, else
// absolute. It returns the worst difference in that unit.
func compareSummary(t *testing.T, ref *testckpt.Summary, rows [][]float32, tol float64, perRange bool) float64 {
	t.Helper()
	if len(rows) != len(ref.Positions) {
		t.Fatalf("%d logits rows for %d reference positions", len(rows), len(ref.Positions))
	}
	worst := 0.0
	for i, p := range ref.Positions {
		row := rows[i]
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range row {
			lo, hi = math.Min(lo, float64(x)), math.Max(hi, float64(x))
		}
		unit := 1.0
		if perRange {
			unit = hi - lo
		}
		check := func(what string, got, want float64) {
			d := math.Abs(got-want) / unit
			worst = math.Max(worst, d)
			if !(d <= tol) {
				t.Errorf("position %d %s: got %.6f, %s %.6f (|diff| %.2g > %g, per range: %v)", i, what, got, ref.Reference, want, d, tol, perRange)
			}
		}
		check("logsumexp", logSumExp(row), p.LogSumExp)
		for _, tl := range p.Top10 {
			check(fmt.Sprintf("logit[%d]", tl.ID), float64(row[tl.ID]), float64(tl.Logit))
		}
		for k, id := range ref.ProbeIDs {
			check(fmt.Sprintf("probe logit[%d]", id), float64(row[id]), float64(p.ProbeLogits[k]))
		}
		if got := sample.Argmax(row); got != p.Argmax && math.Abs(float64(row[got]-row[p.Argmax]))/unit > tol {
			t.Errorf("position %d: argmax %d, %s %d", i, got, ref.Reference, p.Argmax)
		}
	}
	return worst
}

func logSumExp(row []float32) float64 {
	m := math.Inf(-1)
	for _, x := range row {
		m = math.Max(m, float64(x))
	}
	s := 0.0
	for _, x := range row {
		s += math.Exp(float64(x) - m)
	}
	return m + math.Log(s)
}

// Random-weight checkpoints of real architectures against llama.cpp's float32 results.
func TestRandomCheckpointsMatchLlamaCpp(t *testing.T) {
	for _, name := range []string{"llama", "llama-bf16", "qwen3", "qwen3-bf16", "qwen2", "mistral"} {
		for _, prefill := range []int{0, 5} {
			t.Run(fmt.Sprintf("%s/prefill=%d", name, prefill), func(t *testing.T) {
				fsys, err := testckpt.Random(name)
				if err != nil {
					t.Fatal(err)
				}
				ref, err := testckpt.Reference(name)
				if err != nil {
					t.Fatal(err)
				}
				data := exporttest.Program(t, fsys, export.Options{Context: 64, Prefill: prefill, PrefillLogits: program.LogitsAll, CacheDType: program.F32})
				rows := allLogits(t, loadModel(t, data, 2), ref.InputIDs)
				worst := compareReference(t, ref, rows, 1e-3)
				t.Logf("worst |diff|/range %.2g", worst)
			})
		}
	}
}
