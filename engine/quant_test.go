package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/internal/accuracy"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
)

// Quantized stories260K against the float32 program: argmax agreement and KL over run.c's
// 64-token sequence and over a 200-token greedy story.
func TestQuantizedStories260KAgreesWithFloat(t *testing.T) {
	ref, _ := readRunc(t)
	opts := export.Options{Context: 512, Prefill: 32, PrefillLogits: program.LogitsAll, CacheDType: program.F32}
	f32 := loadModel(t, exporttest.Program(t, models.Stories260K(), opts), 2)
	s, err := f32.Runner.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	story, err := generate.Run(context.Background(), s, []int{1}, generate.Options{MaxTokens: 200})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	sequences := map[string][]int{"runc64": ref.InputIDs, "story200": append([]int{1}, story.Tokens...)}
	for _, c := range []struct {
		weights  string
		minAgree float64
	}{{"q8", 0.97}, {"q4", 0.85}} {
		o := opts
		o.Weights = c.weights
		q := loadModel(t, exporttest.Program(t, models.Stories260K(), o), 2)
		for name, seq := range sequences {
			t.Run(fmt.Sprintf("%s/%s", c.weights, name), func(t *testing.T) {
				want, got := allLogits(t, f32, seq), allLogits(t, q, seq)
				var acc accuracy.Accumulator
				for i := range want {
					if err := acc.Add(want[i], got[i]); err != nil {
						t.Fatal(err)
					}
				}
				r := acc.Report()
				t.Logf("%s %s: %s", c.weights, name, r)
				if r.ArgmaxAgreement < c.minAgree {
					t.Errorf("argmax agreement %.4f < %.2f", r.ArgmaxAgreement, c.minAgree)
				}
			})
		}
	}
}

func TestQuantizedProgramSizes(t *testing.T) {
	fsys, err := testckpt.Random("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	size := func(w string) float64 {
		return float64(len(exporttest.Program(t, fsys, export.Options{Context: 64, Weights: w})))
	}
	f32 := size("f32")
	for _, c := range []struct {
		weights string
		max     float64
	}{{"q8", 0.35}, {"q4", 0.30}} {
		r := size(c.weights) / f32
		t.Logf("%s program is %.3f of the f32 program", c.weights, r)
		if r >= c.max {
			t.Errorf("%s program is %.3f of the f32 program, want < %.2f", c.weights, r, c.max)
		}
	}
}
