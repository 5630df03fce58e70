// Package decoder builds the fixed-shape step graph of a decoder-only transformer (Llama,
// Mistral, Qwen2/3, Gemma 2/3, Phi-3, SmolLM3, Granite; OLMo 2's post-norm layers) from a
// validated, architecture-neutral Spec.
//
// Architecture packages translate their Hugging Face config into a Spec; this package turns
// a Spec into program ops, tensor names and RoPE tables. It also holds the config rules that
// several families share: which layers slide (LayerTypes), RoPE scaling (NewRoPE), and
// absent-versus-null config fields (Opt). It knows nothing about files, kernels or runner
// policy.
package decoder

import (
	"fmt"

	"github.com/hfstatic/hfstatic/program"
)

// Spec is everything the graph depends on. All fields are required unless marked optional;
// Validate names the first bad one.
type Spec struct {
	Hidden, Layers, Heads, KVHeads, HeadDim, FFN, Vocab int
	NormEps                                             float32
	// NormOffset is added to every RMSNorm weight at export (Gemma's (1+w)); optional.
	NormOffset float32
	// Activation of the gated MLP: program.ActSiLU or program.ActGELUTanh.
	Activation string
	// QKNorm applies per-head RMSNorm to q and k before RoPE (Qwen3, Gemma 3).
	QKNorm bool
	// QKNormWhole makes QKNorm normalize each projection over its whole width
	// (heads*head_dim, kv_heads*head_dim) instead of per head (OLMo 2); optional.
	QKNormWhole bool
	// QKVBias and OBias, MLPBias: linear biases.
	QKVBias, OBias, MLPBias bool
	// SandwichNorms adds post-attention and post-feed-forward norms (Gemma 2/3).
	SandwichNorms bool
	// NoPreNorms drops the norms before attention and the MLP, leaving SandwichNorms'
	// post-norms only: the sublayers read the residual stream itself (OLMo 2); optional.
	NoPreNorms bool
	// FusedQKV: the checkpoint stores q, k and v as one matrix (role QKV, rows q then k then
	// v; Phi-3) and FusedGateUp gate and up as one (role GateUp, rows gate then up). The
	// exporter cuts them into the Q, K, V, Gate and Up the graph reads (Weight.Parts).
	FusedQKV, FusedGateUp bool
	// RotaryDim is how many leading dims of each head RoPE rotates (Phi-4-mini's
	// partial_rotary_factor 0.75: 3/4 of head_dim); optional: 0 rotates all HeadDim.
	RotaryDim int
	// EmbedScale multiplies embeddings (1 for none).
	EmbedScale float32
	// AttnScale multiplies attention scores (usually 1/sqrt(HeadDim)).
	AttnScale float32
	// AttnSoftCap and FinalSoftCap are tanh soft-caps (0: none); optional.
	AttnSoftCap, FinalSoftCap float32
	// ResidualScale multiplies each sublayer's output before the residual add, and
	// LogitScale multiplies the logits (Granite's residual_multiplier and 1/logits_scaling);
	// optional, 0: none.
	ResidualScale, LogitScale float32
	// Tied output projection reuses the embedding table.
	Tied bool
	// LayerTypes has one entry per layer; Window > 0 iff some layer slides.
	LayerTypes []program.LayerType
	Window     int
	// RoPE gives the rotary tables per layer type.
	RoPE map[program.LayerType]RoPE
	// NoPE, if set, has one entry per layer: true where the layer applies no rotary
	// embedding (SmolLM3's no_rope_layers zeros); optional, nil: every layer rotates.
	NoPE []bool
	// Names maps roles to checkpoint tensor names.
	Names Names
	// MoE, if set, makes the feed-forward of the layers it marks a mixture of experts
	// (Qwen3-MoE, Mixtral). Optional.
	MoE *MoE
	// Layouts, if set, are where a checkpoint may keep the tensors of Names (multimodal
	// folders keep the text model under a prefix, Gemma 3's in two ways): the exporter reads
	// through the first layout under which the checkpoint has Names.Embed, and the program
	// keeps the names of Names. Optional: nil reads Names as they are.
	Layouts []Layout
}

// RoPE describes a rotary embedding: per-frequency inverse frequencies (len Rotary()/2) and
// an attention factor multiplying cos and sin (1 for none).
type RoPE struct {
	InvFreq         []float64
	AttentionFactor float64
	// LongInvFreq, if set, replaces InvFreq in programs whose context exceeds LongAbove
	// (longrope's long factors beyond original_max_position_embeddings); optional.
	LongInvFreq []float64
	LongAbove   int
}

// Freqs returns the inverse frequencies a program of the given context uses.
func (r RoPE) Freqs(context int) []float64 {
	if r.LongInvFreq != nil && context > r.LongAbove {
		return r.LongInvFreq
	}
	return r.InvFreq
}

// Validate checks the spec's invariants.
func (s *Spec) Validate() error {
	pos := []struct {
		name string
		v    int
	}{{"hidden", s.Hidden}, {"layers", s.Layers}, {"heads", s.Heads}, {"kv_heads", s.KVHeads},
		{"head_dim", s.HeadDim}, {"ffn", s.FFN}, {"vocab", s.Vocab}}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("decoder spec: %s = %d, must be > 0", p.name, p.v)
		}
	}
	if s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("decoder spec: heads %d is not a multiple of kv_heads %d", s.Heads, s.KVHeads)
	}
	if s.HeadDim%2 != 0 {
		return fmt.Errorf("decoder spec: head_dim %d must be even for RoPE", s.HeadDim)
	}
	if s.RotaryDim < 0 || s.RotaryDim%2 != 0 || s.RotaryDim > s.HeadDim {
		return fmt.Errorf("decoder spec: rotary dim %d must be even and in [0, head_dim %d]", s.RotaryDim, s.HeadDim)
	}
	if (s.FusedQKV && s.QKVBias) || (s.FusedGateUp && s.MLPBias) {
		return fmt.Errorf("decoder spec: fused q/k/v or gate/up matrices with biases are not supported")
	}
	if s.NormEps <= 0 || s.EmbedScale == 0 || s.AttnScale <= 0 {
		return fmt.Errorf("decoder spec: norm eps %g, embed scale %g and attention scale %g must be > 0", s.NormEps, s.EmbedScale, s.AttnScale)
	}
	if s.Activation != program.ActSiLU && s.Activation != program.ActGELUTanh {
		return fmt.Errorf("decoder spec: activation %q unsupported", s.Activation)
	}
	if s.NoPreNorms && !s.SandwichNorms {
		return fmt.Errorf("decoder spec: no_pre_norms needs sandwich norms (a layer without any norm)")
	}
	if s.QKNormWhole && !s.QKNorm {
		return fmt.Errorf("decoder spec: whole-width q/k norm needs q/k norm")
	}
	if s.ResidualScale < 0 || s.LogitScale < 0 {
		return fmt.Errorf("decoder spec: residual scale %g and logit scale %g must be > 0 (0: none)", s.ResidualScale, s.LogitScale)
	}
	if s.NoPE != nil && len(s.NoPE) != s.Layers {
		return fmt.Errorf("decoder spec: %d no-RoPE flags for %d layers", len(s.NoPE), s.Layers)
	}
	if len(s.LayerTypes) != s.Layers {
		return fmt.Errorf("decoder spec: %d layer types for %d layers", len(s.LayerTypes), s.Layers)
	}
	sliding := false
	for i, t := range s.LayerTypes {
		r, ok := s.RoPE[t]
		if !ok {
			return fmt.Errorf("decoder spec: layer %d type %q has no RoPE table", i, t)
		}
		if len(r.InvFreq) != s.Rotary()/2 || (r.LongInvFreq != nil && len(r.LongInvFreq) != s.Rotary()/2) {
			return fmt.Errorf("decoder spec: RoPE for %q has %d (long: %d) frequencies, want %d", t, len(r.InvFreq), len(r.LongInvFreq), s.Rotary()/2)
		}
		switch t {
		case program.LayerFull:
		case program.LayerSliding:
			sliding = true
		default:
			return fmt.Errorf("decoder spec: layer %d has unknown type %q", i, t)
		}
	}
	if sliding != (s.Window > 0) {
		return fmt.Errorf("decoder spec: sliding window %d inconsistent with layer types", s.Window)
	}
	if s.Names.Layer == nil {
		return fmt.Errorf("decoder spec: no tensor names")
	}
	return s.validateMoE()
}

// RoPETableNames returns the program tensor names of a layer type's cos and sin tables.
func RoPETableNames(t program.LayerType) (cos, sin string) {
	return "rope." + string(t) + ".cos", "rope." + string(t) + ".sin"
}

// Rotary is the number of leading dims of each head that RoPE rotates: RotaryDim, or
// HeadDim when RotaryDim is 0.
func (s *Spec) Rotary() int {
	if s.RotaryDim == 0 {
		return s.HeadDim
	}
	return s.RotaryDim
}

// RoPETables computes the [C, Rotary()/2] cos and sin tables of a layer type.
func (s *Spec) RoPETables(t program.LayerType, context int) (cos, sin []float32) {
	r := s.RoPE[t]
	inv := r.Freqs(context)
	half := s.Rotary() / 2
	cos = make([]float32, context*half)
	sin = make([]float32, context*half)
	for p := 0; p < context; p++ {
		for j := 0; j < half; j++ {
			// float32 angle as HF and llama.cpp compute it.
			ang := float64(float32(p) * float32(inv[j]))
			cos[p*half+j] = float32(cosf(ang) * r.AttentionFactor)
			sin[p*half+j] = float32(sinf(ang) * r.AttentionFactor)
		}
	}
	return cos, sin
}
