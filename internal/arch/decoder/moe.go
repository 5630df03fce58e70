package decoder

import (
	"fmt"
	"slices"

	"github.com/hfstatic/hfstatic/program"
)

// MoE describes mixture-of-experts feed-forward layers (Qwen3-MoE, Mixtral): a float32
// router picks TopK of Experts SwiGLU experts per token (program.OpMoE).
type MoE struct {
	Experts, TopK int
	// FFN is each expert's intermediate size.
	FFN int
	// NormTopK renormalizes the chosen experts' probabilities to sum to 1.
	NormTopK bool
	// Sparse has one entry per layer: true where the layer's feed-forward is the mixture,
	// false where it is the dense MLP of Spec.FFN.
	Sparse []bool
}

// Mixture-of-experts roles (matrices are [out, in]): the router, and each expert's
// gate, up and down projections, named by Names.Expert.
const (
	Router     Role = "router"      // [experts, hidden], exported as f32
	ExpertGate Role = "expert_gate" // [moe ffn, hidden]
	ExpertUp   Role = "expert_up"   // [moe ffn, hidden]
	ExpertDown Role = "expert_down" // [hidden, moe ffn]
)

// validateMoE checks the optional MoE part of a spec.
func (s *Spec) validateMoE() error {
	m := s.MoE
	if m == nil {
		return nil
	}
	if m.Experts <= 0 || m.Experts > program.MaxExperts {
		return fmt.Errorf("decoder spec: experts = %d, must be in [1, %d]", m.Experts, program.MaxExperts)
	}
	if m.TopK <= 0 || m.TopK > m.Experts {
		return fmt.Errorf("decoder spec: top_k = %d, must be in [1, experts = %d]", m.TopK, m.Experts)
	}
	if m.FFN <= 0 {
		return fmt.Errorf("decoder spec: expert ffn = %d, must be > 0", m.FFN)
	}
	if len(m.Sparse) != s.Layers {
		return fmt.Errorf("decoder spec: %d sparse-layer flags for %d layers", len(m.Sparse), s.Layers)
	}
	if s.Names.Expert == nil {
		return fmt.Errorf("decoder spec: mixture of experts without expert tensor names")
	}
	if s.MLPBias {
		return fmt.Errorf("decoder spec: MLP biases are not supported with a mixture of experts")
	}
	return nil
}

// Sparse reports whether layer l's feed-forward is a mixture of experts.
func (s *Spec) Sparse(l int) bool { return s.MoE != nil && s.MoE.Sparse[l] }

// dense reports whether some layer has the dense MLP.
func (s *Spec) dense() bool {
	return s.MoE == nil || slices.Contains(s.MoE.Sparse, false)
}

func (s *Spec) moeShape(r Role) program.Shape {
	switch r {
	case Router:
		return program.Shape{s.MoE.Experts, s.Hidden}
	case ExpertGate, ExpertUp:
		return program.Shape{s.MoE.FFN, s.Hidden}
	case ExpertDown:
		return program.Shape{s.Hidden, s.MoE.FFN}
	}
	return nil
}

// LayerWeights lists the weights layer l reads, in program order: LayerRoles, where a
// sparse layer has the router and each expert's gate, up and down (expert by expert, so
// that one expert's weights lie together) instead of the dense MLP.
func (s *Spec) LayerWeights(l int) []Weight {
	var w []Weight
	for _, r := range s.LayerRoles() {
		if s.Sparse(l) && isDenseMLP(r) {
			continue
		}
		wt := Weight{Name: s.Names.Layer(l, r), Role: r, Layer: l, Shape: s.Shape(r)}
		for _, p := range parts(r) {
			wt.Parts = append(wt.Parts, Weight{Name: s.Names.Layer(l, p), Role: p, Layer: l, Shape: s.Shape(p)})
		}
		w = append(w, wt)
	}
	if !s.Sparse(l) {
		return w
	}
	w = append(w, Weight{Name: s.Names.Layer(l, Router), Role: Router, Layer: l, Shape: s.Shape(Router)})
	for e := range s.MoE.Experts {
		for _, r := range []Role{ExpertGate, ExpertUp, ExpertDown} {
			w = append(w, Weight{Name: s.Names.Expert(l, e, r), Role: r, Layer: l, Shape: s.Shape(r)})
		}
	}
	return w
}

func isDenseMLP(r Role) bool {
	switch r {
	case Gate, Up, Down, GateUp, GateBias, UpBias, DownBias:
		return true
	}
	return false
}

// moeOp appends layer l's mixture-of-experts op: x (the normalized stream) → a.
func (s *Spec) moeOp(ops *[]program.Op, x string, l int) {
	in := []string{x, s.Names.Layer(l, Router)}
	for _, r := range []Role{ExpertGate, ExpertUp, ExpertDown} {
		for e := range s.MoE.Experts {
			in = append(in, s.Names.Expert(l, e, r))
		}
	}
	*ops = append(*ops, program.Op{Kind: program.OpMoE, In: in, Out: []string{"a"},
		Attr: program.Attr{TopK: s.MoE.TopK, NormTopK: s.MoE.NormTopK, Activation: s.Activation}})
}
