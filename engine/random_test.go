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
	worstRel := 0.0
	for i, p := range ref.Positions {
		row := rows[i]
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range row {
			lo, hi = math.Min(lo, float64(x)), math.Max(hi, float64(x))
		}
		span := hi - lo
		check := func(what string, got, want float64) {
			rel := math.Abs(got-want) / span
			worstRel = math.Max(worstRel, rel)
			if !(rel <= tol) {
				t.Errorf("position %d %s: got %.5f, llama.cpp %.5f (|diff|/range %.2g > %g)", i, what, got, want, rel, tol)
			}
		}
		check("logsumexp", logSumExp(row), p.LogSumExp)
		for _, tl := range p.Top10 {
			check(fmt.Sprintf("logit[%d]", tl.ID), float64(row[tl.ID]), float64(tl.Logit))
		}
		for k, id := range ref.ProbeIDs {
			check(fmt.Sprintf("probe logit[%d]", id), float64(row[id]), float64(p.ProbeLogits[k]))
		}
		if got := sample.Argmax(row); got != p.Argmax && math.Abs(float64(row[got]-row[p.Argmax]))/span > tol {
			t.Errorf("position %d: argmax %d, llama.cpp %d", i, got, p.Argmax)
		}
	}
	return worstRel
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
