package hf

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/internal/safetensors"
	"github.com/hfstatic/hfstatic/internal/testckpt"
)

func TestOpenRandomFixtures(t *testing.T) {
	tests := []struct {
		name      string
		arch      string
		dtype     string
		bos       *int
		eos       []int
		pad       *int
		lmHead    bool
		qNormRows int // length of model.layers.0.self_attn.q_norm.weight, 0 if absent
	}{
		{"llama", "LlamaForCausalLM", "float32", ptr(128000), []int{128001}, nil, false, 0},
		{"llama-bf16", "LlamaForCausalLM", "bfloat16", ptr(128000), []int{128001}, nil, false, 0},
		{"qwen3", "Qwen3ForCausalLM", "float32", ptr(151643), []int{151645}, nil, false, 32},
		{"qwen2", "Qwen2ForCausalLM", "float32", ptr(151643), []int{151645}, nil, false, 0},
		{"mistral", "MistralForCausalLM", "float32", ptr(1), []int{2}, nil, true, 0},
		{"gemma3", "Gemma3ForCausalLM", "float32", ptr(2), []int{1}, ptr(0), false, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, err := testckpt.Random(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Open(fsys)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Config.Architectures[0] != tt.arch || c.Config.TorchDType != tt.dtype {
				t.Errorf("config: %v %q, want %s %q", c.Config.Architectures, c.Config.TorchDType, tt.arch, tt.dtype)
			}
			g := c.Generation
			if !cmp.Equal(g.BOSID, tt.bos) || !cmp.Equal(g.EOSIDs, tt.eos) || !cmp.Equal(g.PadID, tt.pad) {
				t.Errorf("generation ids bos %v eos %v pad %v, want %v %v %v", g.BOSID, g.EOSIDs, g.PadID, tt.bos, tt.eos, tt.pad)
			}
			if _, ok := c.Tensor("lm_head.weight"); ok != tt.lmHead {
				t.Errorf("lm_head.weight present = %v, want %v", ok, tt.lmHead)
			}
			qn, ok := c.Tensor("model.layers.0.self_attn.q_norm.weight")
			if tt.qNormRows == 0 && ok || tt.qNormRows != 0 && (!ok || qn.Shape[0] != tt.qNormRows) {
				t.Errorf("q_norm = %+v, %v; want %d rows", qn, ok, tt.qNormRows)
			}
			spec, err := testckpt.FixtureSpec(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Names()) != len(spec.Tensors) {
				t.Errorf("%d tensors, spec has %d", len(c.Names()), len(spec.Tensors))
			}
			norm := spec.Tensors[len(spec.Tensors)-1]
			if tt.lmHead {
				norm = spec.Tensors[len(spec.Tensors)-2]
			}
			v, shape, err := c.Float32(norm.Name)
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(shape, norm.Shape) || v[3] != roundAs(tt.dtype, norm.Value(3)) {
				t.Errorf("%s: shape %v, [3] = %v; want %v, %v", norm.Name, shape, v[3], norm.Shape, norm.Value(3))
			}
		})
	}
}

// roundAs rounds v as a checkpoint of that torch_dtype stores it.
func roundAs(torchDType string, v float32) float32 {
	if torchDType != "bfloat16" {
		return v
	}
	bits := safetensors.BFloat16(v)
	out := make([]float32, 1)
	_ = safetensors.DecodeFloat32(out, []byte{byte(bits), byte(bits >> 8)}, safetensors.BF16)
	return out[0]
}
