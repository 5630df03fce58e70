package exec

import (
	"bytes"
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
		shared := m.prog.shared                        // scratch shared by all attention ops and steps
		scores := make([][]float32, pool.Threads())    // per worker
		S := L + rows                                  // scores of one head
		grouped := f16 && group > 1 && !m.prog.perHead // heads sharing a kv head run together
		for w := range scores {
			scores[w] = asF32(shared(fmt.Sprintf("attention scores %d", w), 4*group*S))
		}
		var cur16k, cur16v []uint16
		if f16 {
			cur16k = asU16(shared("attention k f16", 2*rows*Hkv*Dk))
			cur16v = asU16(shared("attention v f16", 2*rows*Hkv*Dv))
		}
		var n, pos, first int // of the running step, read by head
		// span calls fn(a, e, off, ld) for the runs of absolute positions [a, e) within
		// [a0, a1) that are stored contiguously (ld values apart, starting at off) for
		// kv head g: cached positions (a < pos) in slots a mod L, wrapping at most once,
		// then the current rows, width values per head.
		span := func(g, a0, a1, width int, fn func(a, e, off, ld int)) {
			a := a0
			for a < min(a1, pos) {
				sl := a % L
				e := min(a1, pos, a+L-sl)
				fn(a, e, (g*L+sl)*width, width)
				a = e
			}
			if a = max(a, pos); a < a1 {
				fn(a, a1, (a-pos)*Hkv*width+g*width, Hkv*width)
			}
		}
		// Per-worker state of the row and head being computed, for the span callbacks.
		// keyFns and valFns are the span callbacks of head, groupKeys and groupVals
		// those of groupHead.
		work := make([]attnWorker, pool.Threads())
		keyFns := make([]func(a, e, off, ld int), len(work))
		valFns := make([]func(a, e, off, ld int), len(work))
		groupKeys := make([]func(a, e, off, ld int), len(work))
		groupVals := make([]func(a, e, off, ld int), len(work))
		for w := range work {
			c := &work[w]
			keyFns[w] = func(a, e, off, ld int) {
				dst := c.sc[a-c.first : e-c.first]
				switch {
				case a >= pos && f16:
					kernels.DotsF16(dst, c.qv, cur16k[off:], ld)
				case a >= pos:
					kernels.Dots(dst, c.qv, ks[off:], ld)
				case f16:
					kernels.DotsF16(dst, c.qv, k16[off:], ld)
				default:
					kernels.Dots(dst, c.qv, k32[off:], ld)
				}
			}
			valFns[w] = func(a, e, off, ld int) {
				// runs of visible keys: masked ones add nothing, not even 0×v
				for j, r := c.nextRun(a, e); j < r; j, r = c.nextRun(r, e) {
					p, o := c.sc[j-c.first:r-c.first], off+(j-a)*ld
					switch {
					case a >= pos && f16:
						kernels.AxpysF16(c.o, p, cur16v[o:], ld)
					case a >= pos:
						kernels.Axpys(c.o, p, vs[o:], ld)
					case f16:
						kernels.AxpysF16(c.o, p, v16[o:], ld)
					default:
						kernels.Axpys(c.o, p, v32[o:], ld)
					}
				}
			}
			groupKeys[w] = func(a, e, off, ld int) {
				k := k16
				if a >= pos {
					k = cur16k
				}
				kernels.DotsF16N(c.sc[a-c.first:], S, e-a, c.qv, Dk, group, Dk, k[off:], ld)
			}
			groupVals[w] = func(a, e, off, ld int) {
				v := v16
				if a >= pos {
					v = cur16v
				}
				for j, r := c.nextRun(a, e); j < r; j, r = c.nextRun(r, e) {
					kernels.AxpysF16N(c.o, Dv, Dv, c.sc[j-c.first:], S, group, r-j, v[off+(j-a)*ld:], ld)
				}
			}
		}
		// toF16 rounds current row i of k and v to float16, as the cache will hold them.
		toF16 := func(_, i int) {
			kernels.F32ToF16(cur16k[i*Hkv*Dk:(i+1)*Hkv*Dk], ks[i*Hkv*Dk:(i+1)*Hkv*Dk])
			kernels.F32ToF16(cur16v[i*Hkv*Dv:(i+1)*Hkv*Dv], vs[i*Hkv*Dv:(i+1)*Hkv*Dv])
		}
		// head computes query row i, head h: one item of the parallel loop.
		head := func(w, item int) {
			i, h := item/Hq, item%Hq
			c := &work[w]
			end := c.row(i, pos, first, window, mb[i*C:(i+1)*C])
			c.sc = scores[w][:end-first]
			c.qv = qs[i*Hq*Dk+h*Dk : i*Hq*Dk+(h+1)*Dk]
			span(h/group, c.lo, end, Dk, keyFns[w])
			finishScores(c.sc, first, c.lo, c.mrow, scale, softCap)
			kernels.Softmax(c.sc)
			c.o = os[i*Hq*Dv+h*Dv : i*Hq*Dv+(h+1)*Dv]
			clear(c.o)
			span(h/group, c.lo, end, Dv, valFns[w])
		}
		// groupHead computes query row i for the group heads of kv head g (f16 caches):
		// the same arithmetic per head as head, with each key and value read once.
		groupHead := func(w, item int) {
			i, g := item/Hkv, item%Hkv
			c := &work[w]
			end := c.row(i, pos, first, window, mb[i*C:(i+1)*C])
			c.sc = scores[w]
			c.qv = qs[i*Hq*Dk+g*group*Dk : i*Hq*Dk+(g+1)*group*Dk]
			span(g, c.lo, end, Dk, groupKeys[w])
			for hq := range group {
				sc := c.sc[hq*S : hq*S+end-first]
				finishScores(sc, first, c.lo, c.mrow, scale, softCap)
				kernels.Softmax(sc)
			}
			c.o = os[i*Hq*Dv+g*group*Dv : i*Hq*Dv+(g+1)*group*Dv]
			clear(c.o)
			span(g, c.lo, end, Dv, groupVals[w])
		}
		return func(s *Step) error {
			n, pos = min(s.n, rows), s.pos
			if pos+n > C {
				return fmt.Errorf("%w: rows up to position %d exceed the context %d", ErrStep, pos+n-1, C)
			}
			if f16 {
				if n == 1 {
					toF16(0, 0)
				} else {
					pool.For(n, toF16) // rows the matmuls left in both threads' caches
				}
			}
			first = max(0, pos-L) // oldest absolute position still in the cache
			if grouped {
				pool.For(n*Hkv, groupHead)
			} else {
				pool.For(n*Hq, head)
			}
			return nil
		}, nil
	}, nil
}

// attnWorker is one worker's state for the query row and head(s) it is computing,
// read by the span callbacks of the attention op.
type attnWorker struct {
	sc, qv, o []float32
	first, lo int    // oldest position in the cache; lowest one inside the window
	mrow      []byte // the query row's mask row
}

// row prepares the worker for query row i of a step at pos and returns the end of the
// positions it may see: [first, end), less those before the window and those masked.
func (c *attnWorker) row(i, pos, first, window int, mrow []byte) (end int) {
	c.first, c.lo, c.mrow = first, first, mrow
	if window > 0 {
		c.lo = max(first, pos+i-window+1)
	}
	return pos + i + 1
}

// nextRun returns the first run [j, r) of visible positions in [a, e) (j == r if none).
func (c *attnWorker) nextRun(a, e int) (j, r int) {
	for a < e && (a < c.lo || c.mrow[a] == 0) {
		a++
	}
	if a >= e {
		return a, a
	}
	// the run ends at the next masked position (a byte scan: decode attention
	// at 2k tokens spent 2% of its time in a per-byte loop here)
	if z := bytes.IndexByte(c.mrow[a:e], 0); z >= 0 {
		return a, a + z
	}
	return a, e
}

// finishScores turns the raw dot products sc of positions [first, first+len(sc)) into
// attention logits: scaled (and soft-capped) where the row attends, -Inf before lo and
// where the mask row is 0. Runs of attended positions are scaled with one vector call.
func finishScores(sc []float32, first, lo int, mrow []byte, scale, softCap float32) {
	end := first + len(sc)
	for a := first; a < end; {
		if a < lo || mrow[a] == 0 {
			sc[a-first] = float32(math.Inf(-1))
			a++
			continue
		}
		e := end
		if z := bytes.IndexByte(mrow[a:end], 0); z >= 0 {
			e = a + z
		}
		run := sc[a-first : e-first]
		kernels.Scale(run, scale)
		if softCap > 0 {
			for i, d := range run {
				run[i] = softCap * float32(math.Tanh(float64(d/softCap)))
			}
		}
		a = e
	}
}
