// Package head builds the end of an hf_encode method (docs/contract.md, section 10): how
// the rows of a sequence become one (pooling) and what follows it, sentence-transformers'
// Dense modules or a classifier, then L2 normalization. Encoders (internal/arch/encoder)
// and decoders (internal/arch/decoder) end their encode methods with the same head.
//
// It knows op and tensor names only: which checkpoint tensors the linears read is the
// exporter's business.
package head

import (
	"fmt"

	"github.com/hfstatic/hfstatic/program"
)

// Head is what an encode method does after its last layer.
type Head struct {
	// Pooling is program.PoolCLS, PoolMean, PoolMax or PoolLast.
	Pooling string
	// Linears follow the pooling, in order: Dense modules, or a classifier's dense layer
	// and output projection.
	Linears []Linear
	// Normalize divides each output row by its Euclidean norm.
	Normalize bool
	// Output is what the method returns.
	Output program.EncodeOutput
}

// Linear is y = act(W x + b) on pooled rows.
type Linear struct {
	// Weight and Bias are program tensor names; Bias "" for none.
	Weight, Bias string
	In, Out      int
	// Activation is "" (identity) or one of OpActivation's (program.ActTanh …).
	Activation string
}

// Dim is the width of an output row given the width of the rows pooled.
func (h *Head) Dim(width int) int {
	if n := len(h.Linears); n > 0 {
		return h.Linears[n-1].Out
	}
	return width
}

// Validate checks the head against the width of the rows it pools.
func (h *Head) Validate(width int) error {
	switch h.Pooling {
	case program.PoolCLS, program.PoolMean, program.PoolMax, program.PoolLast:
	default:
		return fmt.Errorf("head: pooling %q is not cls, mean, max or last", h.Pooling)
	}
	if _, err := (&program.Encoder{Output: h.Output}).OutputName(); err != nil {
		return fmt.Errorf("head: %w", err)
	}
	for i, l := range h.Linears {
		if l.In != width || l.Out < 1 || l.Weight == "" {
			return fmt.Errorf("head: linear %d (%s) maps %d values to %d, after a layer of %d", i, l.Weight, l.In, l.Out, width)
		}
		switch l.Activation {
		case "", program.ActGELU, program.ActGELUTanh, program.ActSiLU, program.ActTanh, program.ActReLU:
		default:
			return fmt.Errorf("head: linear %d (%s) activation %q is not supported", i, l.Weight, l.Activation)
		}
		width = l.Out
	}
	return nil
}

// Ops returns the ops and activations of the head for a method of batch sequences whose
// rows of width values are in x. Each step writes a buffer of its own (a linear never
// writes its input): the pooling "pooled", linear i "head_<i>", the normalization; the last
// step writes the method's output instead.
func (h *Head) Ops(x string, width, batch int) ([]program.Op, []program.IO, error) {
	if err := h.Validate(width); err != nil {
		return nil, nil, err
	}
	out, _ := (&program.Encoder{Output: h.Output}).OutputName()
	steps := 1 + len(h.Linears) // the pooling, then the linears, then the normalization
	if h.Normalize {
		steps++
	}
	var acts []program.IO
	buffer := func(step int, name string, w int) string {
		if step == steps-1 {
			return out
		}
		acts = append(acts, program.IO{Name: name, DType: program.F32, Shape: program.Shape{batch, w}})
		return name
	}
	var ops []program.Op
	add := func(kind program.OpKind, in []string, y string, attr program.Attr) {
		ops = append(ops, program.Op{Kind: kind, In: in, Out: []string{y}, Attr: attr})
	}
	cur := buffer(0, "pooled", width)
	add(program.OpPool, []string{x, program.AttentionMask}, cur, program.Attr{Pooling: h.Pooling})
	for i, l := range h.Linears {
		y := buffer(1+i, fmt.Sprintf("head_%d", i), l.Out)
		in := []string{cur, l.Weight}
		if l.Bias != "" {
			in = append(in, l.Bias)
		}
		add(program.OpLinear, in, y, program.Attr{})
		if l.Activation != "" {
			add(program.OpActivation, []string{y}, y, program.Attr{Activation: l.Activation})
		}
		cur = y
	}
	if h.Normalize {
		add(program.OpL2Normalize, []string{cur}, out, program.Attr{Eps: NormalizeEps})
	}
	return ops, acts, nil
}

// NormalizeEps is the floor of the norm an embedding is divided by (PyTorch's
// F.normalize, which sentence-transformers' Normalize module calls).
const NormalizeEps = 1e-12
