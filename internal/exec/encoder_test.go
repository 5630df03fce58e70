package exec_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/exec"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/program/programtest"
)

// A hand-written hf_encode method (one BERT layer, every encoder op) run by the executor
// and by a float64 reference written here from the op semantics of docs/contract.md.

const (
	tV, tT, tP, tD, tH, tF = 11, 2, 6, 8, 2, 12 // vocab, token types, positions, hidden, heads, ffn
	tB, tS                 = 3, 5               // sequences, tokens per sequence
)

type encWeights map[string][]float32

func (w encWeights) add(r *rand.Rand, name string, n int, center float32) {
	v := make([]float32, n)
	for i := range v {
		v[i] = center + float32(r.Float64()*2-1)*0.5
	}
	w[name] = v
}

func f32le(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// encodeProgram writes a one-layer encoder with the given pooling and attention.
func encodeProgram(t *testing.T, pooling string, causal bool) (*exec.Program, encWeights) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	w := encWeights{}
	shapes := map[string]program.Shape{}
	mat := func(name string, rows, cols int) {
		w.add(r, name, rows*cols, 0)
		shapes[name] = program.Shape{rows, cols}
	}
	vec := func(name string, n int, center float32) {
		w.add(r, name, n, center)
		shapes[name] = program.Shape{n}
	}
	mat("word", tV, tD)
	mat("type", tT, tD)
	mat("pos", tP, tD)
	vec("ln0.w", tD, 1)
	vec("ln0.b", tD, 0)
	for _, n := range []string{"wq", "wk", "wv", "wo"} {
		mat(n, tD, tD)
		vec(n+".b", tD, 0)
	}
	vec("ln1.w", tD, 1)
	vec("ln1.b", tD, 0)
	mat("up", tF, tD)
	vec("up.b", tF, 0)
	mat("down", tD, tF)
	vec("down.b", tD, 0)
	vec("ln2.w", tD, 1)
	vec("ln2.b", tD, 0)
	mat("dense", tD, tD)

	md := program.Metadata{Contract: program.EncodeContractName, Version: program.EncodeContractVersion,
		MaxContext: tS, VocabSize: tV, Tokens: program.Tokens{EOS: []int64{}},
		Encoder: &program.Encoder{Batch: tB, Output: program.OutputEmbedding, Dim: tD, TokenTypes: tT, Normalized: true}}
	in, out, err := program.EncodeIO(&md)
	if err != nil {
		t.Fatal(err)
	}
	act := func(name string, rows, width int) program.IO {
		return program.IO{Name: name, DType: program.F32, Shape: program.Shape{rows, width}}
	}
	R := tB * tS
	m := program.Method{Name: program.MethodEncode, Step: R, Inputs: in, Outputs: out,
		Activations: []program.IO{act("x", R, tD), act("h", R, tD), act("q", R, tD), act("k", R, tD), act("v", R, tD),
			act("o", R, tD), act("g", R, tF), act("p", tB, tD), act("d", tB, tD)}}
	op := func(kind program.OpKind, in []string, out string, attr program.Attr) {
		m.Ops = append(m.Ops, program.Op{Kind: kind, In: in, Out: []string{out}, Attr: attr})
	}
	ln := func(x, n string) {
		op(program.OpLayerNorm, []string{x, n + ".w", n + ".b"}, x, program.Attr{Width: tD, Eps: 1e-5})
	}
	op(program.OpEmbed, []string{program.InputIDs, "word"}, "x", program.Attr{Scale: 1})
	op(program.OpEmbed, []string{program.TokenTypeIDs, "type"}, "h", program.Attr{Scale: 1})
	op(program.OpAdd, []string{"x", "h"}, "x", program.Attr{})
	op(program.OpPositionEmbed, []string{"x", "pos"}, "x", program.Attr{})
	ln("x", "ln0")
	for _, n := range []string{"q", "k", "v"} {
		op(program.OpLinear, []string{"x", "w" + n, "w" + n + ".b"}, n, program.Attr{})
	}
	op(program.OpSelfAttention, []string{"q", "k", "v", program.AttentionMask}, "o",
		program.Attr{Heads: tH, KVHeads: tH, HeadDim: tD / tH, VHeadDim: tD / tH, Scale: 0.5, Causal: causal})
	op(program.OpLinear, []string{"o", "wo", "wo.b"}, "h", program.Attr{})
	op(program.OpAdd, []string{"h", "x"}, "x", program.Attr{})
	ln("x", "ln1")
	op(program.OpLinear, []string{"x", "up", "up.b"}, "g", program.Attr{})
	op(program.OpActivation, []string{"g"}, "g", program.Attr{Activation: program.ActGELU})
	op(program.OpLinear, []string{"g", "down", "down.b"}, "h", program.Attr{})
	op(program.OpAdd, []string{"h", "x"}, "x", program.Attr{})
	ln("x", "ln2")
	op(program.OpPool, []string{"x", program.AttentionMask}, "p", program.Attr{Pooling: pooling})
	op(program.OpLinear, []string{"p", "dense"}, "d", program.Attr{})
	op(program.OpActivation, []string{"d"}, "d", program.Attr{Activation: program.ActTanh})
	op(program.OpL2Normalize, []string{"d"}, program.Embeddings, program.Attr{Eps: 1e-12})

	var buf bytes.Buffer
	pw, err := program.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(w))
	for n := range w {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := pw.WriteTensor(n, program.F32, shapes[n], f32le(w[n])); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pw.Finish(md, []program.Method{m}); err != nil {
		t.Fatal(err)
	}
	f, err := program.Decode(programtest.Aligned(buf.Bytes()), program.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := exec.Load(f, exec.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, w
}

// refEncode is the float64 reference of encodeProgram's method for one sequence.
func refEncode(w encWeights, ids, types []int, pooling string, causal bool) []float64 {
	n := len(ids)
	get := func(name string, i, width int) []float64 {
		out := make([]float64, width)
		for j := range out {
			out[j] = float64(w[name][i*width+j])
		}
		return out
	}
	linear := func(x []float64, name string, rows int, bias string) []float64 {
		y := make([]float64, rows)
		for r := range rows {
			wr := get(name, r, len(x))
			for c, v := range x {
				y[r] += wr[c] * v
			}
			if bias != "" {
				y[r] += float64(w[bias][r])
			}
		}
		return y
	}
	layerNorm := func(x []float64, name string) {
		var mean, v float64
		for _, a := range x {
			mean += a
		}
		mean /= float64(len(x))
		for _, a := range x {
			v += (a - mean) * (a - mean)
		}
		v /= float64(len(x))
		for i := range x {
			x[i] = (x[i]-mean)/math.Sqrt(v+1e-5)*float64(w[name+".w"][i]) + float64(w[name+".b"][i])
		}
	}
	x := make([][]float64, n)
	for i := range n {
		x[i] = get("word", ids[i], tD)
		t, p := get("type", types[i], tD), get("pos", i, tD)
		for j := range x[i] {
			x[i][j] += t[j] + p[j]
		}
		layerNorm(x[i], "ln0")
	}
	q, k, v := make([][]float64, n), make([][]float64, n), make([][]float64, n)
	for i := range n {
		q[i], k[i], v[i] = linear(x[i], "wq", tD, "wq.b"), linear(x[i], "wk", tD, "wk.b"), linear(x[i], "wv", tD, "wv.b")
	}
	hd := tD / tH
	for i := range n {
		o := make([]float64, tD)
		for h := range tH {
			end := n
			if causal {
				end = i + 1
			}
			s := make([]float64, end)
			top := math.Inf(-1)
			for j := range end {
				for d := range hd {
					s[j] += q[i][h*hd+d] * k[j][h*hd+d]
				}
				s[j] *= 0.5
				top = max(top, s[j])
			}
			var sum float64
			for j := range s {
				s[j] = math.Exp(s[j] - top)
				sum += s[j]
			}
			for j := range s {
				for d := range hd {
					o[h*hd+d] += s[j] / sum * v[j][h*hd+d]
				}
			}
		}
		a := linear(o, "wo", tD, "wo.b")
		for j := range a {
			a[j] += x[i][j]
		}
		x[i] = a
		layerNorm(x[i], "ln1")
		g := linear(x[i], "up", tF, "up.b")
		for j, z := range g {
			g[j] = 0.5 * z * (1 + math.Erf(z/math.Sqrt2))
		}
		a = linear(g, "down", tD, "down.b")
		for j := range a {
			a[j] += x[i][j]
		}
		x[i] = a
		layerNorm(x[i], "ln2")
	}
	p := make([]float64, tD)
	switch pooling {
	case program.PoolCLS:
		copy(p, x[0])
	case program.PoolLast:
		copy(p, x[n-1])
	case program.PoolMean:
		for i := range n {
			for j := range p {
				p[j] += x[i][j] / float64(n)
			}
		}
	case program.PoolMax:
		copy(p, x[0])
		for i := 1; i < n; i++ {
			for j := range p {
				p[j] = max(p[j], x[i][j])
			}
		}
	}
	p = linear(p, "dense", tD, "")
	var norm float64
	for j := range p {
		p[j] = math.Tanh(p[j])
		norm += p[j] * p[j]
	}
	for j := range p {
		p[j] /= math.Sqrt(norm)
	}
	return p
}

// encodeBuffers binds the encode method to fresh buffers.
func encodeBuffers(t *testing.T, p *exec.Program) (*exec.Step, map[string][]byte) {
	t.Helper()
	m, ok := p.Method(program.MethodEncode)
	if !ok {
		t.Fatal("no encode method")
	}
	bufs := map[string][]byte{}
	for _, list := range [][]program.IO{m.Spec().Inputs, m.Spec().Outputs} {
		for _, b := range list {
			bufs[b.Name] = programtest.Aligned(make([]byte, b.Bytes()))
		}
	}
	s, err := m.Bind(bufs)
	if err != nil {
		t.Fatal(err)
	}
	return s, bufs
}

// fillSequences writes seqs (ids, types) into the batch, garbage in the padding ids.
func fillSequences(bufs map[string][]byte, seqs [][2][]int) {
	ids, types, mask := i64(bufs[program.InputIDs]), i64(bufs[program.TokenTypeIDs]), bufs[program.AttentionMask]
	clear(mask)
	for i := range ids {
		ids[i], types[i] = 7, 0 // padding ids: any valid id, never read
	}
	for b, s := range seqs {
		for i, id := range s[0] {
			ids[b*tS+i], types[b*tS+i], mask[b*tS+i] = int64(id), int64(s[1][i]), 1
		}
	}
}

func f32s(b []byte) []float32 { return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4) }

func TestEncodeMethodMatchesFloat64Reference(t *testing.T) {
	seqs := [][2][]int{
		{{1, 4, 9, 2}, {0, 0, 1, 1}},
		{{3}, {1}},
		{{10, 0, 5, 5, 8}, {0, 1, 0, 1, 0}},
	}
	for _, pooling := range []string{program.PoolCLS, program.PoolMean, program.PoolMax, program.PoolLast} {
		for _, causal := range []bool{false, true} {
			t.Run(fmt.Sprintf("pool=%s/causal=%v", pooling, causal), func(t *testing.T) {
				p, w := encodeProgram(t, pooling, causal)
				s, bufs := encodeBuffers(t, p)
				run := func(seqs [][2][]int) []float32 {
					fillSequences(bufs, seqs)
					if err := s.Run(context.Background()); err != nil {
						t.Fatal(err)
					}
					return slices.Clone(f32s(bufs[program.Embeddings]))
				}
				all := run(seqs)
				for b, sq := range seqs {
					want := refEncode(w, sq[0], sq[1], pooling, causal)
					got := all[b*tD : (b+1)*tD]
					for j := range want {
						if d := math.Abs(float64(got[j]) - want[j]); d > 1e-6 {
							t.Errorf("sequence %d value %d: %g, float64 reference %g (diff %.2g)", b, j, got[j], want[j], d)
						}
					}
					// Alone in the batch, the same bits.
					alone := run(seqs[b : b+1])
					if !slices.Equal(alone[:tD], got) {
						t.Errorf("sequence %d alone differs from in the batch", b)
					}
					if slices.ContainsFunc(alone[tD:], func(v float32) bool { return v != 0 }) {
						t.Errorf("rows of unused sequences are not zero: %v", alone[tD:])
					}
				}
			})
		}
	}
}

func TestEncodeRejectsBadInputsAndChangesNothing(t *testing.T) {
	p, _ := encodeProgram(t, program.PoolMean, false)
	s, bufs := encodeBuffers(t, p)
	good := [][2][]int{{{1, 2}, {0, 1}}, {{3}, {0}}}
	fillSequences(bufs, good)
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(f32s(bufs[program.Embeddings]))
	cases := []struct {
		name   string
		break_ func()
		err    string
	}{
		{"id out of range", func() { i64(bufs[program.InputIDs])[1] = tV }, "outside the table"},
		{"negative id", func() { i64(bufs[program.InputIDs])[tS] = -1 }, "outside the table"},
		{"token type out of range", func() { i64(bufs[program.TokenTypeIDs])[0] = tT }, "token type"},
		{"hole in a row", func() { bufs[program.AttentionMask][3] = 1 }, "after padding"},
		{"used row after an empty one", func() { bufs[program.AttentionMask][2*tS] = 1; clear(bufs[program.AttentionMask][tS : 2*tS]) }, "used after an empty row"},
		{"no token", func() { clear(bufs[program.AttentionMask]) }, "no real token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fillSequences(bufs, good)
			c.break_()
			err := s.Run(context.Background())
			if !errors.Is(err, exec.ErrStep) || !bytes.Contains([]byte(err.Error()), []byte(c.err)) {
				t.Fatalf("error %v, want ErrStep saying %q", err, c.err)
			}
			if got := f32s(bufs[program.Embeddings]); !slices.Equal(got, want) {
				t.Error("a refused step changed the output")
			}
		})
	}
}

func TestEncodeStepAllocatesNothing(t *testing.T) {
	p, _ := encodeProgram(t, program.PoolCLS, false)
	s, bufs := encodeBuffers(t, p)
	fillSequences(bufs, [][2][]int{{{1, 2, 3, 4, 5}, {0, 0, 0, 1, 1}}, {{1, 2, 3, 4, 5}, {0, 0, 0, 1, 1}}, {{1, 2, 3, 4, 5}, {0, 0, 0, 1, 1}}})
	ctx := context.Background()
	if err := s.Run(ctx); err != nil { // the first full call sizes the scratch
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if err := s.Run(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per encode step, want 0", allocs)
	}
}
