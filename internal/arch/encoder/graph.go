package encoder

import (
	"fmt"
	"math"

	"github.com/hfstatic/hfstatic/internal/arch/head"
	"github.com/hfstatic/hfstatic/program"
)

// Method builds the encode method of an hf_encode program (docs/contract.md, section 10) for
// md.Encoder.Batch sequences of md.MaxContext tokens: the embeddings (words, token types,
// positions, LayerNorm), the post-norm layers with bidirectional self-attention over each
// sequence's tokens, then h, the head.
func (s *Spec) Method(md *program.Metadata, h *head.Head) (program.Method, error) {
	if md.Encoder == nil {
		return program.Method{}, fmt.Errorf("encoder: encode method without encoder metadata")
	}
	B, S := md.Encoder.Batch, md.MaxContext
	if S > s.MaxTokens() {
		return program.Method{}, fmt.Errorf("encoder: %d tokens per sequence, the position table covers %d", S, s.MaxTokens())
	}
	in, out, err := program.EncodeIO(md)
	if err != nil {
		return program.Method{}, err
	}
	R, D := B*S, s.Hidden
	m := program.Method{Name: program.MethodEncode, Step: R, Inputs: in, Outputs: out}
	act := func(name string, width int) program.IO {
		return program.IO{Name: name, DType: program.F32, Shape: program.Shape{R, width}}
	}
	m.Activations = []program.IO{act("x", D), act("h", D), act("q", D), act("k", D), act("v", D), act("o", D), act("g", s.FFN)}
	add := func(kind program.OpKind, in []string, out string, attr program.Attr) {
		m.Ops = append(m.Ops, program.Op{Kind: kind, In: in, Out: []string{out}, Attr: attr})
	}
	n := s.Names
	norm := func(x, w, b string) {
		add(program.OpLayerNorm, []string{x, w, b}, x, program.Attr{Width: D, Eps: s.NormEps})
	}
	linear := func(x, y string, l int, w, b Role) {
		add(program.OpLinear, []string{x, n.Layer(l, w), n.Layer(l, b)}, y, program.Attr{})
	}
	add(program.OpEmbed, []string{program.InputIDs, n.Embed}, "x", program.Attr{Scale: 1})
	add(program.OpEmbed, []string{program.TokenTypeIDs, n.TokenType}, "h", program.Attr{Scale: 1})
	add(program.OpAdd, []string{"x", "h"}, "x", program.Attr{})
	add(program.OpPositionEmbed, []string{"x", n.Position}, "x", program.Attr{})
	norm("x", n.EmbedNorm, n.EmbedNormBias)
	for l := range s.Layers {
		linear("x", "q", l, Q, QBias)
		linear("x", "k", l, K, KBias)
		linear("x", "v", l, V, VBias)
		add(program.OpSelfAttention, []string{"q", "k", "v", program.AttentionMask}, "o",
			program.Attr{Heads: s.Heads, KVHeads: s.Heads, HeadDim: s.HeadDim, VHeadDim: s.HeadDim, Scale: attnScale(s.HeadDim)})
		linear("o", "h", l, O, OBias)
		add(program.OpAdd, []string{"h", "x"}, "x", program.Attr{})
		norm("x", n.Layer(l, AttnNorm), n.Layer(l, AttnNormBias))
		linear("x", "g", l, Up, UpBias)
		add(program.OpActivation, []string{"g"}, "g", program.Attr{Activation: s.Activation})
		linear("g", "h", l, Down, DownBias)
		add(program.OpAdd, []string{"h", "x"}, "x", program.Attr{})
		norm("x", n.Layer(l, FFNNorm), n.Layer(l, FFNNormBias))
	}
	ops, acts, err := h.Ops("x", D, B)
	if err != nil {
		return program.Method{}, err
	}
	m.Ops = append(m.Ops, ops...)
	m.Activations = append(m.Activations, acts...)
	return m, nil
}

// ClassifierHead is the head of a ForSequenceClassification class: the first token, a dense
// layer with tanh, the output projection.
func (s *Spec) ClassifierHead() *head.Head {
	c := s.Classifier
	return &head.Head{Pooling: program.PoolCLS, Output: program.OutputScore, Linears: []head.Linear{
		{Weight: c.Dense, Bias: c.DenseBias, In: s.Hidden, Out: s.Hidden, Activation: program.ActTanh},
		{Weight: c.Out, Bias: c.OutBias, In: s.Hidden, Out: c.Labels},
	}}
}

// attnScale is 1/√head_dim in float32, as transformers computes it
// (math.sqrt(attention_head_size) in float64, then the division in float32 scores).
func attnScale(headDim int) float32 { return float32(1 / math.Sqrt(float64(headDim))) }
