package exec

import (
	"fmt"

	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program"
)

func (m *Method) compileEmbed(op *program.Op, in []operand, out operand) (binder, error) {
	ids, table := in[0], in[1]
	if ids.dtype != program.I64 {
		return nil, fmt.Errorf("ids %q has dtype %s, want i64", ids.name, ids.dtype)
	}
	mat, err := table.matrix()
	if err != nil {
		return nil, err
	}
	rows, width := rows2(out)
	if err := wantF32(out); err != nil {
		return nil, err
	}
	if width != mat.Cols || rows != ids.elems() {
		return nil, fmt.Errorf("embedding %v of %d ids into %v", table.shape, ids.elems(), out.shape)
	}
	scale := op.Attr.Scale
	return func(s *Step) (func(*Step) error, error) {
		idv, ys := asI64(s.bufs[ids.name]), out.f32(s)
		return func(s *Step) error {
			n := min(s.n, rows)
			for i, id := range idv[:n] {
				if id < 0 || id >= int64(mat.Rows) {
					return fmt.Errorf("%w: token id %d at row %d is outside the vocabulary [0,%d)", ErrStep, id, i, mat.Rows)
				}
			}
			kernels.GatherRows(ys[:n*width], mat, idv[:n], scale)
			return nil
		}, nil
	}, nil
}

func (m *Method) compileLinear(op *program.Op, in []operand, out operand) (binder, error) {
	x := in[0]
	w, err := in[1].matrix()
	if err != nil {
		return nil, err
	}
	if err := wantF32(x, out); err != nil {
		return nil, err
	}
	rows, k := rows2(x)
	orows, n := rows2(out)
	if k != w.Cols || n != w.Rows {
		return nil, fmt.Errorf("linear %q %v × %q [%d,%d]ᵀ into %q %v", x.name, x.shape, in[1].name, w.Rows, w.Cols, out.name, out.shape)
	}
	last := op.Attr.LastRow
	if (last && orows != 1) || (!last && orows != rows) {
		return nil, fmt.Errorf("linear output %q %v has %d rows for %d input rows (last_row %v)", out.name, out.shape, orows, rows, last)
	}
	var bias *operand
	if len(in) == 3 {
		if err := wantF32(in[2]); err != nil {
			return nil, err
		}
		if in[2].elems() != n {
			return nil, fmt.Errorf("bias %q has %d values, want %d", in[2].name, in[2].elems(), n)
		}
		bias = &in[2]
	}
	_, isOutput := m.spec.Output(out.name)
	return func(s *Step) (func(*Step) error, error) {
		xs, ys := x.f32(s), out.f32(s)
		written := rows // rows of a method output that may hold values from an earlier step
		var bs []float32
		if bias != nil {
			bs = bias.f32(s)
		}
		pool := m.prog.pool
		return func(s *Step) error {
			nr := min(s.n, rows)
			if last {
				pool.MatMul(ys, xs[(nr-1)*k:nr*k], 1, w, bs)
				return nil
			}
			pool.MatMul(ys[:nr*n], xs[:nr*k], nr, w, bs)
			if isOutput && written > nr {
				clear(ys[nr*n : written*n]) // padding rows of a method output hold zeros, not stale values
			}
			written = nr
			return nil
		}, nil
	}, nil
}

func (m *Method) compileRoPE(op *program.Op, in []operand, out operand) (binder, error) {
	x, positions, cos, sin := in[0], in[1], in[2], in[3]
	if err := wantF32(x, cos, sin); err != nil {
		return nil, err
	}
	if x.name != out.name {
		return nil, fmt.Errorf("rope is in place")
	}
	if positions.dtype != program.I64 {
		return nil, fmt.Errorf("positions %q have dtype %s", positions.name, positions.dtype)
	}
	rows, width := rows2(x)
	hd := op.Attr.HeadDim
	if width%hd != 0 || positions.elems() != rows {
		return nil, fmt.Errorf("rope over %v with head_dim %d and %d positions", x.shape, hd, positions.elems())
	}
	if len(cos.shape) != 2 || !cos.shape.Equal(sin.shape) || 2*cos.shape[1] > hd {
		return nil, fmt.Errorf("rope tables %v and %v do not fit head_dim %d", cos.shape, sin.shape, hd)
	}
	tableRows, half := cos.shape[0], cos.shape[1]
	return func(s *Step) (func(*Step) error, error) {
		xs, ps, cs, ss := x.f32(s), asI64(s.bufs[positions.name]), cos.f32(s), sin.f32(s)
		return func(s *Step) error {
			for i := 0; i < min(s.n, rows); i++ {
				p := int(ps[i])
				if p < 0 || p >= tableRows {
					return fmt.Errorf("%w: position %d at row %d is outside the RoPE table [0,%d)", ErrStep, p, i, tableRows)
				}
				c, sn := cs[p*half:(p+1)*half], ss[p*half:(p+1)*half]
				row := xs[i*width : (i+1)*width]
				for h := 0; h < width; h += hd {
					kernels.RoPE(row[h:h+2*half], c, sn)
				}
			}
			return nil
		}, nil
	}, nil
}

func (m *Method) compileCacheWrite(op *program.Op, in []operand, out operand) (binder, error) {
	x, cache := in[0], in[1]
	if cache.name != out.name || cache.konst != nil {
		return nil, fmt.Errorf("cache_write writes its cache in place")
	}
	if err := wantF32(x); err != nil {
		return nil, err
	}
	if len(cache.shape) != 4 || cache.shape[0] != 1 {
		return nil, fmt.Errorf("cache %q shape %v is not [1,H,L,D]", cache.name, cache.shape)
	}
	if cache.dtype != program.F32 && cache.dtype != program.F16 {
		return nil, fmt.Errorf("cache %q dtype %s is not f32 or f16", cache.name, cache.dtype)
	}
	H, L, D := cache.shape[1], cache.shape[2], cache.shape[3]
	rows, width := rows2(x)
	if width != H*D {
		return nil, fmt.Errorf("cache_write of %q %v into %q %v", x.name, x.shape, cache.name, cache.shape)
	}
	f16 := cache.dtype == program.F16
	return func(s *Step) (func(*Step) error, error) {
		xs, buf := x.f32(s), s.bufs[cache.name]
		c32, c16 := asF32(buf), asU16(buf)
		return func(s *Step) error {
			n := min(s.n, rows)
			for i := max(0, n-L); i < n; i++ {
				slot := (s.pos + i) % L
				for h := 0; h < H; h++ {
					src := xs[i*width+h*D : i*width+(h+1)*D]
					off := (h*L + slot) * D
					if f16 {
						kernels.F32ToF16(c16[off:off+D], src)
					} else {
						copy(c32[off:off+D], src)
					}
				}
			}
			return nil
		}, nil
	}, nil
}
