//go:build tune

package accuracy_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/accuracy"
	"github.com/hfstatic/hfstatic/internal/calib"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// The text the quantizers were tuned on (docs/quantization.md, "Tried"): the paragraphs of
// testdata/tuning.txt and the fixture's greedy story, each a sequence from BOS. Not a check:
// it prints the mean KL of each quantization against the float32 program, for comparing
// ideas without looking at the held-out text. Run: go test -tags tune ./internal/accuracy -run TuningText -v
func TestTuningText(t *testing.T) {
	ckpt, tok, seqs := tuningSequences(t)
	positions := 0
	for _, s := range seqs {
		positions += len(s)
	}
	copts := calib.Options{Threads: 2, MaxGram: calib.DefaultMaxGram}
	cs, err := calib.Sequences(tok, calib.DefaultText(), 512)
	if err != nil {
		t.Fatal(err)
	}
	text, err := calib.Run(context.Background(), ckpt, cs, copts)
	if err != nil {
		t.Fatal(err)
	}
	self, _, err := calib.RunSelf(context.Background(), ckpt, calib.DefaultSelf, copts)
	if err != nil {
		t.Fatal(err)
	}
	copts.Rotate = export.RotateHadamard
	rtext, err := calib.Run(context.Background(), ckpt, cs, copts)
	if err != nil {
		t.Fatal(err)
	}
	rself, _, err := calib.RunSelf(context.Background(), ckpt, calib.DefaultSelf, copts)
	if err != nil {
		t.Fatal(err)
	}
	// Statistics by calibration and rotation (a rotated program's come from the rotated float model).
	stats := map[string]map[string]kernels.Calibration{"none": nil, "self": self.Matrices, "default": text.Matrices,
		"none/hadamard": nil, "self/hadamard": rself.Matrices, "default/hadamard": rtext.Matrices}
	logits := func(o export.Options) [][][]float32 { return tuningLogits(t, ckpt, seqs, o) }
	f32 := logits(export.Options{})
	t.Logf("%d sequences, %d positions", len(seqs), positions)
	for _, c := range []struct{ weights, embed, calibrate, rotate string }{
		{"q8", "", "none", ""}, {"q8", "", "self", ""}, {"q8", "", "default", ""},
		{"q4", "q4", "none", ""}, {"q4", "q4", "self", ""}, {"q4", "q4", "default", ""},
		{"q4", "", "none", ""}, {"q4", "", "self", ""}, {"q4", "", "default", ""},
		{"f32", "", "none", "hadamard"},
		{"q8", "", "none", "hadamard"}, {"q8", "", "self", "hadamard"}, {"q8", "", "default", "hadamard"},
		{"q4", "q4", "none", "hadamard"}, {"q4", "q4", "self", "hadamard"}, {"q4", "q4", "default", "hadamard"},
		{"q4", "", "none", "hadamard"}, {"q4", "", "self", "hadamard"}, {"q4", "", "default", "hadamard"},
	} {
		st := stats[c.calibrate]
		if c.rotate != "" {
			st = stats[c.calibrate+"/"+c.rotate]
		}
		got := logits(export.Options{Weights: c.weights, EmbedWeights: c.embed, Calibration: st, Rotate: c.rotate})
		r := tuningReport(t, f32, got)
		t.Logf("weights=%s embed=%s calibrate=%s rotate=%s: mean KL %.5f, argmax %.2f%%, max |Δlogit| %.2g", c.weights, c.embed, c.calibrate, c.rotate, r.MeanKL, 100*r.ArgmaxAgreement, r.MaxAbsDiff)
	}
}

// tuningSequences opens stories260K and encodes the tuning text: the paragraphs of
// testdata/tuning.txt and the fixture's greedy story, each a sequence from BOS.
func tuningSequences(t *testing.T) (*hf.Checkpoint, *tokenizer.Tokenizer, [][]int) {
	t.Helper()
	ckpt, err := hf.Open(models.Stories260K())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ckpt.Close() })
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
	return ckpt, tok, seqs
}

// tuningLogits is every position's logits of each sequence under a program exported with o
// (context the sequence, prefill 64, all logits, f32 caches).
func tuningLogits(t *testing.T, ckpt *hf.Checkpoint, seqs [][]int, o export.Options) [][][]float32 {
	var out [][][]float32
	for _, s := range seqs {
		o.Context, o.Prefill, o.PrefillLogits, o.CacheDType = len(s), 64, program.LogitsAll, program.F32
		l, _ := programLogits(t, ckpt, o, s)
		out = append(out, l)
	}
	return out
}

// tuningReport compares every position's logits of got with want's.
func tuningReport(t *testing.T, want, got [][][]float32) accuracy.Report {
	var a accuracy.Accumulator
	for i := range want {
		for j := range want[i] {
			if err := a.Add(want[i][j], got[i][j]); err != nil {
				t.Fatal(err)
			}
		}
	}
	return a.Report()
}
