// Package accuracy compares the logits of a candidate program (for example a quantized
// one) against a reference program over the same token sequence: argmax agreement and
// the KL divergence of the candidate's next-token distribution from the reference's.
package accuracy

import (
	"fmt"
	"math"

	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/sample"
)

// Report summarizes a comparison over n positions.
type Report struct {
	Positions int
	// ArgmaxAgreement is the fraction of positions whose argmax is the same.
	ArgmaxAgreement float64
	// MeanKL and MaxKL are KL(reference ‖ candidate) in nats.
	MeanKL, MaxKL float64
	// MaxAbsDiff is the largest absolute logit difference.
	MaxAbsDiff float64
}

func (r Report) String() string {
	return fmt.Sprintf("positions %d, argmax agreement %.2f%%, mean KL %.5f nats (max %.5f), max |Δlogit| %.4f",
		r.Positions, 100*r.ArgmaxAgreement, r.MeanKL, r.MaxKL, r.MaxAbsDiff)
}

// Accumulator adds positions one at a time.
type Accumulator struct {
	n, agree   int
	kl, maxKL  float64
	maxAbsDiff float64
	p, q       []float64
}

// Add compares one position's logits.
func (a *Accumulator) Add(ref, cand []float32) error {
	if len(ref) != len(cand) || len(ref) == 0 {
		return fmt.Errorf("accuracy: logits of %d and %d values", len(ref), len(cand))
	}
	if cap(a.p) < len(ref) {
		a.p, a.q = make([]float64, len(ref)), make([]float64, len(ref))
	}
	p, q := logSoftmax(a.p[:len(ref)], ref), logSoftmax(a.q[:len(cand)], cand)
	kl := 0.0
	for i := range p {
		kl += math.Exp(p[i]) * (p[i] - q[i])
		a.maxAbsDiff = math.Max(a.maxAbsDiff, math.Abs(float64(ref[i]-cand[i])))
	}
	a.n++
	a.kl += kl
	a.maxKL = math.Max(a.maxKL, kl)
	if sample.Argmax(ref) == sample.Argmax(cand) {
		a.agree++
	}
	return nil
}

// Report returns the summary so far.
func (a *Accumulator) Report() Report {
	if a.n == 0 {
		return Report{}
	}
	return Report{Positions: a.n, ArgmaxAgreement: float64(a.agree) / float64(a.n),
		MeanKL: a.kl / float64(a.n), MaxKL: a.maxKL, MaxAbsDiff: a.maxAbsDiff}
}

func logSoftmax(dst []float64, x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	lse := m + math.Log(s)
	for i, v := range x {
		dst[i] = float64(v) - lse
	}
	return dst
}

// BitsPerWeight is the storage of a program's weight matrices, the constant tensors its
// linear and embedding ops read (each counted once), in bits per element: block scales
// included, norms and tables excluded. n is the number of elements.
func BitsPerWeight(m *program.Manifest) (bits float64, n int64) {
	seen := map[string]bool{}
	var size int64
	for _, mt := range m.Methods {
		for _, op := range mt.Ops {
			if (op.Kind != program.OpLinear && op.Kind != program.OpEmbed) || seen[op.In[1]] {
				continue
			}
			seen[op.In[1]] = true
			if t, ok := m.Tensor(op.In[1]); ok {
				size += t.Size
				n += int64(t.Shape.Elems())
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return 8 * float64(size) / float64(n), n
}
