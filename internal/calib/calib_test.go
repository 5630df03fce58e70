package calib_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/calib"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/tokenizer"
)

func openStories(tb testing.TB) *hf.Checkpoint {
	tb.Helper()
	ckpt, err := hf.Open(models.Stories260K())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ckpt.Close() })
	return ckpt
}

func weights(tb testing.TB, ckpt *hf.Checkpoint, name string) []float32 {
	tb.Helper()
	v, _, err := ckpt.Float32(name)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// One token (BOS) through stories260K, 512 times (8 tokens per channel, so that the
// Gram matrices of 64-channel inputs are collected): the first layer's attention input is
// RMSNorm(embedding row 1) * γ, computed here from the checkpoint; its square is the
// importance of q, k and v, and its outer product their Gram matrix.
func TestStatisticsAreTheLayerInputs(t *testing.T) {
	ckpt := openStories(t)
	seqs := make([][]int, 512)
	for i := range seqs {
		seqs[i] = []int{1}
	}
	st, err := calib.Run(context.Background(), ckpt, seqs, calib.Options{Threads: 1, MaxGram: 64})
	if err != nil {
		t.Fatal(err)
	}
	const D = 64
	row := weights(t, ckpt, "model.embed_tokens.weight")[D : 2*D]
	gamma := weights(t, ckpt, "model.layers.0.input_layernorm.weight")
	var ms float64
	for _, v := range row {
		ms += float64(v) * float64(v)
	}
	inv := 1 / math.Sqrt(ms/D+1e-5)
	x := make([]float64, D)
	for c := range x {
		x[c] = float64(row[c]) * inv * float64(gamma[c])
	}
	for _, w := range []string{"q_proj", "k_proj", "v_proj"} {
		cal, ok := st.Matrices["model.layers.0.self_attn."+w+".weight"]
		if !ok {
			t.Fatalf("no statistics for %s", w)
		}
		if len(cal.Importance) != D || len(cal.Gram) != D*D {
			t.Fatalf("%s: %d importance values and %d Gram values, want %d and %d", w, len(cal.Importance), len(cal.Gram), D, D*D)
		}
		for c := range D {
			if want := x[c] * x[c]; math.Abs(float64(cal.Importance[c])-want) > 1e-5*want+1e-9 {
				t.Fatalf("%s importance[%d] = %g, want %g", w, c, cal.Importance[c], want)
			}
			for c2 := range D {
				if want := x[c] * x[c2]; math.Abs(float64(cal.Gram[c*D+c2])-want) > 1e-5*math.Abs(want)+1e-9 {
					t.Fatalf("%s Gram[%d][%d] = %g, want %g", w, c, c2, cal.Gram[c*D+c2], want)
				}
			}
		}
	}
	if st.Tokens != 512 || len(st.Matrices) != 5*7+1 {
		t.Errorf("%d tokens, %d matrices; want 512 and 36 (7 per layer and the tied embedding)", st.Tokens, len(st.Matrices))
	}
	// The tied embedding is also looked up: its statistics normalized to a mean square of 1,
	// plus the lookup's weight (0.3) on the diagonal (lookup_test.go checks the values).
	if e := st.Matrices["model.embed_tokens.weight"]; len(e.Gram) != D*D || slices.Min(e.Importance) < 0.3 {
		t.Errorf("tied embedding: %d Gram values, smallest importance %g; want %d and ≥ 0.3", len(e.Gram), slices.Min(e.Importance), D*D)
	}
	// FFN inputs (172 channels) are wider than MaxGram 64: no Gram matrix.
	if d := st.Matrices["model.layers.0.mlp.down_proj.weight"]; len(d.Importance) != 172 || d.Gram != nil {
		t.Errorf("down_proj: %d importance values, Gram %v; want 172 and none", len(d.Importance), d.Gram != nil)
	}
	// One token is too few for a 64×64 Gram matrix (8 tokens per channel).
	few, err := calib.Run(context.Background(), ckpt, seqs[:1], calib.Options{Threads: 1, MaxGram: 64})
	if err != nil {
		t.Fatal(err)
	}
	if q := few.Matrices["model.layers.0.self_attn.q_proj.weight"]; q.Gram != nil || len(q.Importance) != 64 {
		t.Errorf("one token: q_proj has a Gram matrix (%v) or %d importance values", q.Gram != nil, len(q.Importance))
	}
}

// The same text gives the same statistics, whether it runs in one sequence or is cut in
// pieces at the prefill step's boundary; a longer run differs.
func TestStatisticsAreDeterministic(t *testing.T) {
	ckpt := openStories(t)
	tok, err := tokenizer.Load(ckpt.TokenizerJSON, ckpt.TokenizerConfigJSON)
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := calib.Sequences(tok, calib.DefaultText(), 100)
	if err != nil {
		t.Fatal(err)
	}
	seqs = seqs[:8] // about 800 tokens: Gram matrices for the 64-channel inputs
	opts := calib.Options{Threads: 2, MaxGram: 256}
	a, err := calib.Run(context.Background(), ckpt, seqs, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := calib.Run(context.Background(), ckpt, seqs, opts)
	if err != nil {
		t.Fatal(err)
	}
	for name, ca := range a.Matrices {
		cb := b.Matrices[name]
		if !slices.Equal(ca.Importance, cb.Importance) || !slices.Equal(ca.Gram, cb.Gram) {
			t.Fatalf("%s: two runs differ", name)
		}
	}
	if a.Matrices["model.layers.0.self_attn.q_proj.weight"].Gram == nil {
		t.Error("no Gram matrix for q_proj from 800 tokens")
	}
	c, err := calib.Run(context.Background(), ckpt, seqs[:4], opts)
	if err != nil {
		t.Fatal(err)
	}
	if name := "model.layers.3.mlp.down_proj.weight"; slices.Equal(a.Matrices[name].Importance, c.Matrices[name].Importance) {
		t.Error("statistics of 8 and 4 sequences are equal")
	}
}

func TestSequencesSplitParagraphsAndCut(t *testing.T) {
	ckpt := openStories(t)
	tok, err := tokenizer.Load(ckpt.TokenizerJSON, ckpt.TokenizerConfigJSON)
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := calib.Sequences(tok, "Once upon a time.\n\n\n  \r\n\r\nThe cat sat on the mat and looked at the sun.\n", 5)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := tok.Encode("Once upon a time.", true)
	second, _ := tok.Encode("The cat sat on the mat and looked at the sun.", true)
	var want [][]int
	for _, ids := range [][]int{first, second} {
		for ; len(ids) > 0; ids = ids[min(5, len(ids)):] {
			want = append(want, ids[:min(5, len(ids))])
		}
	}
	if !slices.EqualFunc(seqs, want, slices.Equal) {
		t.Errorf("sequences %v, want %v", seqs, want)
	}
	if _, err := calib.Sequences(tok, " \n\n \n", 5); !errors.Is(err, calib.ErrInput) {
		t.Errorf("blank text: err = %v, want ErrInput", err)
	}
	if n := strings.Count(calib.DefaultText(), "\n\n"); n < 10 {
		t.Errorf("default text has %d paragraph breaks, want >= 10", n)
	}
}

func TestBadSequencesAreInputErrors(t *testing.T) {
	ckpt := openStories(t)
	for name, seqs := range map[string][][]int{
		"empty":        nil,
		"id too large": {{1, 512}},
		"negative id":  {{-1}},
	} {
		if _, err := calib.Run(context.Background(), ckpt, seqs, calib.Options{Threads: 1}); !errors.Is(err, calib.ErrInput) {
			t.Errorf("%s: err = %v, want ErrInput", name, err)
		}
	}
	if _, err := calib.Run(context.Background(), ckpt, [][]int{{1}}, calib.Options{}); err == nil {
		t.Error("Threads 0: no error")
	}
}

// The model's own text starts at BOS, has the length asked for, is the same for the same
// seed (and so are its statistics), and differs for another seed.
func TestSelfIsDeterministic(t *testing.T) {
	ckpt := openStories(t)
	so := calib.SelfOptions{Sequences: 3, Length: 40, Temperature: 1, Seed: 5}
	opts := calib.Options{Threads: 2, MaxGram: 64}
	a, seqA, err := calib.RunSelf(context.Background(), ckpt, so, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, seqB, err := calib.RunSelf(context.Background(), ckpt, so, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(seqA) != 3 || a.Tokens != 3*40 {
		t.Fatalf("%d sequences, %d tokens; want 3 and 120", len(seqA), a.Tokens)
	}
	for i, s := range seqA {
		if len(s) != 40 || s[0] != 1 || !slices.Equal(s, seqB[i]) {
			t.Fatalf("sequence %d: %d tokens from %d, equal to the second run's: %v; want 40 from BOS 1, equal", i, len(s), s[0], slices.Equal(s, seqB[i]))
		}
	}
	for name, ca := range a.Matrices {
		if cb := b.Matrices[name]; !slices.Equal(ca.Importance, cb.Importance) || !slices.Equal(ca.Gram, cb.Gram) {
			t.Fatalf("%s: two runs differ", name)
		}
	}
	so.Seed++
	_, seqC, err := calib.RunSelf(context.Background(), ckpt, so, opts)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(seqA[0], seqC[0]) {
		t.Error("seeds 5 and 6 wrote the same text")
	}
	for _, bad := range []calib.SelfOptions{{Sequences: 0, Length: 40, Temperature: 1}, {Sequences: 1, Length: 1, Temperature: 1}, {Sequences: 1, Length: 40}} {
		if _, _, err := calib.RunSelf(context.Background(), ckpt, bad, opts); err == nil {
			t.Errorf("RunSelf(%+v): no error", bad)
		}
	}
}
