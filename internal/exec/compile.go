package exec

import (
	"fmt"
	"slices"

	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program"
)

// operand is a resolved op operand: a constant tensor or a buffer.
type operand struct {
	name  string
	dtype program.DType
	shape program.Shape
	konst *constant
	idx   int // program buffer index (-1 for a constant)
}

func (o operand) elems() int { return o.shape.Elems() }

func (m *Method) operand(name string) (operand, error) {
	if b, ok := m.buffers[name]; ok {
		return operand{name: name, dtype: b.DType, shape: b.Shape, idx: m.prog.index[name]}, nil
	}
	if c, ok := m.prog.consts[name]; ok {
		return operand{name: name, dtype: c.t.DType, shape: c.t.Shape, konst: &c, idx: -1}, nil
	}
	return operand{}, fmt.Errorf("unknown tensor %q", name)
}

func (o operand) matrix() (kernels.Matrix, error) {
	if o.konst == nil || len(o.shape) != 2 {
		return kernels.Matrix{}, fmt.Errorf("%q is not a constant 2-D weight", o.name)
	}
	var t kernels.WeightType
	switch o.dtype {
	case program.F32:
		t = kernels.F32
	case program.F16:
		t = kernels.F16
	case program.BF16:
		t = kernels.BF16
	case program.Q8:
		t = kernels.Q8
	case program.Q4:
		t = kernels.Q4
	default:
		return kernels.Matrix{}, fmt.Errorf("weight %q has dtype %s", o.name, o.dtype)
	}
	mat := kernels.Matrix{Type: t, Rows: o.shape[0], Cols: o.shape[1], Data: o.konst.data}
	if err := mat.Validate(); err != nil {
		return kernels.Matrix{}, fmt.Errorf("weight %q: %w", o.name, err)
	}
	return mat, nil
}

// rows2 interprets a buffer as [rows, width] given the method step: activations are [S, W],
// method I/O such as logits are [1, S, W].
func rows2(o operand) (rows, width int) {
	if len(o.shape) == 0 {
		return 1, 1
	}
	width = o.shape[len(o.shape)-1]
	return o.elems() / width, width
}

func (p *Program) compile(spec *program.Method) (*Method, error) {
	m := &Method{prog: p, spec: spec, buffers: map[string]program.IO{}, selected: make([]bool, len(p.index)), output: -1}
	m.batch, m.seqLen = sequenceShape(spec)
	if m.batch > 0 && m.batch*m.seqLen != spec.Step {
		return nil, &program.FormatError{Item: fmt.Sprintf("method %q", spec.Name),
			Problem: fmt.Sprintf("step %d is not B·S of its [%d,%d] attention_mask", spec.Step, m.batch, m.seqLen)}
	}
	for _, list := range [][]program.IO{spec.Inputs, spec.Outputs, spec.Activations} {
		for _, b := range list {
			m.buffers[b.Name] = b
		}
	}
	for _, b := range spec.Outputs {
		if _, inPlace := spec.Input(b.Name); !inPlace {
			m.output, m.outWidth = p.index[b.Name], b.Shape[len(b.Shape)-1]
		}
	}
	used := map[string]bool{}
	for _, op := range spec.Ops {
		for _, n := range append(op.In, op.Out...) {
			used[n] = true
		}
	}
	for _, a := range spec.Activations {
		if !used[a.Name] {
			return nil, &program.FormatError{Item: fmt.Sprintf("method %q activation %q", spec.Name, a.Name), Problem: "not used by any op"}
		}
	}
	for i := range spec.Ops {
		op := &spec.Ops[i]
		in := make([]operand, len(op.In))
		for j, name := range op.In {
			o, err := m.operand(name)
			if err != nil {
				return nil, opErr(spec, i, op, err)
			}
			in[j] = o
		}
		out, err := m.operand(op.Out[0])
		if err != nil || out.konst != nil {
			return nil, opErr(spec, i, op, fmt.Errorf("output %q is not a buffer", op.Out[0]))
		}
		o, err := m.compileOp(op, in, out)
		if err != nil {
			return nil, opErr(spec, i, op, err)
		}
		m.ops = append(m.ops, o)
	}
	m.fuseActivations()
	if m.batch > 0 && (m.output < 0 || !m.selected[m.output]) {
		return nil, &program.FormatError{Item: fmt.Sprintf("method %q", spec.Name),
			Problem: "a method over sequences must write one output row per sequence (pool before it)"}
	}
	return m, nil
}

// sameOps reports whether the methods run the same op list: the same kinds, operands and
// attributes but last_row (shapes differ with the step).
func sameOps(methods []program.Method) bool {
	for _, mt := range methods[1:] {
		a, b := methods[0].Ops, mt.Ops
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			x, y := a[i], b[i]
			x.Attr.LastRow, y.Attr.LastRow = false, false
			if x.Kind != y.Kind || !slices.Equal(x.In, y.In) || !slices.Equal(x.Out, y.Out) || x.Attr != y.Attr {
				return false
			}
		}
	}
	return true
}

func opErr(spec *program.Method, i int, op *program.Op, err error) error {
	return &program.FormatError{Item: fmt.Sprintf("method %q op %d (%s)", spec.Name, i, op.Kind), Problem: err.Error()}
}

func wantF32(os ...operand) error {
	for _, o := range os {
		if o.dtype != program.F32 {
			return fmt.Errorf("%q has dtype %s, want f32", o.name, o.dtype)
		}
	}
	return nil
}

// compileOp checks one op against its operands and returns its implementation.
func (m *Method) compileOp(op *program.Op, in []operand, out operand) (op, error) {
	switch op.Kind {
	case program.OpEmbed:
		return m.compileEmbed(op, in, out)
	case program.OpRMSNorm:
		return m.compileRMSNorm(op, in, out)
	case program.OpLinear:
		return m.compileLinear(op, in, out)
	case program.OpRoPE:
		return m.compileRoPE(op, in, out)
	case program.OpAttention:
		return m.compileAttention(op, in, out)
	case program.OpCacheWrite:
		return m.compileCacheWrite(op, in, out)
	case program.OpAdvance:
		return m.compileAdvance(op, in, out)
	case program.OpAdd:
		return m.compileAdd(op, in, out)
	case program.OpGLU:
		return m.compileGLU(op, in, out)
	case program.OpSoftCap:
		return m.compileSoftCap(op, in, out)
	case program.OpScale:
		return m.compileScale(op, in, out)
	case program.OpMoE:
		return m.compileMoE(op, in, out)
	case program.OpLayerNorm:
		return m.compileLayerNorm(op, in, out)
	case program.OpActivation:
		return m.compileActivation(op, in, out)
	case program.OpPositionEmbed:
		return m.compilePositionEmbed(op, in, out)
	case program.OpSelfAttention:
		return m.compileSelfAttention(op, in, out)
	case program.OpPool:
		return m.compilePool(op, in, out)
	case program.OpL2Normalize:
		return m.compileL2Normalize(op, in, out)
	}
	return nil, fmt.Errorf("op kind %q is not implemented by this executor", op.Kind)
}
