//go:build tune

package accuracy_test

import (
	"os"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/accuracy"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// Per-role ablation on the tuning text (as TestTuningText): only the matrices whose names
// contain one of a group's substrings are quantized to WEIGHTS (EMBED for the embedding), the
// rest kept float, for each export.Options.Rotate in ROTATIONS. Groups are separated by ";",
// substrings by ",". Example (docs/quantization.md, "Rotation"):
//
//	ABLATE="q_proj;k_proj;v_proj;o_proj;gate_proj;up_proj;embed" ROTATIONS=none,hadamard WEIGHTS=q4 EMBED=q8 \
//	  go test -tags tune ./internal/accuracy -run TuningAblate -v
func TestTuningAblate(t *testing.T) {
	ckpt, err := hf.Open(models.Stories260K())
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	tok, err := tokenizer.Load(ckpt.TokenizerJSON, ckpt.TokenizerConfigJSON)
	if err != nil {
		t.Fatal(err)
	}
	tuning, err := os.ReadFile("testdata/tuning.txt")
	if err != nil {
		t.Fatal(err)
	}
	story, err := os.ReadFile("../../engine/testdata/stories260K/expected_t0_n200.txt")
	if err != nil {
		t.Fatal(err)
	}
	var seqs [][]int
	for _, text := range append(strings.Split(strings.TrimSpace(string(tuning)), "\n\n"), string(story)) {
		ids, err := tok.Encode(strings.TrimSpace(text), true)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ids)
	}
	logits := func(o export.Options) [][][]float32 {
		var out [][][]float32
		for _, s := range seqs {
			o.Context, o.Prefill, o.PrefillLogits, o.CacheDType = len(s), 64, program.LogitsAll, program.F32
			l, _ := programLogits(t, ckpt, o, s)
			out = append(out, l)
		}
		return out
	}
	f32 := logits(export.Options{})
	groups := strings.Split(os.Getenv("ABLATE"), ";")
	rotations := strings.Split(os.Getenv("ROTATIONS"), ",")
	weights := os.Getenv("WEIGHTS")
	for _, g := range groups {
		subs := strings.Split(g, ",")
		var keep []string
		for _, n := range ckpt.Names() {
			q := false
			for _, s := range subs {
				if strings.Contains(n, s) {
					q = true
				}
			}
			if !q && (strings.HasSuffix(n, "proj.weight") || strings.Contains(n, "embed")) {
				keep = append(keep, n)
			}
		}
		for _, rot := range rotations {
			got := logits(export.Options{Weights: weights, EmbedWeights: os.Getenv("EMBED"), Keep: keep, Rotate: rot})
			var a accuracy.Accumulator
			for i := range seqs {
				for j := range seqs[i] {
					if err := a.Add(f32[i][j], got[i][j]); err != nil {
						t.Fatal(err)
					}
				}
			}
			r := a.Report()
			t.Logf("quantized %-30s rotate=%-8s KL %.5f argmax %.2f%%", g, rot, r.MeanKL, 100*r.ArgmaxAgreement)
		}
	}
}
