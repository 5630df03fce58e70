package exec

import (
	"fmt"

	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program"
)

// operand is a resolved op operand: a constant tensor or a step buffer.
type operand struct {
	name  string
	dtype program.DType
	shape program.Shape
	konst *constant
}

func (o operand) elems() int { return o.shape.Elems() }

func (m *Method) operand(name string) (operand, error) {
	if b, ok := m.buffers[name]; ok {
		return operand{name: name, dtype: b.DType, shape: b.Shape}, nil
	}
	if c, ok := m.prog.consts[name]; ok {
		return operand{name: name, dtype: c.t.DType, shape: c.t.Shape, konst: &c}, nil
	}
	return operand{}, fmt.Errorf("unknown tensor %q", name)
}

// f32 returns an operand's float32 data in a bound step.
func (o operand) f32(s *Step) []float32 {
	if o.konst != nil {
		return asF32(o.konst.data)
	}
	return asF32(s.bufs[o.name])
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
	m := &Method{prog: p, spec: spec, buffers: map[string]program.IO{}}
	for _, list := range [][]program.IO{spec.Inputs, spec.Outputs, spec.Activations} {
		for _, b := range list {
			m.buffers[b.Name] = b
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
		b, err := m.compileOp(op, in, out)
		if err != nil {
			return nil, opErr(spec, i, op, err)
		}
		m.binders = append(m.binders, b)
	}
	return m, nil
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

func (m *Method) compileOp(op *program.Op, in []operand, out operand) (binder, error) {
	S := m.spec.Step
	switch op.Kind {
	case program.OpEmbed:
		return m.compileEmbed(op, in, out)
	case program.OpRMSNorm:
		x := in[0]
		if err := wantF32(x, out); err != nil {
			return nil, err
		}
		rows, width := rows2(x)
		w := op.Attr.Width
		if width%w != 0 || x.elems() != out.elems() {
			return nil, fmt.Errorf("norm width %d does not divide %q %v or output %v differs", w, x.name, x.shape, out.shape)
		}
		var weight *operand
		if len(in) == 2 {
			if err := wantF32(in[1]); err != nil {
				return nil, err
			}
			if in[1].elems() != w {
				return nil, fmt.Errorf("norm weight %q has %d values, want %d", in[1].name, in[1].elems(), w)
			}
			weight = &in[1]
		}
		eps := op.Attr.Eps
		return func(s *Step) (func(*Step) error, error) {
			xs, ys := x.f32(s), out.f32(s)
			var ws []float32
			if weight != nil {
				ws = weight.f32(s)
			}
			perRow := width / w
			return func(s *Step) error {
				nr := min(s.n, rows)
				for g := 0; g < nr*perRow; g++ {
					kernels.RMSNorm(ys[g*w:(g+1)*w], xs[g*w:(g+1)*w], ws, eps)
				}
				return nil
			}, nil
		}, nil
	case program.OpLinear:
		return m.compileLinear(op, in, out)
	case program.OpRoPE:
		return m.compileRoPE(op, in, out)
	case program.OpAttention:
		return m.compileAttention(op, in, out)
	case program.OpCacheWrite:
		return m.compileCacheWrite(op, in, out)
	case program.OpAdvance:
		c := in[0]
		if c.dtype != program.I64 || c.elems() != 1 || c.name != out.name {
			return nil, fmt.Errorf("advance needs an in-place i64 scalar, got %q %s %v", c.name, c.dtype, c.shape)
		}
		return func(s *Step) (func(*Step) error, error) {
			v := &asI64(s.bufs[c.name])[0]
			return func(s *Step) error { *v += int64(s.n); return nil }, nil
		}, nil
	case program.OpAdd:
		a, b := in[0], in[1]
		if err := wantF32(a, b, out); err != nil {
			return nil, err
		}
		if a.elems() != b.elems() || a.elems() != out.elems() {
			return nil, fmt.Errorf("add of %v and %v into %v", a.shape, b.shape, out.shape)
		}
		rows, width := rows2(a)
		return func(s *Step) (func(*Step) error, error) {
			as, bs, ys := a.f32(s), b.f32(s), out.f32(s)
			return func(s *Step) error {
				// Row by row: a row's result must not depend on how many rows the step has.
				for off := 0; off < min(s.n, rows)*width; off += width {
					kernels.Add(ys[off:off+width], as[off:off+width], bs[off:off+width])
				}
				return nil
			}, nil
		}, nil
	case program.OpGLU:
		g, u := in[0], in[1]
		if err := wantF32(g, u, out); err != nil {
			return nil, err
		}
		if g.elems() != u.elems() || g.elems() != out.elems() {
			return nil, fmt.Errorf("glu of %v and %v into %v", g.shape, u.shape, out.shape)
		}
		rows, width := rows2(g)
		gelu := op.Attr.Activation == program.ActGELUTanh
		return func(s *Step) (func(*Step) error, error) {
			gs, us, ys := g.f32(s), u.f32(s), out.f32(s)
			return func(s *Step) error {
				for off := 0; off < min(s.n, rows)*width; off += width {
					y, g, u := ys[off:off+width], gs[off:off+width], us[off:off+width]
					if gelu {
						kernels.GELUTanhMul(y, g, u)
					} else {
						kernels.SiLUMul(y, g, u)
					}
				}
				return nil
			}, nil
		}, nil
	case program.OpSoftCap:
		x := in[0]
		if err := wantF32(x); err != nil {
			return nil, err
		}
		if x.name != out.name {
			return nil, fmt.Errorf("soft_cap is in place")
		}
		rows, width := rows2(x)
		c := op.Attr.SoftCap
		return func(s *Step) (func(*Step) error, error) {
			xs := x.f32(s)
			return func(s *Step) error {
				nr := rows
				if rows == S {
					nr = s.n
				}
				for off := 0; off < nr*width; off += width {
					kernels.SoftCap(xs[off:off+width], c)
				}
				return nil
			}, nil
		}, nil
	}
	return nil, fmt.Errorf("op kind %q is not implemented by this executor", op.Kind)
}
