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
	m := program.Method{Name: name, Step: step, Logits: logits}
	m.Inputs, m.Outputs = program.MethodIO(md, step, logits)
	g := s.graph(&m, step)
	g.layers(func(l int, t program.LayerType) {
		cosT, sinT := RoPETableNames(t)
		if s.NoPE == nil || !s.NoPE[l] {
			g.add(program.OpRoPE, []string{"q", program.PositionIDs, cosT, sinT}, "q", program.Attr{HeadDim: s.HeadDim})
			g.add(program.OpRoPE, []string{"k", program.PositionIDs, cosT, sinT}, "k", program.Attr{HeadDim: s.HeadDim})
		}
		window := 0
		if t == program.LayerSliding {
			window = s.Window
		}
		g.add(program.OpAttention,
			[]string{"q", "k", "v", program.KCache(l), program.VCache(l), program.AttentionMask}, "o",
			program.Attr{Heads: s.Heads, KVHeads: s.KVHeads, HeadDim: s.HeadDim, VHeadDim: s.HeadDim,
				Scale: s.AttnScale, SoftCap: s.AttnSoftCap, Window: window})
		g.add(program.OpCacheWrite, []string{"k", program.KCache(l)}, program.KCache(l), program.Attr{})
		g.add(program.OpCacheWrite, []string{"v", program.VCache(l)}, program.VCache(l), program.Attr{})
	}, func(l int) {
		g.add(program.OpAdvance, []string{program.Counter(l)}, program.Counter(l), program.Attr{})
	})
	g.norm("x", "x", s.Names.FinalNorm, s.Hidden)
	g.add(program.OpLinear, []string{"x", s.OutputName()}, program.Logits, program.Attr{LastRow: logits == program.LogitsLast})
	if s.LogitScale != 0 {
		g.add(program.OpScale, []string{program.Logits}, program.Logits, program.Attr{Scale: s.LogitScale})
	}
	if s.FinalSoftCap > 0 {
		g.add(program.OpSoftCap, []string{program.Logits}, program.Logits, program.Attr{SoftCap: s.FinalSoftCap})
	}
	return m
}

// graph appends the ops of a method m of rows rows.
type graph struct {
	s    *Spec
	m    *program.Method
	rows int
}

// graph starts a method's activations (x, h, q, k, v, o, a and the dense MLP's g, u, all
// [rows, width]) and returns its builder.
func (s *Spec) graph(m *program.Method, rows int) *graph {
	g := &graph{s: s, m: m, rows: rows}
	D, qw, kvw := s.Hidden, s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	m.Activations = []program.IO{g.act("x", D), g.act("h", D), g.act("q", qw), g.act("k", kvw), g.act("v", kvw),
		g.act("o", qw), g.act("a", D)}
	if s.dense() {
		m.Activations = append(m.Activations, g.act("g", s.FFN), g.act("u", s.FFN))
	}
	if s.NoPreNorms {
		m.Activations = slices.Delete(m.Activations, 1, 2) // no normalized copy h of x
	}
	return g
}

func (g *graph) act(name string, width int) program.IO {
	return program.IO{Name: name, DType: program.F32, Shape: program.Shape{g.rows, width}}
}

func (g *graph) add(kind program.OpKind, in []string, out string, attr program.Attr) {
	g.m.Ops = append(g.m.Ops, program.Op{Kind: kind, In: in, Out: []string{out}, Attr: attr})
}

func (g *graph) linear(x, y string, l int, w, b Role, use bool) {
	in := []string{x, g.s.Names.Layer(l, w)}
	if use {
		in = append(in, g.s.Names.Layer(l, b))
	}
	g.add(program.OpLinear, in, y, program.Attr{})
}

func (g *graph) norm(x, y, w string, width int) {
	g.add(program.OpRMSNorm, []string{x, w}, y, program.Attr{Width: width, Eps: g.s.NormEps})
}

// residual adds a sublayer's output a to the stream x, scaled first where the spec says.
func (g *graph) residual(l int, post Role) {
	s := g.s
	if s.SandwichNorms {
		g.norm("a", "a", s.Names.Layer(l, post), s.Hidden)
	}
	if s.ResidualScale != 0 {
		g.add(program.OpScale, []string{"a"}, "a", program.Attr{Scale: s.ResidualScale})
	}
	g.add(program.OpAdd, []string{"x", "a"}, "x", program.Attr{})
}

// sublayerInput is what a sublayer reads: x normalized into h, or x itself.
func (g *graph) sublayerInput(l int, pre Role) string {
	if g.s.NoPreNorms {
		return "x"
	}
	g.norm("x", "h", g.s.Names.Layer(l, pre), g.s.Hidden)
	return "h"
}

// layers emits the embedding and every layer: attend(l, t) turns the layer's projected
// q, k, v into its attention output o (RoPE, attention, cache writes); end(l), if set,
// closes the layer.
func (g *graph) layers(attend func(l int, t program.LayerType), end func(l int)) {
	s := g.s
	qNormWidth, kNormWidth := s.HeadDim, s.HeadDim
	if s.QKNormWhole {
		qNormWidth, kNormWidth = s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	}
	g.add(program.OpEmbed, []string{program.InputIDs, s.Names.Embed}, "x", program.Attr{Scale: s.EmbedScale})
	for l, t := range s.LayerTypes {
		h := g.sublayerInput(l, AttnNorm)
		g.linear(h, "q", l, Q, QBias, s.QKVBias)
		g.linear(h, "k", l, K, KBias, s.QKVBias)
		g.linear(h, "v", l, V, VBias, s.QKVBias)
		if s.QKNorm {
			g.norm("q", "q", s.Names.Layer(l, QNorm), qNormWidth)
			g.norm("k", "k", s.Names.Layer(l, KNorm), kNormWidth)
		}
		attend(l, t)
		g.linear("o", "a", l, O, OBias, s.OBias)
		g.residual(l, PostAttnNorm)
		h = g.sublayerInput(l, FFNNorm)
		if s.Sparse(l) {
			s.moeOp(&g.m.Ops, h, l)
		} else {
			g.linear(h, "g", l, Gate, GateBias, s.MLPBias)
			g.linear(h, "u", l, Up, UpBias, s.MLPBias)
			g.add(program.OpGLU, []string{"g", "u"}, "g", program.Attr{Activation: s.Activation})
			g.linear("g", "a", l, Down, DownBias, s.MLPBias)
		}
		g.residual(l, PostFFNNorm)
		if end != nil {
			end(l)
		}
	}
}

// Describe is a one-line summary for logs.
func (s *Spec) Describe() string {
	d := fmt.Sprintf("%d layers, hidden %d, %d/%d heads × %d, ffn %d, vocab %d", s.Layers, s.Hidden, s.Heads, s.KVHeads, s.HeadDim, s.FFN, s.Vocab)
	if s.MoE != nil {
		d += fmt.Sprintf(", %d experts (%d per token) × ffn %d", s.MoE.Experts, s.MoE.TopK, s.MoE.FFN)
	}
	return d
}
