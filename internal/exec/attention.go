package exec

import (
	"fmt"
	"math"

	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program"
)

// compileAttention implements OpAttention: each real row attends to the incoming cache
// (absolute positions a < pos, slot a mod L) and to the current rows up to itself, as the
// mask and window allow. With a float16 cache the current rows are rounded to float16 first,
// so a step sees exactly what a later step would read back from the cache. The (row, head)
// pairs run in parallel on the program's pool, each with the arithmetic of a serial loop.
func (m *Method) compileAttention(op *program.Op, in []operand, out operand) (binder, error) {
	q, k, v, kc, vc, mask := in[0], in[1], in[2], in[3], in[4], in[5]
	at := op.Attr
	if err := wantF32(q, k, v, out); err != nil {
		return nil, err
	}
	if kc.dtype != vc.dtype || (kc.dtype != program.F32 && kc.dtype != program.F16) {
		return nil, fmt.Errorf("caches %q %s and %q %s must both be f32 or f16", kc.name, kc.dtype, vc.name, vc.dtype)
	}
	Hq, Hkv, Dk, Dv := at.Heads, at.KVHeads, at.HeadDim, at.VHeadDim
	rows, _ := rows2(q)
	want := func(o operand, width int) error {
		if r, w := rows2(o); r != rows || w != width {
			return fmt.Errorf("%q %v is not [%d,%d]", o.name, o.shape, rows, width)
		}
		return nil
	}
	for _, c := range []struct {
		o operand
		w int
	}{{q, Hq * Dk}, {k, Hkv * Dk}, {v, Hkv * Dv}, {out, Hq * Dv}} {
		if err := want(c.o, c.w); err != nil {
			return nil, err
		}
	}
	if len(kc.shape) != 4 || kc.shape[1] != Hkv || kc.shape[3] != Dk {
		return nil, fmt.Errorf("k cache %q %v is not [1,%d,L,%d]", kc.name, kc.shape, Hkv, Dk)
	}
	L := kc.shape[2]
	if len(vc.shape) != 4 || vc.shape[1] != Hkv || vc.shape[2] != L || vc.shape[3] != Dv {
		return nil, fmt.Errorf("v cache %q %v is not [1,%d,%d,%d]", vc.name, vc.shape, Hkv, L, Dv)
	}
	if mask.dtype != program.Bool || len(mask.shape) != 4 || mask.shape[2] != rows {
		return nil, fmt.Errorf("mask %q %s %v is not bool [1,1,%d,C]", mask.name, mask.dtype, mask.shape, rows)
	}
	C := mask.shape[3]
	if L > C {
		return nil, fmt.Errorf("cache %q has %d rows, more than the context %d", kc.name, L, C)
	}
	f16 := kc.dtype == program.F16
	group := Hq / Hkv
	scale, softCap, window := at.Scale, at.SoftCap, at.Window
	return func(s *Step) (func(*Step) error, error) {
		qs, ks, vs, os := q.f32(s), k.f32(s), v.f32(s), out.f32(s)
		kb, vb, mb := s.bufs[kc.name], s.bufs[vc.name], s.bufs[mask.name]
		k32, v32, k16, v16 := asF32(kb), asF32(vb), asU16(kb), asU16(vb)
		pool := m.prog.pool
		scores := make([][]float32, pool.Threads()) // per worker
		for w := range scores {
			scores[w] = make([]float32, L+rows)
		}
		var cur16k, cur16v []uint16
		if f16 {
			cur16k = make([]uint16, rows*Hkv*Dk)
			cur16v = make([]uint16, rows*Hkv*Dv)
		}
		var n, pos, first int // of the running step, read by head
		// head computes query row i, head h: one item of the parallel loop.
		head := func(w, item int) {
			i, h := item/Hq, item%Hq
			scores := scores[w]
			mrow := mb[i*C : (i+1)*C]
			lo := 0 // lowest absolute position inside the window
			if window > 0 {
				lo = max(0, pos+i-window+1)
			}
			g := h / group
			qv := qs[i*Hq*Dk+h*Dk : i*Hq*Dk+(h+1)*Dk]
			cnt := 0
			for a := first; a < pos+i+1; a++ {
				if a < lo || mrow[a] == 0 {
					scores[cnt] = float32(math.Inf(-1))
					cnt++
					continue
				}
				var d float32
				if a < pos {
					off := (g*L + a%L) * Dk
					if f16 {
						d = kernels.DotF16(qv, k16[off:off+Dk])
					} else {
						d = kernels.Dot(qv, k32[off:off+Dk])
					}
				} else {
					off := (a-pos)*Hkv*Dk + g*Dk
					if f16 {
						d = kernels.DotF16(qv, cur16k[off:off+Dk])
					} else {
						d = kernels.Dot(qv, ks[off:off+Dk])
					}
				}
				d *= scale
				if softCap > 0 {
					d = softCap * float32(math.Tanh(float64(d/softCap)))
				}
				scores[cnt] = d
				cnt++
			}
			sc := scores[:cnt]
			kernels.Softmax(sc)
			o := os[i*Hq*Dv+h*Dv : i*Hq*Dv+(h+1)*Dv]
			clear(o)
			for j, p := range sc {
				if p == 0 {
					continue
				}
				a := first + j
				if a < pos {
					off := (g*L + a%L) * Dv
					if f16 {
						kernels.AxpyF16(p, v16[off:off+Dv], o)
					} else {
						kernels.Axpy(p, v32[off:off+Dv], o)
					}
				} else {
					off := (a-pos)*Hkv*Dv + g*Dv
					if f16 {
						kernels.AxpyF16(p, cur16v[off:off+Dv], o)
					} else {
						kernels.Axpy(p, vs[off:off+Dv], o)
					}
				}
			}
		}
		return func(s *Step) error {
			n, pos = min(s.n, rows), s.pos
			if pos+n > C {
				return fmt.Errorf("%w: rows up to position %d exceed the context %d", ErrStep, pos+n-1, C)
			}
			if f16 {
				kernels.F32ToF16(cur16k[:n*Hkv*Dk], ks[:n*Hkv*Dk])
				kernels.F32ToF16(cur16v[:n*Hkv*Dv], vs[:n*Hkv*Dv])
			}
			first = max(0, pos-L) // oldest absolute position still in the cache
			pool.For(n*Hq, head)
			return nil
		}, nil
	}, nil
}
