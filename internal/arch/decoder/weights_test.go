package decoder

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/program"
)

// fusedSpec is a valid two-layer spec whose checkpoint fuses q/k/v and gate/up (Phi-3) and
// rotates 3/4 of each head (Phi-4-mini).
func fusedSpec() *Spec {
	rope := RoPE{InvFreq: make([]float64, 6), AttentionFactor: 1}
	return &Spec{
		Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 48, Vocab: 100,
		NormEps: 1e-5, Activation: program.ActSiLU, EmbedScale: 1, AttnScale: 0.25,
		FusedQKV: true, FusedGateUp: true, RotaryDim: 12,
		LayerTypes: []program.LayerType{program.LayerFull, program.LayerFull},
		RoPE:       map[program.LayerType]RoPE{program.LayerFull: rope},
		Names: TransformersNames(map[Role]string{
			QKV: "self_attn.qkv_proj.weight", GateUp: "mlp.gate_up_proj.weight",
		}),
	}
}

// A fused checkpoint matrix is listed once, with the graph's tensors cut from its rows.
func TestWeightsCutFusedMatricesIntoTheGraphsRoles(t *testing.T) {
	s := fusedSpec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	type part struct {
		Name  string
		Shape program.Shape
	}
	type weight struct {
		Name  string
		Shape program.Shape
		Parts []part
	}
	var got []weight
	for _, w := range s.Weights() {
		if w.Layer != 1 {
			continue
		}
		g := weight{Name: w.Name, Shape: w.Shape}
		rows := 0
		for _, p := range w.Parts {
			g.Parts = append(g.Parts, part{p.Name, p.Shape})
			rows += p.Shape[0]
			if p.Shape[1] != w.Shape[1] {
				t.Errorf("%s: part %s has %d columns, the fused matrix %d", w.Name, p.Name, p.Shape[1], w.Shape[1])
			}
		}
		if len(w.Parts) > 0 && rows != w.Shape[0] {
			t.Errorf("%s: parts have %d rows, the fused matrix %d", w.Name, rows, w.Shape[0])
		}
		got = append(got, g)
	}
	l := func(n string) string { return fmt.Sprintf("model.layers.1.%s", n) }
	want := []weight{
		{Name: l("input_layernorm.weight"), Shape: program.Shape{32}},
		{Name: l("self_attn.qkv_proj.weight"), Shape: program.Shape{64 + 2*32, 32}, Parts: []part{
			{l("self_attn.q_proj.weight"), program.Shape{64, 32}},
			{l("self_attn.k_proj.weight"), program.Shape{32, 32}},
			{l("self_attn.v_proj.weight"), program.Shape{32, 32}}}},
		{Name: l("self_attn.o_proj.weight"), Shape: program.Shape{32, 64}},
		{Name: l("post_attention_layernorm.weight"), Shape: program.Shape{32}},
		{Name: l("mlp.gate_up_proj.weight"), Shape: program.Shape{96, 32}, Parts: []part{
			{l("mlp.gate_proj.weight"), program.Shape{48, 32}},
			{l("mlp.up_proj.weight"), program.Shape{48, 32}}}},
		{Name: l("mlp.down_proj.weight"), Shape: program.Shape{32, 48}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer 1 weights (-want +got):\n%s", diff)
	}
}

// Partial rotary: the tables have RotaryDim/2 columns and the spec insists on as many
// frequencies.
func TestRotaryDimSetsTheTableWidth(t *testing.T) {
	s := fusedSpec()
	cos, sin := s.RoPETables(program.LayerFull, 5)
	if len(cos) != 5*6 || len(sin) != 5*6 {
		t.Errorf("tables hold %d and %d values, want 5 positions × 6", len(cos), len(sin))
	}
	for _, tc := range []struct {
		name   string
		rotary int
		freqs  int
	}{{"odd rotary dim", 11, 6}, {"rotary dim beyond head_dim", 18, 9}, {"frequencies for the whole head", 12, 8}} {
		t.Run(tc.name, func(t *testing.T) {
			s := fusedSpec()
			s.RotaryDim = tc.rotary
			s.RoPE[program.LayerFull] = RoPE{InvFreq: make([]float64, tc.freqs), AttentionFactor: 1}
			if err := s.Validate(); err == nil {
				t.Errorf("rotary dim %d with %d frequencies validated", tc.rotary, tc.freqs)
			}
		})
	}
}
