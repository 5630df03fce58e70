package exec

import (
	"fmt"
	"math"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program"
)

// moeOp is a mixture-of-experts feed-forward layer over every row: each row picks its
// top-k experts from a float32 router, and the rows routed to an expert are gathered and
// multiplied together, so that a pass reads each chosen expert's weights once and never
// reads the others.
type moeOp struct {
	m              *Method
	x, out         operand        // (rows, dim)
	router         kernels.Matrix // (experts, dim), f32
	gate, up, down []kernels.Matrix
	dim, ffn, topK int
	normTopK, gelu bool

	// Routing of the running pass, grown with its rows. Row r chose experts
	// choice[r*topK:(r+1)*topK] with weights weight[...]; members lists, expert by expert
	// (starts[e]..starts[e+1]), the chosen (row, slot) pairs as indices into choice.
	choice  []int32
	weight  []float32
	members []int32
	starts  []int32 // (experts+1)
	order   []int32 // (experts): scratch for the top-k selection
}

func (m *Method) compileMoE(op *program.Op, in []operand, out operand) (op, error) {
	x := in[0]
	if err := wantF32(x, out); err != nil {
		return nil, err
	}
	if x.name == out.name {
		return nil, fmt.Errorf("moe output %q must not be its input", out.name)
	}
	rows, dim := rows2(x)
	if orows, odim := rows2(out); orows != rows || odim != dim {
		return nil, fmt.Errorf("moe of %q %v into %q %v", x.name, x.shape, out.name, out.shape)
	}
	router, err := in[1].matrix()
	if err != nil {
		return nil, err
	}
	experts := (len(in) - 2) / 3
	if router.Type != kernels.F32 || router.Rows != experts || router.Cols != dim {
		return nil, fmt.Errorf("moe router %q is %s [%d,%d], want f32 [%d,%d] (one row per expert)", in[1].name, router.Type, router.Rows, router.Cols, experts, dim)
	}
	o := &moeOp{m: m, x: x, out: out, router: router, dim: dim, topK: op.Attr.TopK,
		normTopK: op.Attr.NormTopK, gelu: op.Attr.Activation == program.ActGELUTanh,
		starts: make([]int32, experts+1), order: make([]int32, experts)}
	for kind, list := range []*[]kernels.Matrix{&o.gate, &o.up, &o.down} {
		for e := range experts {
			w := in[2+kind*experts+e]
			mat, err := w.matrix()
			if err != nil {
				return nil, err
			}
			if o.ffn == 0 {
				o.ffn = mat.Rows
			}
			want := [2]int{o.ffn, dim}
			if kind == 2 {
				want = [2]int{dim, o.ffn}
			}
			if mat.Rows != want[0] || mat.Cols != want[1] {
				return nil, fmt.Errorf("moe expert %d weight %q is [%d,%d], want %v", e, w.name, mat.Rows, mat.Cols, want)
			}
			*list = append(*list, mat)
		}
	}
	m.propagate(x, out)
	return o, nil
}

func (o *moeOp) run(ps *pass) {
	nr := o.m.rowsOf(ps, o.x)
	xs, ys := ps.f32(o.x)[:nr*o.dim], ps.f32(o.out)[:nr*o.dim]
	o.route(ps, xs, nr)
	p, D, F := o.m.prog, o.dim, o.ffn
	xe := align.AsF32(p.shared("moe.x", 4*nr*D))
	ge := align.AsF32(p.shared("moe.gate", 4*nr*F))
	ue := align.AsF32(p.shared("moe.up", 4*nr*F))
	ye := align.AsF32(p.shared("moe.y", 4*nr*D))
	clear(ys)
	for e := range o.gate {
		rows := o.members[o.starts[e]:o.starts[e+1]]
		c := len(rows)
		if c == 0 {
			continue // an expert no row chose: its weights are not read
		}
		for i, k := range rows {
			r := int(k) / o.topK
			copy(xe[i*D:(i+1)*D], xs[r*D:(r+1)*D])
		}
		p.pool.MatMul(ge[:c*F], xe[:c*D], c, o.gate[e], nil)
		p.pool.MatMul(ue[:c*F], xe[:c*D], c, o.up[e], nil)
		for i := range c {
			g, u := ge[i*F:(i+1)*F], ue[i*F:(i+1)*F]
			if o.gelu {
				kernels.GELUTanhMul(g, g, u)
			} else {
				kernels.SiLUMul(g, g, u)
			}
		}
		p.pool.MatMul(ye[:c*D], ge[:c*F], c, o.down[e], nil)
		// Experts are visited in increasing order, so every row sums its experts in
		// that order whatever the other rows chose.
		for i, k := range rows {
			r := int(k) / o.topK
			kernels.Axpy(o.weight[k], ye[i*D:(i+1)*D], ys[r*D:(r+1)*D])
		}
	}
}

// route computes each row's experts and weights from the router, then lists the rows of
// each expert in row order.
func (o *moeOp) route(ps *pass, xs []float32, nr int) {
	E, K := len(o.gate), o.topK
	if len(o.choice) < nr*K {
		o.choice, o.weight, o.members = make([]int32, nr*K), make([]float32, nr*K), make([]int32, nr*K)
	}
	logits := align.AsF32(o.m.prog.shared("moe.router", 4*nr*E))
	o.m.prog.pool.MatMul(logits, xs, nr, o.router, nil)
	for r := range nr {
		o.choose(logits[r*E:(r+1)*E], o.choice[r*K:(r+1)*K], o.weight[r*K:(r+1)*K])
	}
	clear(o.starts)
	for _, e := range o.choice[:nr*K] {
		o.starts[e+1]++
	}
	for e := range E {
		o.starts[e+1] += o.starts[e]
	}
	next := o.order // next free member slot of each expert
	copy(next, o.starts[:E])
	for k, e := range o.choice[:nr*K] {
		o.members[next[e]] = int32(k)
		next[e]++
	}
}

// choose picks the top-k experts of one row's router logits (ties: the lower expert) and
// their softmax probabilities, renormalized over the chosen ones when normTopK. The
// probabilities are computed in float64 and rounded once.
func (o *moeOp) choose(logits []float32, choice []int32, weight []float32) {
	for k := range choice {
		best := int32(-1)
		for e, l := range logits {
			if taken(choice[:k], int32(e)) {
				continue
			}
			if best < 0 || l > logits[best] {
				best = int32(e)
			}
		}
		choice[k] = best
	}
	peak := float64(logits[choice[0]])
	var all, chosen float64
	for _, l := range logits {
		all += math.Exp(float64(l) - peak)
	}
	for _, e := range choice {
		chosen += math.Exp(float64(logits[e]) - peak)
	}
	den := all
	if o.normTopK {
		den = chosen
	}
	for k, e := range choice {
		weight[k] = float32(math.Exp(float64(logits[e])-peak) / den)
	}
}

func taken(chosen []int32, e int32) bool {
	for _, c := range chosen {
		if c == e {
			return true
		}
	}
	return false
}
