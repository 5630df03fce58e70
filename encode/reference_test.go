package encode

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/runner"
)

// textReference is encode/testdata/*.text64.json: texts (pairs: text and b), the ids and
// types Hugging Face's tokenizers library gave them, and a float64 reference's outputs on
// those ids (testdata/README.md).
type textReference struct {
	Task   string `json:"task"`
	Inputs []struct {
		Text     string `json:"text"`
		B        string `json:"b"`
		IDs      []int  `json:"ids"`
		Types    []int  `json:"types"`
		Truncate bool   `json:"truncate"`
	} `json:"inputs"`
	Outputs [][]float64 `json:"outputs"`
}

// Texts go through the program's tokenizer and model and come out within 1e-4 (cosine
// distance 1e-6) of the reference: the tokens are the library's, truncation included, and
// the vectors and scores those of transformers' modeling code in float64.
func TestTextsMatchTheFloat64Reference(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		fixture, tokenizer string
		context            int
	}{
		{"bert", "bert-uncased", 48},
		{"bert-rerank", "bert-uncased", 33},
		{"xlmr", "xlmr", 48},
		{"xlmr-rerank", "xlmr", 33},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			raw, err := os.ReadFile("testdata/" + tc.fixture + ".text64.json")
			if err != nil {
				t.Fatal(err)
			}
			var ref textReference
			if err := json.Unmarshal(raw, &ref); err != nil {
				t.Fatal(err)
			}
			if len(ref.Inputs) < 6 || len(ref.Outputs) != len(ref.Inputs) {
				t.Fatalf("%d inputs, %d outputs", len(ref.Inputs), len(ref.Outputs))
			}
			m, _ := open(t, tc.fixture, hfTokenizer(t, tc.tokenizer), export.Options{Context: tc.context})
			worst, worstCos, truncated := 0.0, 0.0, 0
			for i, in := range ref.Inputs {
				// The tokens, as the library gave them.
				var s runner.Sequence
				if ref.Task == "embed" {
					s, err = m.single(i, in.Text, in.Truncate)
				} else {
					s, err = m.pairSequence(i, in.Text, in.B, RerankOptions{Truncate: in.Truncate})
				}
				if err != nil {
					t.Fatalf("input %d %q: %v", i, in.Text, err)
				}
				if !slices.Equal(s.IDs, in.IDs) || (s.Types != nil && !slices.Equal(s.Types, in.Types)) {
					t.Errorf("input %d %q: ids %v types %v, the library's %v %v", i, in.Text, s.IDs, s.Types, in.IDs, in.Types)
				}
				// Longer than the program: refused unless truncation is asked.
				if in.Truncate {
					truncated++
					if ref.Task == "embed" {
						_, err = m.Embed(ctx, []string{in.Text}, EmbedOptions{})
					} else {
						_, err = m.Rerank(ctx, in.Text, []string{in.B}, RerankOptions{})
					}
					if !errors.Is(err, ErrTooLong) {
						t.Errorf("input %d without truncation: %v, want ErrTooLong", i, err)
					}
				}
				// The output, through the public calls.
				var got []float32
				if ref.Task == "embed" {
					e, err := m.Embed(ctx, []string{in.Text}, EmbedOptions{Truncate: in.Truncate})
					if err != nil {
						t.Fatal(err)
					}
					got = e.Vectors[0]
				} else {
					r, err := m.Rerank(ctx, in.Text, []string{in.B}, RerankOptions{Truncate: in.Truncate})
					if err != nil {
						t.Fatal(err)
					}
					got = []float32{r.Results[0].Score}
				}
				want := ref.Outputs[i]
				if len(got) != len(want) {
					t.Fatalf("input %d: %d values, want %d", i, len(got), len(want))
				}
				var dot, gg, ww float64
				for j, w := range want {
					g := float64(got[j])
					worst = max(worst, math.Abs(g-w))
					dot, gg, ww = dot+g*w, gg+g*g, ww+w*w
				}
				if ref.Task == "embed" {
					worstCos = max(worstCos, 1-dot/math.Sqrt(gg*ww))
				}
			}
			// The texts together in one call give what they give alone.
			if ref.Task == "embed" {
				var texts []string
				for _, in := range ref.Inputs {
					texts = append(texts, in.Text)
				}
				e, err := m.Embed(ctx, texts, EmbedOptions{Truncate: true})
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range e.Vectors {
					for j, w := range ref.Outputs[i] {
						worst = max(worst, math.Abs(float64(v[j])-w))
					}
				}
			}
			t.Logf("SUMMARY %s (%s tokenizer): %d texts (%d truncated): worst |diff| %.2g, cosine distance %.2g", tc.fixture, tc.tokenizer, len(ref.Inputs), truncated, worst, worstCos)
			if worst > 1e-4 || worstCos > 1e-6 {
				t.Errorf("worst |diff| %g (≤ 1e-4), cosine distance %g (≤ 1e-6)", worst, worstCos)
			}
			if truncated == 0 {
				t.Error("no input checks truncation")
			}
		})
	}
}
