package onnx

import (
	"fmt"

	"github.com/hfstatic/hfstatic/program"
)

// moe translates a mixture-of-experts layer densely: every expert runs on every row and
// is weighted by the row's routing weight, zero for the experts it did not choose, summed
// in expert order as internal/exec sums the chosen ones (adding zeros changes nothing).
// Correct, but it computes E/top_k times the work of the Go executor, which multiplies
// only the rows routed to each expert.
func (b *builder) moe(op *program.Op, in []string) (string, error) {
	g, at := b.g, op.Attr
	E := (len(op.In) - 2) / 3
	if E < 1 || len(op.In) != 3*E+2 || at.TopK < 1 || at.TopK > E {
		return "", fmt.Errorf("moe with %d inputs and top_k %d", len(op.In), at.TopK)
	}
	router, err := b.tensor(op.In[1])
	if err != nil {
		return "", err
	}
	if router.DType != program.F32 || router.Shape[0] != E {
		return "", fmt.Errorf("moe router %q is %s %v, want f32 [%d,D]", router.Name, router.DType, router.Shape, E)
	}
	x := in[0]
	logits, err := b.matmul(x, router, "") // [R, E]
	if err != nil {
		return "", err
	}
	// the top k logits (ties: the lower expert) and their softmax weights, over all
	// experts or, with norm_top_k, over the chosen ones
	top := g.node("TopK", []string{logits, g.ints(int64(at.TopK))}, 2, attrInt("axis", -1), attrInt("largest", 1), attrInt("sorted", 1))
	values, chosen := top[0], top[1]
	peak := g.slice(values, 1, 0, 1)
	num := g.op("Exp", []string{g.binary("Sub", values, peak)}) // [R, K]
	den := g.op("Exp", []string{g.binary("Sub", logits, peak)})
	if at.NormTopK {
		den = num
	}
	den = g.op("ReduceSum", []string{den, g.ints(-1)}, attrInt("keepdims", 1))
	weights := g.op("ScatterElements", []string{g.op("ConstantOfShape", []string{g.op("Shape", []string{logits})}), chosen, g.binary("Div", num, den)}, attrInt("axis", 1)) // [R, E]
	var y string
	for e := range E {
		expert := func(k int) (string, error) {
			t, err := b.tensor(op.In[2+k*E+e])
			if err != nil {
				return "", err
			}
			return b.matmul(x, t, "")
		}
		gate, err := expert(0)
		if err != nil {
			return "", err
		}
		up, err := expert(1)
		if err != nil {
			return "", err
		}
		h, err := b.glu(at.Activation, gate, up)
		if err != nil {
			return "", err
		}
		down, err := b.tensor(op.In[2+2*E+e])
		if err != nil {
			return "", err
		}
		if h, err = b.matmul(h, down, ""); err != nil {
			return "", err
		}
		term := g.binary("Mul", g.slice(weights, 1, int64(e), int64(e+1)), h)
		if y == "" {
			y = term
		} else {
			y = g.binary("Add", y, term)
		}
	}
	return y, nil
}
