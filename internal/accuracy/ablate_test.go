//go:build tune

package accuracy_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
)

// Per-role ablation on the tuning text (as TestTuningText): only the matrices whose names
// contain one of a group's substrings are quantized to WEIGHTS (EMBED for the embedding), the
// rest kept float, for each export.Options.Rotate in ROTATIONS. Groups are separated by ";",
// substrings by ",". Example (docs/quantization.md, "Rotation"):
//
//	ABLATE="q_proj;k_proj;v_proj;o_proj;gate_proj;up_proj;embed" ROTATIONS=none,hadamard WEIGHTS=q4 EMBED=q8 \
//	  go test -tags tune ./internal/accuracy -run TuningAblate -v
func TestTuningAblate(t *testing.T) {
	ckpt, _, seqs := tuningSequences(t)
	logits := func(o export.Options) [][][]float32 { return tuningLogits(t, ckpt, seqs, o) }
	f32 := logits(export.Options{})
	groups := strings.Split(os.Getenv("ABLATE"), ";")
	rotations := strings.Split(os.Getenv("ROTATIONS"), ",")
	weights := os.Getenv("WEIGHTS")
	for _, g := range groups {
		subs := strings.Split(g, ",")
		var keep []string
		for _, n := range ckpt.Names() {
			quantized := slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(n, s) })
			if !quantized && (strings.HasSuffix(n, "proj.weight") || strings.Contains(n, "embed")) {
				keep = append(keep, n)
			}
		}
		for _, rot := range rotations {
			got := logits(export.Options{Weights: weights, EmbedWeights: os.Getenv("EMBED"), Keep: keep, Rotate: rot})
			r := tuningReport(t, f32, got)
			t.Logf("quantized %-30s rotate=%-8s KL %.5f argmax %.2f%%", g, rot, r.MeanKL, 100*r.ArgmaxAgreement)
		}
	}
}
