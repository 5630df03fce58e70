package accuracy_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/accuracy"
	"github.com/hfstatic/hfstatic/internal/calib"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/tokenizer"
)

const vocab = 512 // stories260K

// readLogits reads gzipped little-endian float32 logits [n][vocab].
func readLogits(tb testing.TB, path string) [][]float32 {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	if len(raw)%(4*vocab) != 0 {
		tb.Fatalf("%s: %d bytes, not rows of %d float32", path, len(raw), vocab)
	}
	rows := make([][]float32, len(raw)/(4*vocab))
	for i := range rows {
		rows[i] = make([]float32, vocab)
		for j := range rows[i] {
			rows[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i*vocab+j):]))
		}
	}
	return rows
}

func compare(tb testing.TB, ref, cand [][]float32) accuracy.Report {
	tb.Helper()
	var a accuracy.Accumulator
	for i := range ref {
		if err := a.Add(ref[i], cand[i]); err != nil {
			tb.Fatal(err)
		}
	}
	return a.Report()
}

// programLogits exports stories260K with opts and returns its logits after each token of seq.
func programLogits(tb testing.TB, ckpt *hf.Checkpoint, opts export.Options, seq []int) ([][]float32, *program.Manifest) {
	tb.Helper()
	var buf bytes.Buffer
	if _, err := export.Export(context.Background(), ckpt, &buf, opts); err != nil {
		tb.Fatal(err)
	}
	data, _ := runner.HeapAllocator{}.Alloc(buf.Len())
	copy(data, buf.Bytes())
	m, err := engine.Load(data, engine.Options{Threads: 2})
	if err != nil {
		tb.Fatal(err)
	}
	defer m.Close()
	s, err := m.Runner.NewSession()
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	var rows [][]float32
	err = s.AppendEach(context.Background(), seq, func(i int, row []float32) error {
		rows = append(rows, slices.Clone(row))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return rows, &m.File.Manifest
}

// Quantized stories260K against its float32 logits on held-out text (testdata/heldout.txt,
// seen by neither the calibration nor the tuning), next to llama.cpp's Q8_0 and Q4_0
// against llama.cpp's float32 on the same tokens (testdata/README.md). Each row's bound is
// a target of issue 22 or, where lower, about the level reached, so that a regression
// fails. "self" is what export does for this model without --calibrate.
func TestQuantizedAgainstLlamaCppOnHeldOutText(t *testing.T) {
	ckpt, err := hf.Open(models.Stories260K())
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	tok, err := tokenizer.Load(ckpt.TokenizerJSON, ckpt.TokenizerConfigJSON)
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile("testdata/heldout.txt")
	if err != nil {
		t.Fatal(err)
	}
	seq, err := tok.Encode(string(text), true)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	js, err := os.ReadFile("testdata/heldout.ids.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &ids); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seq, ids) {
		t.Fatalf("the held-out text encodes to %d ids that differ from the %d llama.cpp was given", len(seq), len(ids))
	}
	peerF32 := readLogits(t, "testdata/llamacpp/heldout.f32.logits.f32.gz")
	peer := map[string]accuracy.Report{}
	for _, q := range []string{"q8_0", "q4_0"} {
		peer[q] = compare(t, peerF32, readLogits(t, "testdata/llamacpp/heldout."+q+".logits.f32.gz"))
		t.Logf("llama.cpp %s: %s", q, peer[q])
	}

	base := export.Options{Context: len(seq), Prefill: 64, PrefillLogits: program.LogitsAll, CacheDType: program.F32}
	f32, _ := programLogits(t, ckpt, base, seq)
	if d := maxDiff(f32, peerF32); d > 1e-3 {
		t.Fatalf("float32 logits differ from llama.cpp's by %g", d)
	}
	copts := calib.Options{Threads: 2, MaxGram: calib.DefaultMaxGram}
	seqs, err := calib.Sequences(tok, calib.DefaultText(), 512)
	if err != nil {
		t.Fatal(err)
	}
	textStats, err := calib.Run(context.Background(), ckpt, seqs, copts)
	if err != nil {
		t.Fatal(err)
	}
	self, _, err := calib.RunSelf(context.Background(), ckpt, calib.DefaultSelf, copts)
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]map[string]kernels.Calibration{"none": nil, "self": self.Matrices, "default": textStats.Matrices}
	for _, c := range []struct {
		weights, embed string
		calibrate      string // none, self (export's default for this model) or default (the embedded text)
		peer           string
		maxRatio       float64 // candidate KL / llama.cpp's: issue 22's target or, where lower, the level reached
	}{
		{"q8", "", "none", "q8_0", 1},
		{"q8", "", "self", "q8_0", 1},
		{"q8", "", "default", "q8_0", 1},
		{"q4", "q4", "none", "q4_0", 1},
		{"q4", "q4", "self", "q4_0", 0.72},
		{"q4", "q4", "default", "q4_0", 0.7},
		{"q4", "", "none", "q4_0", 0.78},
		{"q4", "", "self", "q4_0", 0.6},
		{"q4", "", "default", "q4_0", 0.6},
	} {
		name := fmt.Sprintf("weights=%s/embed=%s/calibrate=%s", c.weights, c.embed, c.calibrate)
		t.Run(name, func(t *testing.T) {
			o := base
			o.Weights, o.EmbedWeights = c.weights, c.embed
			o.Calibration = stats[c.calibrate]
			got, man := programLogits(t, ckpt, o, seq)
			r := compare(t, f32, got)
			bits, _ := accuracy.BitsPerWeight(man)
			ratio := r.MeanKL / peer[c.peer].MeanKL
			t.Logf("%s: %s; %.3f bits per weight; %.2f× llama.cpp %s's KL", name, r, bits, ratio, c.peer)
			if ratio > c.maxRatio {
				t.Errorf("KL %.5f is %.2f× llama.cpp %s's %.5f, want ≤ %.2f×", r.MeanKL, ratio, c.peer, peer[c.peer].MeanKL, c.maxRatio)
			}
		})
	}
}

func maxDiff(a, b [][]float32) float64 {
	var d float64
	for i := range a {
		for j := range a[i] {
			d = math.Max(d, math.Abs(float64(a[i][j]-b[i][j])))
		}
	}
	return d
}
