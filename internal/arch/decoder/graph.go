package decoder

import (
	"fmt"
	"math"
	"slices"

	"github.com/hfstatic/hfstatic/program"
)

func cosf(x float64) float64 { return math.Cos(x) }
func sinf(x float64) float64 { return math.Sin(x) }

// CacheRows is L_l for a layer of type t in a program of context c and the given layout.
func (s *Spec) CacheRows(t program.LayerType, c int, layout program.SlidingLayout) int {
	if t == program.LayerSliding && layout == program.LayoutRing {
		return min(s.Window, c)
	}
	return c
}

// MetadataLayers returns the per-layer cache metadata.
func (s *Spec) MetadataLayers(c int, layout program.SlidingLayout) []program.Layer {
	out := make([]program.Layer, s.Layers)
	for l, t := range s.LayerTypes {
		out[l] = program.Layer{Type: t, KVHeads: s.KVHeads, KHeadDim: s.HeadDim, VHeadDim: s.HeadDim,
			CacheRows: s.CacheRows(t, c, layout)}
	}
	return out
}

// Method builds one fixed-shape method of step rows for a program with metadata md (its
// context, cache dtype and per-layer caches, from Metadata); its I/O is the hf_static
// contract's (program.MethodIO).
func (s *Spec) Method(md *program.Metadata, name string, step int, logits program.LogitsRows) program.Method {
	D, S := s.Hidden, step
	qw, kvw := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	act := func(name string, width int) program.IO {
		return program.IO{Name: name, DType: program.F32, Shape: program.Shape{S, width}}
	}
	m := program.Method{Name: name, Step: S, Logits: logits}
	m.Inputs, m.Outputs = program.MethodIO(md, S, logits)
	m.Activations = []program.IO{act("x", D), act("h", D), act("q", qw), act("k", kvw), act("v", kvw),
		act("o", qw), act("a", D)}
	if s.dense() {
		m.Activations = append(m.Activations, act("g", s.FFN), act("u", s.FFN))
	}
	if s.NoPreNorms {
		m.Activations = slices.Delete(m.Activations, 1, 2) // no normalized copy h of x
	}

	ops := &m.Ops
	add := func(kind program.OpKind, in, out []string, attr program.Attr) {
		*ops = append(*ops, program.Op{Kind: kind, In: in, Out: out, Attr: attr})
	}
	linear := func(x, y string, l int, w, b Role, use bool) {
		in := []string{x, s.Names.Layer(l, w)}
		if use {
			in = append(in, s.Names.Layer(l, b))
		}
		add(program.OpLinear, in, []string{y}, program.Attr{})
	}
	norm := func(x, y, w string, width int) {
		add(program.OpRMSNorm, []string{x, w}, []string{y}, program.Attr{Width: width, Eps: s.NormEps})
	}

	// residual adds a sublayer's output a to the stream x, scaled first where the spec says.
	residual := func(l int, post Role) {
		if s.SandwichNorms {
			norm("a", "a", s.Names.Layer(l, post), D)
		}
		if s.ResidualScale != 0 {
			add(program.OpScale, []string{"a"}, []string{"a"}, program.Attr{Scale: s.ResidualScale})
		}
		add(program.OpAdd, []string{"x", "a"}, []string{"x"}, program.Attr{})
	}
	// sublayerInput is what a sublayer reads: x normalized into h, or x itself.
	sublayerInput := func(l int, pre Role) string {
		if s.NoPreNorms {
			return "x"
		}
		norm("x", "h", s.Names.Layer(l, pre), D)
		return "h"
	}
	qNormWidth, kNormWidth := s.HeadDim, s.HeadDim
	if s.QKNormWhole {
		qNormWidth, kNormWidth = qw, kvw
	}

	add(program.OpEmbed, []string{program.InputIDs, s.Names.Embed}, []string{"x"}, program.Attr{Scale: s.EmbedScale})
	for l, t := range s.LayerTypes {
		cosT, sinT := RoPETableNames(t)
		h := sublayerInput(l, AttnNorm)
		linear(h, "q", l, Q, QBias, s.QKVBias)
		linear(h, "k", l, K, KBias, s.QKVBias)
		linear(h, "v", l, V, VBias, s.QKVBias)
		if s.QKNorm {
			norm("q", "q", s.Names.Layer(l, QNorm), qNormWidth)
			norm("k", "k", s.Names.Layer(l, KNorm), kNormWidth)
		}
		if s.NoPE == nil || !s.NoPE[l] {
			add(program.OpRoPE, []string{"q", program.PositionIDs, cosT, sinT}, []string{"q"}, program.Attr{HeadDim: s.HeadDim})
			add(program.OpRoPE, []string{"k", program.PositionIDs, cosT, sinT}, []string{"k"}, program.Attr{HeadDim: s.HeadDim})
		}
		window := 0
		if t == program.LayerSliding {
			window = s.Window
		}
		add(program.OpAttention,
			[]string{"q", "k", "v", program.KCache(l), program.VCache(l), program.AttentionMask}, []string{"o"},
			program.Attr{Heads: s.Heads, KVHeads: s.KVHeads, HeadDim: s.HeadDim, VHeadDim: s.HeadDim,
				Scale: s.AttnScale, SoftCap: s.AttnSoftCap, Window: window})
		add(program.OpCacheWrite, []string{"k", program.KCache(l)}, []string{program.KCache(l)}, program.Attr{})
		add(program.OpCacheWrite, []string{"v", program.VCache(l)}, []string{program.VCache(l)}, program.Attr{})
		linear("o", "a", l, O, OBias, s.OBias)
		residual(l, PostAttnNorm)
		h = sublayerInput(l, FFNNorm)
		if s.Sparse(l) {
			s.moeOp(ops, h, l)
		} else {
			linear(h, "g", l, Gate, GateBias, s.MLPBias)
			linear(h, "u", l, Up, UpBias, s.MLPBias)
			add(program.OpGLU, []string{"g", "u"}, []string{"g"}, program.Attr{Activation: s.Activation})
			linear("g", "a", l, Down, DownBias, s.MLPBias)
		}
		residual(l, PostFFNNorm)
		add(program.OpAdvance, []string{program.Counter(l)}, []string{program.Counter(l)}, program.Attr{})
	}
	norm("x", "x", s.Names.FinalNorm, D)
	add(program.OpLinear, []string{"x", s.OutputName()}, []string{program.Logits}, program.Attr{LastRow: logits == program.LogitsLast})
	if s.LogitScale != 0 {
		add(program.OpScale, []string{program.Logits}, []string{program.Logits}, program.Attr{Scale: s.LogitScale})
	}
	if s.FinalSoftCap > 0 {
		add(program.OpSoftCap, []string{program.Logits}, []string{program.Logits}, program.Attr{SoftCap: s.FinalSoftCap})
	}
	return m
}

// Describe is a one-line summary for logs.
func (s *Spec) Describe() string {
	d := fmt.Sprintf("%d layers, hidden %d, %d/%d heads × %d, ffn %d, vocab %d", s.Layers, s.Hidden, s.Heads, s.KVHeads, s.HeadDim, s.FFN, s.Vocab)
	if s.MoE != nil {
		d += fmt.Sprintf(", %d experts (%d per token) × ffn %d", s.MoE.Experts, s.MoE.TopK, s.MoE.FFN)
	}
	return d
}
