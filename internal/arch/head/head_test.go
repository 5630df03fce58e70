package head

import (
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/program"
)

func kinds(ops []program.Op) string {
	var s []string
	for _, op := range ops {
		s = append(s, string(op.Kind)+":"+strings.Join(op.In, ",")+"→"+op.Out[0])
	}
	return strings.Join(s, " ")
}

func TestHeadOpsWriteTheOutputLast(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    Head
		want string
		dim  int
	}{
		{"pool only", Head{Pooling: program.PoolCLS, Output: program.OutputEmbedding},
			"pool:x,attention_mask→embeddings", 8},
		{"mean and normalize", Head{Pooling: program.PoolMean, Normalize: true, Output: program.OutputEmbedding},
			"pool:x,attention_mask→pooled l2_normalize:pooled→embeddings", 8},
		{"dense, tanh, normalize", Head{Pooling: program.PoolMean, Normalize: true, Output: program.OutputEmbedding,
			Linears: []Linear{{Weight: "w", Bias: "b", In: 8, Out: 4, Activation: program.ActTanh}}},
			"pool:x,attention_mask→pooled linear:pooled,w,b→head_0 activation:head_0→head_0 l2_normalize:head_0→embeddings", 4},
		{"classifier", Head{Pooling: program.PoolCLS, Output: program.OutputScore,
			Linears: []Linear{{Weight: "d", Bias: "db", In: 8, Out: 8, Activation: program.ActTanh}, {Weight: "o", In: 8, Out: 1}}},
			"pool:x,attention_mask→pooled linear:pooled,d,db→head_0 activation:head_0→head_0 linear:head_0,o→scores", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, acts, err := tc.h.Ops("x", 8, 3)
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(ops); got != tc.want {
				t.Errorf("ops\n got %s\nwant %s", got, tc.want)
			}
			for _, a := range acts {
				if a.Shape[0] != 3 {
					t.Errorf("activation %s %v is not one row per sequence", a.Name, a.Shape)
				}
			}
			if d := tc.h.Dim(8); d != tc.dim {
				t.Errorf("dim %d, want %d", d, tc.dim)
			}
		})
	}
}

func TestHeadRejectsMismatchedWidths(t *testing.T) {
	h := Head{Pooling: program.PoolMean, Output: program.OutputEmbedding, Linears: []Linear{{Weight: "w", In: 6, Out: 4}}}
	if _, _, err := h.Ops("x", 8, 2); err == nil || !strings.Contains(err.Error(), "after a layer of 8") {
		t.Errorf("error %v", err)
	}
	h = Head{Pooling: "weighted", Output: program.OutputEmbedding}
	if err := h.Validate(8); err == nil {
		t.Error("unknown pooling accepted")
	}
}
