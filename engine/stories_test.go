package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/sample"
)

// run.c (karpathy/llama2.c, float32) is the independent reference for stories260K.
func TestStories260KLogitsMatchRunC(t *testing.T) {
	ref, want := readRunc(t)
	for _, cache := range []program.DType{program.F32, program.F16} {
		for _, prefill := range []int{0, 7, 16, 64} {
			t.Run(fmt.Sprintf("cache=%s/prefill=%d", cache, prefill), func(t *testing.T) {
				data := exporttest.Program(t, models.Stories260K(), export.Options{Context: 512, Prefill: prefill,
					PrefillLogits: program.LogitsAll, CacheDType: cache})
				got := allLogits(t, loadModel(t, data, 2), ref.InputIDs)
				diff, at := maxAbsDiff(want, got)
				tol := 1e-4
				if cache == program.F16 {
					tol = 2e-2
				}
				if diff > tol {
					t.Errorf("max |logit - run.c| = %.3g at position %d, want ≤ %g", diff, at, tol)
				}
				for i := range want {
					if a, b := sample.Argmax(want[i]), sample.Argmax(got[i]); a != b {
						t.Errorf("position %d: argmax %d, run.c %d", i, b, a)
					}
				}
				t.Logf("max abs diff %.3g", diff)
			})
		}
	}
}

func TestStories260KGreedyMatchesRunC(t *testing.T) {
	ref, _ := readRunc(t)
	want := append(slices.Clone(ref.InputIDs[1:]), ref.GreedyIDs...)
	for _, cache := range []program.DType{program.F32, program.F16} {
		t.Run("cache="+string(cache), func(t *testing.T) {
			m := loadModel(t, exporttest.Program(t, models.Stories260K(), export.Options{Context: 512, Prefill: 16, CacheDType: cache}), 2)
			s, err := m.Runner.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			res, err := generate.Run(context.Background(), s, []int{1}, generate.Options{MaxTokens: len(want)})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Tokens, want) {
				t.Errorf("greedy tokens differ from run.c's\n got %v\nwant %v", res.Tokens, want)
			}
		})
	}
}
