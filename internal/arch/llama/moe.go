package llama

import (
	"fmt"
	"slices"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
)

// experts says how a variant's config describes its mixture of experts.
type experts int

const (
	noExperts       experts = iota
	qwen3MoeExperts         // num_experts, moe_intermediate_size, norm_topk_prob, decoder_sparse_step, mlp_only_layers
	mixtralExperts          // num_local_experts over every layer, intermediate_size, always renormalized
)

// moeConfig holds the config.json fields of the mixture-of-experts variants.
type moeConfig struct {
	NumExperts          *int  `json:"num_experts"`       // Qwen3-MoE
	NumLocalExperts     *int  `json:"num_local_experts"` // Mixtral
	NumExpertsPerTok    *int  `json:"num_experts_per_tok"`
	MoeIntermediateSize *int  `json:"moe_intermediate_size"`
	NormTopKProb        *bool `json:"norm_topk_prob"`
	DecoderSparseStep   *int  `json:"decoder_sparse_step"`
	MLPOnlyLayers       []int `json:"mlp_only_layers"`
}

func or[T any](p *T, def T) T {
	if p != nil {
		return *p
	}
	return def
}

// moe returns the mixture of experts of a config, or nil for a dense model, with
// transformers' defaults (Qwen3MoeConfig, MixtralConfig) for absent fields.
func (v Variant) moe(c *rawConfig) (*decoder.MoE, error) {
	bad := func(field string, val any, want string) error {
		return &decoder.FieldError{Class: v.Class, Field: field, Problem: fmt.Sprintf("= %v, %s", val, want)}
	}
	m := &decoder.MoE{Sparse: make([]bool, c.NumHiddenLayers)}
	expertsField := "num_experts"
	switch v.Experts {
	case noExperts:
		return nil, nil
	case qwen3MoeExperts:
		m.Experts = or(c.NumExperts, 128)
		m.TopK = or(c.NumExpertsPerTok, 8)
		m.FFN = or(c.MoeIntermediateSize, 768)
		m.NormTopK = or(c.NormTopKProb, false)
		step := or(c.DecoderSparseStep, 1)
		if step <= 0 {
			return nil, bad("decoder_sparse_step", step, "must be > 0")
		}
		for _, l := range c.MLPOnlyLayers {
			if l < 0 || l >= c.NumHiddenLayers {
				return nil, bad("mlp_only_layers", c.MLPOnlyLayers, fmt.Sprintf("holds %d, not a layer of num_hidden_layers %d", l, c.NumHiddenLayers))
			}
		}
		if m.Experts == 0 {
			return nil, nil // transformers builds dense layers only
		}
		for l := range m.Sparse {
			m.Sparse[l] = !slices.Contains(c.MLPOnlyLayers, l) && (l+1)%step == 0
		}
		if !slices.Contains(m.Sparse, true) {
			return nil, nil
		}
		if m.FFN <= 0 {
			return nil, bad("moe_intermediate_size", m.FFN, "must be > 0")
		}
	case mixtralExperts:
		expertsField = "num_local_experts"
		m.Experts = or(c.NumLocalExperts, 8)
		m.TopK = or(c.NumExpertsPerTok, 2)
		m.FFN = c.IntermediateSize
		m.NormTopK = true // softmax over the top-k logits = top-k of the softmax, renormalized
		for l := range m.Sparse {
			m.Sparse[l] = true
		}
	}
	if m.Experts <= 0 {
		return nil, bad(expertsField, m.Experts, "must be > 0")
	}
	if m.TopK <= 0 || m.TopK > m.Experts {
		return nil, bad("num_experts_per_tok", m.TopK, fmt.Sprintf("must be in [1, %s = %d]", expertsField, m.Experts))
	}
	return m, nil
}

// moeNames adds the router and expert names of a mixture-of-experts variant to the
// family's names: Qwen3-MoE keeps them under mlp (gate, experts.E.gate_proj/up_proj/
// down_proj), Mixtral under block_sparse_moe (gate, experts.E.w1/w3/w2).
func (v Variant) moeNames() decoder.Names {
	n := Names
	prefix, kinds := "mlp", map[decoder.Role]string{
		decoder.ExpertGate: "gate_proj", decoder.ExpertUp: "up_proj", decoder.ExpertDown: "down_proj"}
	if v.Experts == mixtralExperts {
		prefix, kinds = "block_sparse_moe", map[decoder.Role]string{
			decoder.ExpertGate: "w1", decoder.ExpertUp: "w3", decoder.ExpertDown: "w2"}
	}
	layer := n.Layer
	n.Layer = func(l int, r decoder.Role) string {
		if r == decoder.Router {
			return fmt.Sprintf("model.layers.%d.%s.gate.weight", l, prefix)
		}
		return layer(l, r)
	}
	n.Expert = func(l, e int, r decoder.Role) string {
		return fmt.Sprintf("model.layers.%d.%s.experts.%d.%s.weight", l, prefix, e, kinds[r])
	}
	return n
}
