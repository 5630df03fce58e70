package decoder

import (
	"fmt"

	"github.com/hfstatic/hfstatic/internal/arch/head"
	"github.com/hfstatic/hfstatic/program"
)

// EncodeMethod builds the encode method of an hf_encode program (docs/contract.md, section
// 10) from the decoder: its layers over md.Encoder.Batch sequences of md.MaxContext tokens,
// with causal self-attention over each sequence's own tokens in place of the cached
// attention (no caches, no counters; RoPE at each token's index in its sequence), then the
// final norm and h, the head (Qwen3-Embedding's last-token pooling and normalization, or
// Qwen3-Reranker's yes/no score).
func (s *Spec) EncodeMethod(md *program.Metadata, h *head.Head) (program.Method, error) {
	if md.Encoder == nil {
		return program.Method{}, fmt.Errorf("decoder: encode method without encoder metadata")
	}
	B, S := md.Encoder.Batch, md.MaxContext
	if s.Window > 0 && S > s.Window {
		return program.Method{}, fmt.Errorf("decoder: sliding-window layers (window %d) in an encode method of %d tokens per sequence: keep the sequences within the window", s.Window, S)
	}
	if s.AttnSoftCap > 0 {
		return program.Method{}, fmt.Errorf("decoder: attention soft-capping is not supported in encode methods")
	}
	in, out, err := program.EncodeIO(md)
	if err != nil {
		return program.Method{}, err
	}
	m := program.Method{Name: program.MethodEncode, Step: B * S, Inputs: in, Outputs: out}
	g := s.graph(&m, B*S)
	g.layers(func(l int, t program.LayerType) {
		cosT, sinT := RoPETableNames(t)
		if s.NoPE == nil || !s.NoPE[l] {
			g.add(program.OpRoPE, []string{"q", cosT, sinT}, "q", program.Attr{HeadDim: s.HeadDim})
			g.add(program.OpRoPE, []string{"k", cosT, sinT}, "k", program.Attr{HeadDim: s.HeadDim})
		}
		g.add(program.OpSelfAttention, []string{"q", "k", "v", program.AttentionMask}, "o",
			program.Attr{Heads: s.Heads, KVHeads: s.KVHeads, HeadDim: s.HeadDim, VHeadDim: s.HeadDim,
				Scale: s.AttnScale, Causal: true})
	}, nil)
	g.norm("x", "x", s.Names.FinalNorm, s.Hidden)
	ops, acts, err := h.Ops("x", s.Hidden, B)
	if err != nil {
		return program.Method{}, err
	}
	m.Ops = append(m.Ops, ops...)
	m.Activations = append(m.Activations, acts...)
	return m, nil
}
