//go:build ort

package ort_test

import (
	"context"
	"math"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/runner"
)

// The ONNX graphs of embedding and reranking programs (every encoder op, each pooling) give
// on ONNX Runtime what the Go executor gives, f32 and q8, for sequences of 1 to S tokens in
// one batch with unused rows.
func TestEncodeGraphsMatchGoExecutor(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		context int
	}{{"bert", 48}, {"bert-dense", 64}, {"bert-rerank", 64}, {"xlmr", 64}, {"xlmr-rerank", 64}, {"qwen3-embed", 64}} {
		ref, err := testckpt.EncodeReference(tc.fixture)
		if err != nil {
			t.Fatal(err)
		}
		seqs := make([]runner.Sequence, len(ref.Inputs))
		for i, in := range ref.Inputs {
			seqs[i] = runner.Sequence{IDs: in.IDs, Types: in.Types}
		}
		for _, weights := range []string{"f32", "q8"} {
			t.Run(tc.fixture+"/"+weights, func(t *testing.T) {
				data := exportONNX(t, tc.fixture+weights, random(tc.fixture), export.Options{Context: tc.context, Batch: 3, Weights: weights})
				goModel, ortModel := executors(t, data)
				want, err := goModel.Encoder.Encode(context.Background(), seqs)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ortModel.Encoder.Encode(context.Background(), seqs)
				if err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				for i := range want {
					for j := range want[i] {
						worst = max(worst, math.Abs(float64(got[i][j]-want[i][j])))
					}
				}
				limit := 1e-4 // float32 in another order of summation
				if weights == "q8" {
					limit = 2e-2 // ORT's MatMulNBits multiplies float activations; hfstatic's int8 ones
				}
				if worst > limit {
					t.Errorf("worst |diff| %.3g between ONNX Runtime and the Go executor, want ≤ %g", worst, limit)
				}
				t.Logf("worst |diff| %.3g", worst)
			})
		}
	}
}
