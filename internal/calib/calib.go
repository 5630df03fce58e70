// Package calib measures how a float program uses the input channels of each linear layer
// on calibration text: for every weight of a linear op, the mean square of each input
// channel over the calibration tokens. That is the weight column's importance for
// quantization (the diagonal of the layer's input Gram matrix, as in llama.cpp's
// importance matrix): the squared error of a layer's output from an error e[c] in a weight
// row is, on average, sum over c of importance[c] * e[c]^2 when channels are uncorrelated.
//
// It runs the program with the internal executor, after adding to its largest method a
// copy ("tap") of every linear input: a cache_write op into an extra in-place buffer of
// one head, which the caller reads after each step. It owns the embedded default calibration text. It does not quantize
// (internal/kernels does, given these statistics) nor export (internal/export).
package calib

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/exec"
	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program"
)

// defaultText is the embedded calibration text (see default.md for its provenance).
//
//go:embed default.txt
var defaultText string

// DefaultText returns the embedded calibration text: short paragraphs separated by blank lines.
func DefaultText() string { return defaultText }

// Stats holds the statistics of one calibration run.
type Stats struct {
	// Matrices maps the name of each linear weight [N, K] to its inputs' statistics over the
	// calibration tokens: Importance [K] the mean square of each input channel, and with
	// Options.Gram, Gram [K][K] the mean of x xᵀ. Caller-owned.
	Matrices map[string]kernels.Calibration
	// Tokens is the number of token positions the means are over.
	Tokens int
}

// DefaultMaxGram is the Options.MaxGram the command line uses: Gram matrices for models as
// small as stories260K (inputs of at most 256 channels), the diagonal alone for larger ones.
const DefaultMaxGram = 256

// Options configure Collect.
type Options struct {
	// Threads for matrix products; must be ≥ 1.
	Threads int
	// MaxGram is the widest linear input (K channels) whose Gram matrix is collected too,
	// for error-compensating quantization (K×K float64 per distinct input while running,
	// and K² operations per token: 8 MiB for K = 1024); 0 collects none. Inputs wider than
	// an eighth of the calibration tokens get none either: fewer samples leave the matrix
	// nearly singular, and compensating along it fits the calibration text, not the model.
	MaxGram int
	// Rotate is the export.Options.Rotate of the program the statistics are for: Run and
	// RunSelf measure the float model exported with it (the inputs of a rotated program's
	// matrices are in the rotated basis). "" means none.
	Rotate string
}

// gramSamplesPerChannel is how many calibration tokens per input channel a Gram matrix needs.
const gramSamplesPerChannel = 8

// ErrInput reports calibration input that cannot be run (empty, too long, bad ids).
var ErrInput = errors.New("calibration input")

// tap is one copied linear input.
type tap struct {
	name    string    // the method output holding the copy, [1, S, K]
	width   int       // K
	weights []string  // the linear weights reading this input
	sum     []float64 // [width]: sum of x[c]^2
	gram    []float64 // [width][width]: sum of x xᵀ, lower triangle (Options.Gram)
}

// Collect runs every sequence (token ids, each starting a fresh context) through f, a float
// program of the hf_static contract, and returns the importance of every linear weight's
// input channels. Sequences longer than the program's context are an error. Deterministic:
// the same program and sequences give the same statistics.
func Collect(ctx context.Context, f *program.File, sequences [][]int, opts Options) (*Stats, error) {
	if opts.Threads < 1 {
		return nil, fmt.Errorf("calib: Options.Threads = %d, must be ≥ 1", opts.Threads)
	}
	C := f.Manifest.Metadata.MaxContext
	total := 0
	for i, seq := range sequences {
		if len(seq) == 0 || len(seq) > C {
			return nil, fmt.Errorf("%w: sequence %d has %d tokens, want 1..%d (the program's context)", ErrInput, i, len(seq), C)
		}
		for _, id := range seq {
			if id < 0 || id >= f.Manifest.Metadata.VocabSize {
				return nil, fmt.Errorf("%w: sequence %d holds token id %d, outside the vocabulary of %d", ErrInput, i, id, f.Manifest.Metadata.VocabSize)
			}
		}
		total += len(seq)
	}
	if total == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrInput)
	}
	var base *program.Method
	for i := range f.Manifest.Methods {
		if m := &f.Manifest.Methods[i]; base == nil || m.Step > base.Step {
			base = m
		}
	}
	tapped, taps, tables, err := addTaps(base, &f.Manifest)
	if err != nil {
		return nil, err
	}
	for _, t := range taps {
		if t.width <= opts.MaxGram && t.width*gramSamplesPerChannel <= total {
			t.gram = make([]float64, t.width*t.width)
		}
	}
	data, err := rewrite(f, tapped)
	if err != nil {
		return nil, err
	}
	pf, err := program.Decode(data, program.DecodeOptions{SkipDataChecksums: true})
	if err != nil {
		return nil, fmt.Errorf("calib: tapped program: %w", err)
	}
	xp, err := exec.Load(pf, exec.Options{Threads: opts.Threads})
	if err != nil {
		return nil, fmt.Errorf("calib: tapped program: %w", err)
	}
	defer xp.Close()
	m, _ := xp.Method(tapped.Name)
	r, err := newRun(m, C, f.Manifest.Metadata.Tokens.Pad)
	if err != nil {
		return nil, err
	}
	for _, seq := range sequences {
		if err := r.sequence(ctx, seq, taps); err != nil {
			return nil, err
		}
	}
	st := &Stats{Matrices: map[string]kernels.Calibration{}, Tokens: total}
	for _, t := range taps {
		var cal kernels.Calibration
		cal.Importance = make([]float32, t.width)
		for c, s := range t.sum {
			cal.Importance[c] = float32(s / float64(total))
		}
		if t.gram != nil {
			cal.Gram = make([]float32, t.width*t.width)
			for i := range t.width {
				for j := 0; j <= i; j++ {
					v := float32(t.gram[i*t.width+j] / float64(total))
					cal.Gram[i*t.width+j], cal.Gram[j*t.width+i] = v, v
				}
			}
		}
		for _, w := range t.weights {
			if prev, ok := st.Matrices[w]; ok { // a weight read at two places: add the uses
				addTo(prev.Importance, cal.Importance)
				addTo(prev.Gram, cal.Gram)
				continue
			}
			st.Matrices[w] = kernels.Calibration{Importance: slices.Clone(cal.Importance), Gram: slices.Clone(cal.Gram)}
		}
	}
	for name := range tables {
		if cal, ok := st.Matrices[name]; ok {
			st.Matrices[name] = lookupToo(cal)
		}
	}
	return st, nil
}

// lookupWeight is how much a tied embedding's plain squared error (its rows looked up as
// they are) counts next to its error as the output head, whose statistics are normalized
// to a mean square of 1 per input channel. 1 would count both alike; less favours the
// head, whose errors reach every logit (stories260K, tuning text: KL 0.049 at 0.3, 0.051
// at 1, with q4 embedding and calibration).
const lookupWeight = 0.3

// lookupToo adapts the statistics of a matrix that is also an embedding table (tied
// embeddings): each of its rows is also read as it is, where every column matters alike.
// The statistics are normalized to a mean square of 1 per channel and lookupWeight is
// added to the diagonal: importance[c]/mean + lookupWeight, Gram/mean + lookupWeight·I.
func lookupToo(cal kernels.Calibration) kernels.Calibration {
	var mean float64
	for _, v := range cal.Importance {
		mean += float64(v)
	}
	mean /= float64(len(cal.Importance))
	if !(mean > 0) {
		mean = 1
	}
	n := len(cal.Importance)
	out := kernels.Calibration{Importance: make([]float32, n)}
	for c, v := range cal.Importance {
		out.Importance[c] = float32(float64(v)/mean + lookupWeight)
	}
	if cal.Gram != nil {
		out.Gram = make([]float32, n*n)
		for i, v := range cal.Gram {
			out.Gram[i] = float32(float64(v) / mean)
		}
		for c := range n {
			out.Gram[c*n+c] += lookupWeight
		}
	}
	return out
}

func addTo(dst, src []float32) {
	for i := range min(len(dst), len(src)) {
		dst[i] += src[i]
	}
}

// addTaps returns a copy of m with, before every linear op, a copy of its input into a new
// output, shared by consecutive linear ops that read the same unchanged input; and the
// names of the embedding tables m looks rows up in.
func addTaps(m *program.Method, man *program.Manifest) (program.Method, []*tap, map[string]bool, error) {
	out := *m
	out.Name = "calibrate"
	out.Inputs = slices.Clone(m.Inputs)
	out.Outputs = slices.Clone(m.Outputs)
	out.Ops = nil
	var taps []*tap
	live := map[string]*tap{} // activation name → its tap while unchanged
	tables := map[string]bool{}
	for _, op := range m.Ops {
		if op.Kind == program.OpEmbed {
			tables[op.In[1]] = true
		}
		if op.Kind == program.OpLinear {
			x, w := op.In[0], op.In[1]
			wt, ok := man.Tensor(w)
			if !ok || len(wt.Shape) != 2 {
				return program.Method{}, nil, nil, fmt.Errorf("calib: linear weight %q is not a constant matrix", w)
			}
			k := wt.Shape[1]
			t := live[x]
			if t == nil {
				t = &tap{name: fmt.Sprintf("calib.tap.%d", len(taps)), width: k, sum: make([]float64, k)}
				taps = append(taps, t)
				live[x] = t
				// A one-head "cache" of step rows: row i of a step at a multiple of the step
				// lands in slot i.
				io := program.IO{Name: t.name, DType: program.F32, Shape: program.Shape{1, 1, m.Step, k}}
				out.Inputs = append(out.Inputs, io)
				out.Outputs = append(out.Outputs, io)
				out.Ops = append(out.Ops, program.Op{Kind: program.OpCacheWrite, In: []string{x, t.name}, Out: []string{t.name}})
			}
			if t.width != k {
				return program.Method{}, nil, nil, fmt.Errorf("calib: %q is read as %d and %d channels", x, t.width, k)
			}
			t.weights = append(t.weights, w)
		}
		out.Ops = append(out.Ops, op)
		for _, o := range op.Out {
			delete(live, o)
		}
	}
	if len(taps) == 0 {
		return program.Method{}, nil, nil, fmt.Errorf("calib: method %q has no linear op", m.Name)
	}
	return out, taps, tables, nil
}

// rewrite writes f's tensors and the one tapped method into a new program held in aligned
// memory.
func rewrite(f *program.File, m program.Method) ([]byte, error) {
	var buf bytes.Buffer
	w, err := program.NewWriter(&buf)
	if err != nil {
		return nil, err
	}
	for _, t := range f.Manifest.Tensors {
		_, data, _ := f.TensorData(t.Name)
		if err := w.WriteTensor(t.Name, t.DType, t.Shape, data); err != nil {
			return nil, err
		}
	}
	if _, err := w.Finish(f.Manifest.Metadata, []program.Method{m}); err != nil {
		return nil, fmt.Errorf("calib: tapped program: %w", err)
	}
	data := align.Bytes(buf.Len())
	copy(data, buf.Bytes())
	return data, nil
}

// run is the tapped method bound to its buffers.
type run struct {
	step     *exec.Step
	bufs     map[string][]byte
	S, C     int
	ids, pos []int64
	mask     []byte
	counters [][]int64
	pad      int64
}

func newRun(m *exec.Method, C int, pad int64) (*run, error) {
	spec := m.Spec()
	r := &run{bufs: map[string][]byte{}, S: spec.Step, C: C, pad: pad}
	for _, list := range [][]program.IO{spec.Inputs, spec.Outputs} {
		for _, b := range list {
			if _, ok := r.bufs[b.Name]; !ok {
				r.bufs[b.Name] = align.Bytes(b.Bytes())
			}
		}
	}
	for _, b := range spec.Inputs {
		if b.DType == program.I64 && len(b.Shape) == 0 {
			r.counters = append(r.counters, align.AsI64(r.bufs[b.Name]))
		}
	}
	r.ids, r.pos = align.AsI64(r.bufs[program.InputIDs]), align.AsI64(r.bufs[program.PositionIDs])
	r.mask = r.bufs[program.AttentionMask]
	if r.ids == nil || r.pos == nil || r.mask == nil {
		return nil, fmt.Errorf("calib: method %q lacks the hf_static inputs", spec.Name)
	}
	step, err := m.Bind(r.bufs)
	if err != nil {
		return nil, fmt.Errorf("calib: %w", err)
	}
	r.step = step
	return r, nil
}

// sequence runs seq from position 0 in steps of S rows (the last padded) and adds the
// squares of every real row of each tap to its sums.
func (r *run) sequence(ctx context.Context, seq []int, taps []*tap) error {
	for pos := 0; pos < len(seq); pos += r.S {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(r.S, len(seq)-pos)
		clear(r.mask)
		for i := range r.S {
			r.ids[i] = r.pad
			if i < n {
				r.ids[i] = int64(seq[pos+i])
			}
			r.pos[i] = int64(min(pos+i, r.C-1))
			// Row i sees positions 0..pos+min(i, n-1); padding rows are not real.
			for j := 0; j <= pos+min(i, n-1); j++ {
				r.mask[i*r.C+j] = 1
			}
		}
		for _, c := range r.counters {
			c[0] = int64(pos)
		}
		if err := r.step.Run(ctx); err != nil {
			return fmt.Errorf("calib: step at position %d: %w", pos, err)
		}
		for _, t := range taps {
			x := align.AsF32(r.bufs[t.name]) // [S][width]: row i in slot (pos+i) mod S = i
			for i := range n {
				row := x[i*t.width : (i+1)*t.width]
				for c, v := range row {
					t.sum[c] += float64(v) * float64(v)
				}
				if t.gram != nil {
					for a, va := range row {
						g := t.gram[a*t.width : a*t.width+a+1]
						for b, vb := range row[:a+1] {
							g[b] += float64(va) * float64(vb)
						}
					}
				}
			}
		}
	}
	return nil
}
