package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/hfstatic/hfstatic/internal/align"
	"math"
	"sync"

	"github.com/hfstatic/hfstatic/program"
)

// fakeSpec describes a small hand-built program for the fake executor.
type fakeSpec struct {
	C, P, V       int
	Layers        []program.LayerType
	W             int // sliding window
	PrefillLogits program.LogitsRows
	Layout        program.SlidingLayout
}

const fakeHeads, fakeDim = 2, 3

func (f fakeSpec) rows(t program.LayerType) int {
	if t == program.LayerSliding && f.Layout != program.LayoutFull {
		return min(f.W, f.C)
	}
	return f.C
}

// manifest builds a valid hf_static v1 manifest (no ops: the fake executor computes).
func (f fakeSpec) manifest() *program.Manifest {
	layout := f.Layout
	if layout == "" {
		layout = program.LayoutRing
	}
	md := program.Metadata{Contract: program.ContractName, Version: program.ContractVersion, MaxContext: f.C, VocabSize: f.V,
		CacheDType: program.F32, SlidingWindow: f.W, SlidingLayout: layout,
		Tokens: program.Tokens{EOS: []int64{1}, Pad: 0}}
	for _, t := range f.Layers {
		md.Layers = append(md.Layers, program.Layer{Type: t, KVHeads: fakeHeads, KHeadDim: fakeDim, VHeadDim: fakeDim, CacheRows: f.rows(t)})
	}
	method := func(name string, S int, logits program.LogitsRows) program.Method {
		m := program.Method{Name: name, Step: S, Logits: logits}
		m.Inputs = []program.IO{
			{Name: program.InputIDs, DType: program.I64, Shape: program.Shape{1, S}},
			{Name: program.AttentionMask, DType: program.Bool, Shape: program.Shape{1, 1, S, f.C}},
			{Name: program.PositionIDs, DType: program.I64, Shape: program.Shape{1, S}},
		}
		rows := S
		if logits == program.LogitsLast {
			rows = 1
		}
		m.Outputs = []program.IO{{Name: program.Logits, DType: program.F32, Shape: program.Shape{1, rows, f.V}}}
		for l, ly := range md.Layers {
			k := program.IO{Name: program.KCache(l), DType: program.F32, Shape: program.Shape{1, fakeHeads, ly.CacheRows, fakeDim}}
			v := program.IO{Name: program.VCache(l), DType: program.F32, Shape: program.Shape{1, fakeHeads, ly.CacheRows, fakeDim}}
			c := program.IO{Name: program.Counter(l), DType: program.I64, Shape: program.Shape{}}
			m.Inputs = append(m.Inputs, k, v, c)
			m.Outputs = append(m.Outputs, k, v, c)
		}
		return m
	}
	man := &program.Manifest{Metadata: md, Methods: []program.Method{method(program.MethodDecode, 1, program.LogitsLast)}}
	if f.P > 0 {
		pl := f.PrefillLogits
		if pl == "" {
			pl = program.LogitsAll
		}
		man.Methods = append(man.Methods, method(program.MethodPrefill, f.P, pl))
	}
	return man
}

// fakeExec is an Executor whose steps compute a tiny attention model that follows the
// contract's semantics exactly (incoming cache + causal current rows, window, ring slots,
// writes after attention, real rows only), and check every input the runner fills.
type fakeExec struct {
	f fakeSpec

	mu       sync.Mutex
	runs     int
	failAt   int // 1-based run that fails after scribbling on the caches; 0: never
	cancel   func()
	cancelAt int           // run after which cancel is called
	gate     chan struct{} // if set, runs wait for it to close
}

func newFake(f fakeSpec) (*fakeExec, *Runner) {
	fe := &fakeExec{f: f}
	r, err := New(f.manifest(), "fake-"+fmt.Sprint(f), fe, Options{})
	if err != nil {
		panic(err) // the fake's manifest is built valid
	}
	return fe, r
}

var errInjected = errors.New("injected failure")

func (fe *fakeExec) Bind(method string, bufs map[string][]byte) (Step, error) {
	S := 1
	if method == program.MethodPrefill {
		S = fe.f.P
	}
	logitsAll := method == program.MethodPrefill && (fe.f.PrefillLogits == "" || fe.f.PrefillLogits == program.LogitsAll)
	return &fakeStep{fe: fe, S: S, all: logitsAll, bufs: bufs}, nil
}

type fakeStep struct {
	fe   *fakeExec
	S    int
	all  bool
	bufs map[string][]byte
}

func (st *fakeStep) Run(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fe, f := st.fe, st.fe.f
	fe.mu.Lock()
	fe.runs++
	run, gate := fe.runs, fe.gate
	fe.mu.Unlock()
	if gate != nil {
		<-gate
	}
	ids, posIDs, mask := align.AsI64(st.bufs[program.InputIDs]), align.AsI64(st.bufs[program.PositionIDs]), st.bufs[program.AttentionMask]
	pos, C := int(posIDs[0]), f.C
	n := 0
	for i := 0; i < st.S && pos+i < C && mask[i*C+pos+i] != 0; i++ {
		n++
	}
	if n == 0 {
		return fmt.Errorf("fake: no real row")
	}
	for i := 0; i < st.S; i++ {
		if posIDs[i] != int64(pos+i) {
			return fmt.Errorf("fake: position_ids[%d] = %d, want %d", i, posIDs[i], pos+i)
		}
		if i >= n && ids[i] != 0 {
			return fmt.Errorf("fake: padding row %d has id %d, want pad 0", i, ids[i])
		}
		for j := 0; j < C; j++ {
			want := j <= pos+min(i, n-1) && j < pos+n
			if (mask[i*C+j] != 0) != want {
				return fmt.Errorf("fake: attention_mask[%d][%d] = %d, want %v (pos %d, n %d)", i, j, mask[i*C+j], want, pos, n)
			}
		}
	}
	for l := range f.Layers {
		if c := align.AsI64(st.bufs[program.Counter(l)])[0]; c != int64(pos) {
			return fmt.Errorf("fake: counter_%d = %d at position %d", l, c, pos)
		}
	}
	if fe.failAt == run {
		clear(st.bufs[program.KCache(0)][:8])
		align.AsF32(st.bufs[program.KCache(0)])[0] = 42
		return errInjected
	}
	// x: [row][dim] hidden state.
	x := make([][fakeDim]float32, n)
	for i := range x {
		for d := range fakeDim {
			x[i][d] = float32((ids[i]*31+int64(d)*7)%17) / 17
		}
	}
	for l, t := range f.Layers {
		L := f.rows(t)
		kc, vc := align.AsF32(st.bufs[program.KCache(l)]), align.AsF32(st.bufs[program.VCache(l)])
		k := make([][fakeHeads][fakeDim]float32, n)
		v := make([][fakeHeads][fakeDim]float32, n)
		for i := range n {
			for h := range fakeHeads {
				for d := range fakeDim {
					k[i][h][d] = x[i][d]*float32(1+h) + 0.01*float32(l) + 0.001*float32(pos+i)
					v[i][h][d] = x[i][d] - 0.25*float32(h) + 0.1*float32((pos+i)%5)
				}
			}
		}
		out := make([][fakeDim]float32, n)
		for i := range n {
			lo := max(0, pos-L)
			if t == program.LayerSliding {
				lo = max(lo, pos+i-f.W+1)
			}
			for h := range fakeHeads {
				var acc [fakeDim]float32
				var wsum float32
				for a := lo; a <= pos+i; a++ {
					var ka, va []float32
					if a < pos {
						off := (h*L + a%L) * fakeDim
						ka, va = kc[off:off+fakeDim], vc[off:off+fakeDim]
					} else {
						ka, va = k[a-pos][h][:], v[a-pos][h][:]
					}
					w := float32(math.Exp(float64(ka[0]*x[i][0] + ka[1]*0.5)))
					wsum += w
					for d := range fakeDim {
						acc[d] += w * va[d]
					}
				}
				for d := range fakeDim {
					out[i][d] += acc[d] / wsum
				}
			}
		}
		for i := max(0, n-L); i < n; i++ {
			slot := (pos + i) % L
			for h := range fakeHeads {
				off := (h*L + slot) * fakeDim
				copy(kc[off:off+fakeDim], k[i][h][:])
				copy(vc[off:off+fakeDim], v[i][h][:])
			}
		}
		for i := range n {
			for d := range fakeDim {
				x[i][d] = 0.5*x[i][d] + 0.5*out[i][d]
			}
		}
	}
	for l := range f.Layers {
		align.AsI64(st.bufs[program.Counter(l)])[0] = int64(pos + n)
	}
	logits := align.AsF32(st.bufs[program.Logits])
	V := f.V
	for i := range logits {
		logits[i] = float32(math.NaN()) // padding rows must never be read
	}
	for i := range n {
		if !st.all && i != n-1 {
			continue
		}
		row := logits[:V]
		if st.all {
			row = logits[i*V : (i+1)*V]
		}
		for j := range row {
			row[j] = x[i][j%fakeDim]*float32(j+1) + x[i][(j+1)%fakeDim]
		}
	}
	if fe.cancel != nil && run == fe.cancelAt {
		fe.cancel()
	}
	return nil
}
