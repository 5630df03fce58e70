package llama

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/internal/arch/decoder"
)

func TestMixtureOfExpertsFollowsTransformers(t *testing.T) {
	tests := []struct {
		name, arch string
		extra      []string
		want       *decoder.MoE // nil: a dense model
		window     int
	}{
		{"qwen3-moe defaults", "Qwen3MoeForCausalLM", nil,
			&decoder.MoE{Experts: 128, TopK: 8, FFN: 768, Sparse: []bool{true, true, true, true}}, 0},
		{"qwen3-moe sparse step and mlp_only_layers", "Qwen3MoeForCausalLM",
			[]string{`"num_experts": 16`, `"num_experts_per_tok": 4`, `"moe_intermediate_size": 32`, `"norm_topk_prob": true`,
				`"decoder_sparse_step": 2`, `"mlp_only_layers": [3]`},
			&decoder.MoE{Experts: 16, TopK: 4, FFN: 32, NormTopK: true, Sparse: []bool{false, true, false, false}}, 0},
		{"qwen3-moe without experts is dense", "Qwen3MoeForCausalLM", []string{`"num_experts": 0`}, nil, 0},
		{"qwen3-moe window only when used", "Qwen3MoeForCausalLM", []string{`"sliding_window": 16`},
			&decoder.MoE{Experts: 128, TopK: 8, FFN: 768, Sparse: []bool{true, true, true, true}}, 0},
		{"qwen3-moe window when used slides every layer", "Qwen3MoeForCausalLM", []string{`"sliding_window": 16`, `"use_sliding_window": true`},
			&decoder.MoE{Experts: 128, TopK: 8, FFN: 768, Sparse: []bool{true, true, true, true}}, 16},
		{"mixtral defaults", "MixtralForCausalLM", nil,
			&decoder.MoE{Experts: 8, TopK: 2, FFN: 128, NormTopK: true, Sparse: []bool{true, true, true, true}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := variant(t, tc.arch).Spec(config(tc.extra...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.MoE); diff != "" {
				t.Errorf("MoE (-want +got):\n%s", diff)
			}
			if s.Window != tc.window {
				t.Errorf("window %d, want %d", s.Window, tc.window)
			}
		})
	}
}

func TestMixtureOfExpertsWeightNames(t *testing.T) {
	for _, tc := range []struct{ arch, router, gate, up, down string }{
		{"Qwen3MoeForCausalLM", "model.layers.1.mlp.gate.weight", "model.layers.1.mlp.experts.7.gate_proj.weight",
			"model.layers.1.mlp.experts.7.up_proj.weight", "model.layers.1.mlp.experts.7.down_proj.weight"},
		{"MixtralForCausalLM", "model.layers.1.block_sparse_moe.gate.weight", "model.layers.1.block_sparse_moe.experts.7.w1.weight",
			"model.layers.1.block_sparse_moe.experts.7.w3.weight", "model.layers.1.block_sparse_moe.experts.7.w2.weight"},
	} {
		s, _, err := variant(t, tc.arch).Spec(config())
		if err != nil {
			t.Fatal(err)
		}
		got := []string{s.Names.Layer(1, decoder.Router), s.Names.Expert(1, 7, decoder.ExpertGate),
			s.Names.Expert(1, 7, decoder.ExpertUp), s.Names.Expert(1, 7, decoder.ExpertDown)}
		if diff := cmp.Diff([]string{tc.router, tc.gate, tc.up, tc.down}, got); diff != "" {
			t.Errorf("%s names (-want +got):\n%s", tc.arch, diff)
		}
		for _, w := range s.LayerWeights(1) {
			if w.Role == decoder.Gate || w.Role == decoder.Up || w.Role == decoder.Down {
				t.Errorf("%s: sparse layer reads the dense MLP weight %s", tc.arch, w.Name)
			}
		}
	}
}

func TestMixtureOfExpertsRejectsBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		arch, extra, field string
	}{
		{"Qwen3MoeForCausalLM", `"num_experts": 4, "num_experts_per_tok": 8`, "num_experts_per_tok"},
		{"Qwen3MoeForCausalLM", `"num_experts_per_tok": 0`, "num_experts_per_tok"},
		{"Qwen3MoeForCausalLM", `"num_experts": -1`, "num_experts"},
		{"Qwen3MoeForCausalLM", `"decoder_sparse_step": 0`, "decoder_sparse_step"},
		{"Qwen3MoeForCausalLM", `"mlp_only_layers": [4]`, "mlp_only_layers"},
		{"Qwen3MoeForCausalLM", `"moe_intermediate_size": 0`, "moe_intermediate_size"},
		{"MixtralForCausalLM", `"num_local_experts": 2, "num_experts_per_tok": 3`, "num_experts_per_tok"},
		{"MixtralForCausalLM", `"num_local_experts": 0`, "num_local_experts"},
	} {
		_, _, err := variant(t, tc.arch).Spec(config(tc.extra))
		var fe *decoder.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s with %s: error %v, want a *decoder.FieldError naming %s", tc.arch, tc.extra, err, tc.field)
		}
	}
}
