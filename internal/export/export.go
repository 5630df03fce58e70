// Package export turns a Hugging Face checkpoint into an hfstatic program: it validates the
// config through the architecture registry, converts and shape-checks every weight,
// computes RoPE tables, builds the decode and prefill methods and writes the program file.
// It does not execute anything.
package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hfstatic/hfstatic/internal/arch"
	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/internal/onnx"
	"github.com/hfstatic/hfstatic/program"
)

// Version identifies this exporter in program metadata.
const Version = "hfstatic-export/1"

// MaxDefaultContext caps the context taken from a model's max_position_embeddings.
const MaxDefaultContext = 4096

// Options configure an export. The zero value of each field documents its default.
type Options struct {
	// Context is the program's capacity C; 0 takes the model's max_position_embeddings,
	// capped at MaxDefaultContext.
	Context int
	// Prefill is the prefill step P; 0 exports the decode method only.
	Prefill int
	// PrefillLogits selects the rows the prefill method returns; "" means last.
	PrefillLogits program.LogitsRows
	// CacheDType is f16 or f32; "" means f16.
	CacheDType program.DType
	// Weights is the weight type of matrices (f32, f16, bf16, q8, q4); "" keeps the
	// checkpoint's float type.
	Weights string
	// Matrices quantized to q8 or q4 whose columns are not a multiple of the 32-column block
	// are stored in f16 (bf16 for bf16 checkpoints or values beyond ±65504) instead.
	//
	// EmbedWeights is the type of the embedding and output (lm_head) matrices; "" means
	// q8 when Weights is q4 (they are the most sensitive to quantization), else Weights.
	EmbedWeights string
	// Keep lists checkpoint tensor names kept in the checkpoint's float type when quantizing.
	Keep []string
	// TensorWeights overrides Weights and EmbedWeights for some matrices, as llama-quantize's
	// --tensor-type does: each rule's Type (f32, f16, bf16, q8, q4) applies to the matrices
	// whose program tensor name contains its Match (the first matching rule wins; Keep still
	// wins over all). A rule that matches no matrix is an error. For example {Match: "v_proj",
	// Type: "q8"} keeps the value projections in q8 in a q4 program, as llama.cpp's Q4_K_M
	// keeps attn_v in a wider type (docs/quantization.md).
	TensorWeights []TensorWeight
	// SlidingLayout is ring (default when "") or full.
	SlidingLayout program.SlidingLayout
	// Calibration maps a matrix's checkpoint name to a description of its inputs (from
	// internal/calib) for quantizing it to q8 or q4 with less error on such inputs.
	// Matrices it does not name, and nil, use the plain squared error.
	Calibration map[string]kernels.Calibration
	// Progress, if set, is called after each tensor is written.
	Progress func(Progress)
	// Model and Writer are recorded in the program's source metadata: what was exported
	// (a folder name or ORG/NAME) and the version of the program writing it; "" omits them.
	Model, Writer string
	// Delegate adds, beside the op lists, each method as a graph for another engine:
	// DelegateONNX stores ONNX graphs (internal/onnx) as assets; "" stores none.
	Delegate string
	// Task is what the program does: TaskGenerate (hf_static: decode and prefill), TaskEmbed
	// or TaskRerank (hf_encode: one embedding per text, one score per query and document);
	// "" means DefaultTask's choice for the checkpoint. Prefill, PrefillLogits, CacheDType
	// and SlidingLayout concern generation: embedding and reranking programs ignore them.
	Task Task
	// Batch is the sequences one call of an embedding or reranking program takes; 0 means
	// DefaultBatch. With them, Context is the tokens per sequence (0: the model's
	// sentence-transformers max_seq_length, else its longest, capped at
	// MaxDefaultEncodeContext).
	Batch int
	// Pooling overrides an embedding program's pooling (program.PoolCLS, PoolMean, PoolMax,
	// PoolLast); "" keeps sentence-transformers' Pooling module, else the model's default
	// (mean for an encoder, the last token for a decoder).
	Pooling string
	// Matryoshka declares that an embedding model was trained so that its embeddings can be
	// truncated (config.json's is_matryoshka or matryoshka_dimensions say so too).
	Matryoshka bool
	// Rotate is RotateHadamard or RotateNone: whether the residual stream is rotated before
	// the weights are converted: the pre-norms' gains fused into the matrices that read them,
	// then every matrix reading the stream multiplied by a fixed orthogonal matrix Q (W·Q) and
	// every matrix writing it by Qᵀ (Qᵀ·W). The float model is unchanged (up to rounding). A
	// tied output projection is written untied (the final norm's gain is fused into it): one
	// more [vocab, hidden] matrix. Only for plain pre-norm graphs (not Gemma 2/3 or OLMo 2)
	// whose hidden size has a power-of-two factor ≥ 32; with Calibration, the statistics must
	// come from the rotated float model (calib.Options.Rotate). "" means none.
	Rotate string
}

// TensorWeight is one rule of Options.TensorWeights.
type TensorWeight struct {
	Match string // a substring of the program tensor name (as `hfstatic inspect` lists them)
	Type  string // f32, f16, bf16, q8 or q4
}

// DelegateONNX is the Options.Delegate that stores each method's ONNX graph.
const DelegateONNX = "onnx"

// Progress reports export progress.
type Progress struct {
	Tensor       string
	Done, Total  int
	BytesWritten int64
}

// Summary describes a written program.
type Summary struct {
	Fingerprint  string
	Architecture string
	Spec         string
	Bytes        int64
	Context      int
	Prefill      int
	Tensors      []program.Tensor
	// Ignored lists the checkpoint tensors the program does not use, sorted (a multimodal
	// folder's vision tower and projector; nil when every tensor is read).
	Ignored []string
	// Task is what the program does.
	Task Task
	// Notes are things the exporter worked around, for the user to read.
	Notes []string
}

// TensorError reports a checkpoint tensor that is missing or has the wrong shape or dtype.
type TensorError struct {
	Name    string
	Problem string
}

func (e *TensorError) Error() string { return fmt.Sprintf("tensor %q: %s", e.Name, e.Problem) }

// ErrOptions reports invalid export options.
var ErrOptions = errors.New("invalid export option")

// Export writes the program for ckpt to w.
func Export(ctx context.Context, ckpt *hf.Checkpoint, w io.Writer, opts Options) (*Summary, error) {
	if len(ckpt.Config.Architectures) == 0 {
		return nil, fmt.Errorf("config.json: architectures is empty; cannot tell the model family (supported: %v)", arch.Supported())
	}
	name := ckpt.Config.Architectures[0]
	task := opts.Task
	if task == "" {
		task = DefaultTask(ckpt)
	}
	if !task.valid() {
		return nil, fmt.Errorf("%w: task %q: want %s, %s or %s", ErrOptions, task, TaskGenerate, TaskEmbed, TaskRerank)
	}
	if task != TaskGenerate {
		return exportEncode(ctx, ckpt, w, opts, name, task)
	}
	if opts.Batch != 0 || opts.Pooling != "" || opts.Matryoshka {
		return nil, fmt.Errorf("%w: batch, pooling and matryoshka are for embedding and reranking programs", ErrOptions)
	}
	a, err := arch.Lookup(name)
	if err != nil {
		return nil, err
	}
	spec, trained, err := a.Spec(ckpt.Config.Raw)
	if err != nil {
		return nil, err
	}
	plan, err := newPlan(ckpt, spec, trained, opts)
	if err != nil {
		return nil, err
	}
	plan.arch = name
	return plan.write(ctx, w)
}

type plan struct {
	ckpt    *hf.Checkpoint
	spec    *decoder.Spec
	arch    string
	opts    Options
	context int
	weights kernels.WeightType
	embed   kernels.WeightType // embedding and output matrices
	keep    map[string]bool
	rules   []typeRule         // Options.TensorWeights, parsed
	float   kernels.WeightType // the checkpoint's float type
	// src maps a tensor name of the spec (and the program) to the checkpoint's: one of the
	// spec's Layouts, or the identity.
	src decoder.Layout
	// rot rotates the residual stream (nil: no rotation); untied is set when the checkpoint
	// ties the output projection to the embedding but the program cannot (the final norm's
	// gain is fused into the projection): the spec is then untied and its LMHead read from
	// the embedding.
	rot    *rotation
	untied bool
}

func newPlan(ckpt *hf.Checkpoint, spec *decoder.Spec, trained int, opts Options) (*plan, error) {
	p := &plan{ckpt: ckpt, spec: spec, opts: opts, keep: map[string]bool{}}
	p.context = opts.Context
	if p.context == 0 {
		p.context = min(trained, MaxDefaultContext)
	}
	if p.context < 1 {
		return nil, fmt.Errorf("%w: context %d must be ≥ 1", ErrOptions, p.context)
	}
	if opts.Prefill < 0 || opts.Prefill == 1 || opts.Prefill > p.context {
		return nil, fmt.Errorf("%w: prefill %d must be 0 (none) or 2..context (%d)", ErrOptions, opts.Prefill, p.context)
	}
	if p.opts.PrefillLogits == "" {
		p.opts.PrefillLogits = program.LogitsLast
	}
	if p.opts.PrefillLogits != program.LogitsLast && p.opts.PrefillLogits != program.LogitsAll {
		return nil, fmt.Errorf("%w: prefill logits %q must be all or last", ErrOptions, p.opts.PrefillLogits)
	}
	if p.opts.CacheDType == "" {
		p.opts.CacheDType = program.F16
	}
	if p.opts.CacheDType != program.F16 && p.opts.CacheDType != program.F32 {
		return nil, fmt.Errorf("%w: cache dtype %q must be f16 or f32 (caches stay float)", ErrOptions, p.opts.CacheDType)
	}
	if opts.Delegate != "" && opts.Delegate != DelegateONNX {
		return nil, fmt.Errorf("%w: delegate %q must be %q or none", ErrOptions, opts.Delegate, DelegateONNX)
	}
	if p.opts.SlidingLayout == "" {
		p.opts.SlidingLayout = program.LayoutRing
	}
	if p.opts.SlidingLayout != program.LayoutRing && p.opts.SlidingLayout != program.LayoutFull {
		return nil, fmt.Errorf("%w: sliding layout %q must be ring or full", ErrOptions, p.opts.SlidingLayout)
	}
	src, err := layout(ckpt, spec)
	if err != nil {
		return nil, err
	}
	p.src = src
	if err := p.chooseTypes(src(spec.Names.Embed), matrixNames(spec)); err != nil {
		return nil, err
	}
	if err := p.checkClaims(); err != nil {
		return nil, err
	}
	if err := p.planRotation(); err != nil {
		return nil, err
	}
	if err := checkAssets(ckpt.TokenizerJSON, ckpt.TokenizerConfigJSON); err != nil {
		return nil, err
	}
	return p, nil
}

// chooseTypes sets the weight types of the program's matrices from the options: the
// checkpoint's float type (that of its tensor embed) unless Weights says otherwise, the
// embedding type, the TensorWeights rules (each must match one of matrices, the program's
// matrix names) and the tensors kept in the float type.
func (p *plan) chooseTypes(embed string, matrices []string) error {
	opts := p.opts
	t, _ := p.ckpt.Tensor(embed)
	switch t.DType.String() {
	case "F16":
		p.float = kernels.F16
	case "BF16":
		p.float = kernels.BF16
	default:
		p.float = kernels.F32
	}
	p.weights = p.float
	if opts.Weights != "" {
		t, err := kernels.ParseWeightType(opts.Weights)
		if err != nil {
			return fmt.Errorf("%w: weights: %v", ErrOptions, err)
		}
		p.weights = t
	}
	p.embed = p.weights
	if p.weights == kernels.Q4 {
		p.embed = kernels.Q8
	}
	if opts.EmbedWeights != "" {
		t, err := kernels.ParseWeightType(opts.EmbedWeights)
		if err != nil {
			return fmt.Errorf("%w: embed weights: %v", ErrOptions, err)
		}
		p.embed = t
	}
	for _, r := range opts.TensorWeights {
		t, err := kernels.ParseWeightType(r.Type)
		if err != nil {
			return fmt.Errorf("%w: tensor weights %s=%s: %v", ErrOptions, r.Match, r.Type, err)
		}
		if r.Match == "" || !slices.ContainsFunc(matrices, func(n string) bool { return strings.Contains(n, r.Match) }) {
			return fmt.Errorf("%w: tensor weights %q=%s matches no weight matrix of the program", ErrOptions, r.Match, r.Type)
		}
		p.rules = append(p.rules, typeRule{r.Match, t})
	}
	for _, n := range opts.Keep {
		if _, ok := p.ckpt.Tensor(n); !ok {
			return fmt.Errorf("%w: --weights-keep names %q, which is not in the checkpoint", ErrOptions, n)
		}
		p.keep[n] = true
	}
	return nil
}

// layout picks the first of the spec's layouts under which the checkpoint has the
// embedding (the identity when the spec has none).
func layout(ckpt *hf.Checkpoint, spec *decoder.Spec) (decoder.Layout, error) {
	layouts := spec.Layouts
	if len(layouts) == 0 {
		layouts = []decoder.Layout{func(n string) string { return n }}
	}
	var tried []string
	for _, l := range layouts {
		name := l(spec.Names.Embed)
		if _, ok := ckpt.Tensor(name); ok {
			return l, nil
		}
		tried = append(tried, name)
	}
	if len(tried) == 1 {
		return nil, &TensorError{Name: tried[0], Problem: "missing from the checkpoint"}
	}
	return nil, &TensorError{Name: tried[0], Problem: fmt.Sprintf("missing from the checkpoint (nor under %q)", tried[1:])}
}

// ignored lists the checkpoint tensors that no weight of the spec reads, sorted.
func (p *plan) ignored() []string {
	read := map[string]bool{}
	for _, w := range p.spec.Weights() {
		if w.Role != decoder.LMHead || !p.untied {
			read[p.src(w.Name)] = true
		}
	}
	var out []string
	for _, n := range p.ckpt.Names() {
		if !read[n] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func (p *plan) write(ctx context.Context, w io.Writer) (*Summary, error) {
	cw := &countingWriter{w: w}
	pw, err := program.NewWriter(cw)
	if err != nil {
		return nil, err
	}
	items := p.spec.Weights()
	layerTypes := slices.Compact(slices.Sorted(slices.Values(p.spec.LayerTypes)))
	total := len(items) + 2*len(layerTypes)
	done := 0
	report := func(name string) {
		done++
		if p.opts.Progress != nil {
			p.opts.Progress(Progress{Tensor: name, Done: done, Total: total, BytesWritten: cw.n})
		}
	}
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := p.writeWeight(pw, it); err != nil {
			return nil, err
		}
		report(it.Name)
	}
	for _, t := range layerTypes {
		cos, sin := p.spec.RoPETables(t, p.context)
		half := p.spec.Rotary() / 2
		cn, sn := decoder.RoPETableNames(t)
		if err := pw.WriteTensor(cn, program.F32, program.Shape{p.context, half}, f32Bytes(cos)); err != nil {
			return nil, err
		}
		report(cn)
		if err := pw.WriteTensor(sn, program.F32, program.Shape{p.context, half}, f32Bytes(sin)); err != nil {
			return nil, err
		}
		report(sn)
	}
	for _, asset := range []struct {
		name string
		data []byte
	}{{program.AssetTokenizer, p.ckpt.TokenizerJSON}, {program.AssetTokenizerConfig, p.ckpt.TokenizerConfigJSON}} {
		if asset.data != nil {
			if err := pw.WriteAsset(asset.name, asset.data); err != nil {
				return nil, err
			}
		}
	}
	meta := p.metadata()
	methods := []program.Method{p.spec.Method(&meta, program.MethodDecode, 1, program.LogitsLast)}
	if p.opts.Prefill > 0 {
		methods = append(methods, p.spec.Method(&meta, program.MethodPrefill, p.opts.Prefill, p.opts.PrefillLogits))
	}
	if p.opts.Delegate == DelegateONNX {
		assets, err := onnx.Build(&program.Manifest{Metadata: meta, Tensors: pw.Tensors(), Methods: methods}, p.opts.Writer)
		if err != nil {
			return nil, err
		}
		for _, a := range assets {
			if err := pw.WriteAsset(a.Name, a.Data); err != nil {
				return nil, err
			}
		}
	}
	fp, err := pw.Finish(meta, methods)
	if err != nil {
		return nil, fmt.Errorf("finish program: %w", err)
	}
	return &Summary{Fingerprint: fp, Architecture: p.arch, Spec: p.spec.Describe(), Bytes: cw.n,
		Context: p.context, Prefill: p.opts.Prefill, Tensors: pw.Tensors(), Ignored: p.ignored(), Task: TaskGenerate}, nil
}

// writeWeight writes checkpoint tensor it into the program: as it is, or cut into its
// Parts (a fused q/k/v or gate/up matrix), each converted as if the checkpoint held it.
func (p *plan) writeWeight(pw *program.Writer, it decoder.Weight) error {
	name := p.src(it.Name) // the checkpoint's name; the program keeps it.Name
	if it.Role == decoder.LMHead && p.untied {
		name = p.src(p.spec.Names.Embed)
	}
	t, ok := p.ckpt.Tensor(name)
	if !ok {
		return &TensorError{Name: name, Problem: "missing from the checkpoint"}
	}
	if !slices.Equal(t.Shape, []int(it.Shape)) {
		return &TensorError{Name: name, Problem: fmt.Sprintf("shape %v, the config implies %v", t.Shape, it.Shape)}
	}
	vals, _, err := p.ckpt.Float32(name)
	if err != nil {
		return &TensorError{Name: name, Problem: err.Error()}
	}
	if len(it.Parts) == 0 {
		return p.writeValues(pw, it, name, vals)
	}
	for _, part := range it.Parts {
		n := part.Shape.Elems()
		if err := p.writeValues(pw, part, name, vals[:n]); err != nil {
			return err
		}
		vals = vals[n:]
	}
	return nil
}

// writeValues converts the values of weight it, read from checkpoint tensor name, to the
// program's type for its role and writes them.
func (p *plan) writeValues(pw *program.Writer, it decoder.Weight, name string, vals []float32) error {
	fused, err := p.rotate(it, vals)
	if err != nil {
		return &TensorError{Name: name, Problem: err.Error()}
	}
	// Norms and biases stay f32, and so does a router: quantized programs then choose the
	// experts float ones do wherever the router's margins exceed the rounding.
	if !isMatrix(it.Role) {
		if decoder.IsNorm(it.Role) && p.spec.NormOffset != 0 && !fused {
			for i := range vals {
				vals[i] += p.spec.NormOffset
			}
		}
		return pw.WriteTensor(it.Name, program.F32, it.Shape, f32Bytes(vals))
	}
	return p.writeMatrix(pw, it.Name, name, it.Shape, vals, it.Role == decoder.Embed || it.Role == decoder.LMHead)
}

// writeMatrix writes matrix name (checkpoint tensor src) in the program's weight type, or
// its embedding type when embed is set, as the options' rules and kept tensors amend them.
func (p *plan) writeMatrix(pw *program.Writer, name, src string, shape program.Shape, vals []float32, embed bool) error {
	wt := p.weights
	if embed {
		wt = p.embed
	}
	for _, r := range p.rules {
		if strings.Contains(name, r.match) {
			wt = r.t
			break
		}
	}
	rows, cols := shape[0], shape[1]
	if (wt == kernels.Q8 || wt == kernels.Q4) && cols%kernels.BlockSize != 0 {
		// A partial last block costs a whole one and its products take the slower routes;
		// llama.cpp's quantizer makes the same choice.
		wt = kernels.F16
		if p.float == kernels.BF16 || slices.ContainsFunc(vals, func(v float32) bool { return v > 65504 || v < -65504 }) {
			wt = kernels.BF16 // bf16 checkpoints, and values beyond binary16's range
		}
	}
	if p.keep[src] {
		wt = p.float
	}
	buf := make([]byte, rows*wt.RowBytes(cols))
	if err := kernels.QuantizeCalibrated(wt, buf, vals, rows, cols, p.opts.Calibration[name]); err != nil {
		return &TensorError{Name: src, Problem: err.Error()}
	}
	return pw.WriteTensor(name, programDType(wt), shape, buf)
}

// typeRule is a parsed TensorWeight.
type typeRule struct {
	match string
	t     kernels.WeightType
}

// matrixNames lists the program names of spec's weight matrices: a fused matrix is written
// as its parts, so only they are named.
func matrixNames(spec *decoder.Spec) []string {
	var names []string
	for _, w := range spec.Weights() {
		parts := w.Parts
		if len(parts) == 0 {
			parts = []decoder.Weight{w}
		}
		for _, part := range parts {
			if isMatrix(part.Role) {
				names = append(names, part.Name)
			}
		}
	}
	return names
}

// isMatrix reports whether weights of role r are matrices whose type the options choose
// (not norms, biases or a router, which stay f32).
func isMatrix(r decoder.Role) bool {
	return !decoder.IsNorm(r) && !decoder.IsBias(r) && r != decoder.Router
}

func programDType(t kernels.WeightType) program.DType {
	switch t {
	case kernels.F16:
		return program.F16
	case kernels.BF16:
		return program.BF16
	case kernels.Q8:
		return program.Q8
	case kernels.Q4:
		return program.Q4
	}
	return program.F32
}

// tokens are the special token ids of the checkpoint's configs; pad falls back to the first
// EOS id.
func (p *plan) tokens() program.Tokens {
	g := p.ckpt.Generation
	tok := program.Tokens{EOS: []int64{}}
	if g.BOSID != nil {
		b := int64(*g.BOSID)
		tok.BOS = &b
	}
	for _, e := range g.EOSIDs {
		tok.EOS = append(tok.EOS, int64(e))
	}
	switch {
	case g.PadID != nil:
		tok.Pad = int64(*g.PadID)
	case len(tok.EOS) > 0:
		tok.Pad = tok.EOS[0]
	}
	return tok
}

func (p *plan) metadata() program.Metadata {
	tok := p.tokens()
	window := 0
	if slices.Contains(p.spec.LayerTypes, program.LayerSliding) {
		window = p.spec.Window
	}
	return program.Metadata{
		Contract: program.ContractName, Version: program.ContractVersion,
		MaxContext: p.context, VocabSize: p.spec.Vocab,
		CacheDType: p.opts.CacheDType, SlidingWindow: window, SlidingLayout: p.opts.SlidingLayout,
		Layers: p.spec.MetadataLayers(p.context, p.opts.SlidingLayout),
		Tokens: tok,
		Source: program.Source{Architecture: p.arch, Checkpoint: p.fingerprint(), Exporter: Version, Weights: p.weights.String(),
			Model: p.opts.Model, Writer: p.opts.Writer},
	}
}

// fingerprint hashes the config and the checkpoint's tensor table.
func (p *plan) fingerprint() string {
	h := sha256.New()
	h.Write(p.ckpt.Config.Raw)
	for _, n := range p.ckpt.Names() {
		t, _ := p.ckpt.Tensor(n)
		fmt.Fprintf(h, "%s %s %v\n", n, t.DType, t.Shape)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
