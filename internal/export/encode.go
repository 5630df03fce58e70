package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hfstatic/hfstatic/internal/arch"
	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/arch/encoder"
	"github.com/hfstatic/hfstatic/internal/arch/head"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/onnx"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// Defaults of embedding and reranking programs (hf_encode).
const (
	// DefaultBatch is the sequences one call of an encode method takes.
	DefaultBatch = 32
	// MaxDefaultEncodeContext caps the tokens per sequence taken from the model (its
	// sentence-transformers max_seq_length, else its position table).
	MaxDefaultEncodeContext = 8192
)

// qwen3Reranker is Qwen3-Reranker's prompt and answer, from its model card: the query and
// document in a chat turn, the relevance the probability of "yes" against "no" as the
// next token.
var qwen3Reranker = struct {
	pair    program.PairFormat
	yes, no string
}{
	pair: program.PairFormat{Kind: program.PairTemplate,
		Prefix: "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. " +
			"Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n",
		Body:        "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}",
		Suffix:      "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
		Instruction: "Given a web search query, retrieve relevant passages that answer the query"},
	yes: "yes", no: "no",
}

// scoreWeight is the program tensor of a decoder reranker's score row.
const scoreWeight = "score.weight"

// encodePlan is the plan of an hf_encode program: the weights of an encoder or of a decoder
// (dec), the head after them and the metadata.
type encodePlan struct {
	*plan
	task  Task
	enc   *encoder.Spec // nil for a decoder
	dec   *decoder.Spec // nil for an encoder
	head  *head.Head
	meta  program.Metadata
	score []float32 // a decoder reranker's score row (yes - no), nil otherwise
	notes []string
}

// exportEncode writes an hf_encode program for an embedding or reranking task.
func exportEncode(ctx context.Context, ckpt *hf.Checkpoint, w io.Writer, opts Options, class string, task Task) (*Summary, error) {
	p, err := newEncodePlan(ckpt, opts, class, task)
	if err != nil {
		return nil, err
	}
	return p.write(ctx, w)
}

func newEncodePlan(ckpt *hf.Checkpoint, opts Options, class string, task Task) (*encodePlan, error) {
	// Prefill, PrefillLogits, CacheDType and SlidingLayout concern generation only: an
	// embedding or reranking program has no caches and runs its sequences whole.
	switch {
	case opts.Rotate != "" && opts.Rotate != RotateNone:
		return nil, fmt.Errorf("%w: rotation is for generative programs", ErrOptions)
	case opts.Delegate != "" && opts.Delegate != DelegateONNX:
		return nil, fmt.Errorf("%w: delegate %q must be %q or none", ErrOptions, opts.Delegate, DelegateONNX)
	case opts.Batch < 0:
		return nil, fmt.Errorf("%w: batch %d must be ≥ 1 (0: %d)", ErrOptions, opts.Batch, DefaultBatch)
	}
	e := &encodePlan{task: task, plan: &plan{ckpt: ckpt, opts: opts, arch: class, keep: map[string]bool{}}}
	var trained int // the longest sequence the model takes
	if arch.IsEncoder(class) {
		a, err := arch.LookupEncoder(class)
		if err != nil {
			return nil, err
		}
		if e.enc, err = a.EncoderSpec(ckpt.Config.Raw); err != nil {
			return nil, err
		}
		trained = e.enc.MaxTokens()
		e.src, err = firstLayout(ckpt, e.enc.Names.Embed, e.enc.Layouts)
		if err != nil {
			return nil, err
		}
	} else {
		a, err := arch.Lookup(class)
		if err != nil {
			return nil, err
		}
		spec, maxPos, err := a.Spec(ckpt.Config.Raw)
		if err != nil {
			return nil, err
		}
		trained, e.dec = maxPos, spec
		// A decoder's embedding or reranking program never reads the whole output projection
		// (a reranker reads two of its rows, into scoreWeight): the spec is tied so that its
		// weights are those of the layers. Qwen3-Embedding keeps the base model's tensors
		// without the "model." prefix.
		tied := *spec
		tied.Tied = true
		layouts := tied.Layouts
		if len(layouts) == 0 {
			layouts = []decoder.Layout{func(n string) string { return n }}
		}
		tied.Layouts = append(slices.Clone(layouts), func(n string) string { return strings.TrimPrefix(n, "model.") })
		e.spec = &tied
		if e.src, err = firstLayout(ckpt, tied.Names.Embed, tied.Layouts); err != nil {
			return nil, err
		}
		if task == TaskRerank {
			if err := e.decoderScore(spec); err != nil {
				return nil, err
			}
		}
	}
	if err := e.chooseHead(); err != nil {
		return nil, err
	}
	if err := e.chooseShape(trained); err != nil {
		return nil, err
	}
	if err := e.chooseTypes(e.src(e.embedName()), e.matrices()); err != nil {
		return nil, err
	}
	if err := e.checkTensors(); err != nil {
		return nil, err
	}
	if err := checkAssets(ckpt.TokenizerJSON, ckpt.TokenizerConfigJSON); err != nil {
		if !isUnsupportedTokenizer(err) {
			return nil, err
		}
		// Kept: the program runs token ids now, and text once hfstatic reads its tokenizer.
		e.notes = append(e.notes, fmt.Sprintf("%v: the program takes token ids only until hfstatic reads this tokenizer", err))
	}
	return e, nil
}

// firstLayout picks the first layout under which the checkpoint has tensor name.
func firstLayout(ckpt *hf.Checkpoint, name string, layouts []decoder.Layout) (decoder.Layout, error) {
	var tried []string
	for _, l := range layouts {
		if _, ok := ckpt.Tensor(l(name)); ok {
			return l, nil
		}
		tried = append(tried, l(name))
	}
	return nil, &TensorError{Name: tried[0], Problem: fmt.Sprintf("missing from the checkpoint (nor under %q)", tried[1:])}
}

func isUnsupportedTokenizer(err error) bool {
	var u *tokenizer.UnsupportedError
	return errors.As(err, &u)
}

func (e *encodePlan) embedName() string {
	if e.enc != nil {
		return e.enc.Names.Embed
	}
	return e.spec.Names.Embed
}

func (e *encodePlan) hidden() int {
	if e.enc != nil {
		return e.enc.Hidden
	}
	return e.spec.Hidden
}

// decoderScore computes a decoder reranker's score row: the output projection's row of
// "yes" minus its row of "no" (Qwen3-Reranker: softmax([no, yes])[yes] = sigmoid(yes - no)).
func (e *encodePlan) decoderScore(spec *decoder.Spec) error {
	if e.ckpt.TokenizerJSON == nil {
		return fmt.Errorf("a reranker needs its tokenizer.json to find the tokens %q and %q", qwen3Reranker.yes, qwen3Reranker.no)
	}
	tok, err := tokenizer.Load(e.ckpt.TokenizerJSON, e.ckpt.TokenizerConfigJSON)
	if err != nil {
		return &AssetError{Asset: program.AssetTokenizer, Err: err}
	}
	yes, ok1 := tok.TokenID(qwen3Reranker.yes)
	no, ok2 := tok.TokenID(qwen3Reranker.no)
	if !ok1 || !ok2 {
		return fmt.Errorf("the tokenizer has no tokens %q and %q, the answers a Qwen3-Reranker-style model scores", qwen3Reranker.yes, qwen3Reranker.no)
	}
	out := e.src(spec.OutputName())
	t, ok := e.ckpt.Tensor(out)
	if !ok {
		return &TensorError{Name: out, Problem: "missing from the checkpoint (a reranker reads the rows of \"yes\" and \"no\")"}
	}
	if len(t.Shape) != 2 || t.Shape[0] != spec.Vocab || t.Shape[1] != spec.Hidden || yes >= spec.Vocab || no >= spec.Vocab {
		return &TensorError{Name: out, Problem: fmt.Sprintf("shape %v, the config implies [%d %d]", t.Shape, spec.Vocab, spec.Hidden)}
	}
	vals, _, err := e.ckpt.Float32(out)
	if err != nil {
		return &TensorError{Name: out, Problem: err.Error()}
	}
	D := spec.Hidden
	e.score = make([]float32, D)
	for j := range D {
		e.score[j] = float32(float64(vals[yes*D+j]) - float64(vals[no*D+j]))
	}
	return nil
}

// chooseHead sets the head: the classifier of a cross-encoder, the score row of a decoder
// reranker, or an embedding model's pooling (sentence-transformers' modules, else the
// model's default), with Options.Pooling overriding the pooling.
func (e *encodePlan) chooseHead() error {
	D := e.hidden()
	st := e.ckpt.SentenceTransformers
	switch {
	case e.task == TaskRerank && e.enc != nil:
		if e.enc.Classifier == nil {
			return fmt.Errorf("%w: %s has no classification head to rerank with (its ForSequenceClassification class has)", ErrOptions, e.arch)
		}
		e.head = e.enc.ClassifierHead()
	case e.task == TaskRerank:
		e.head = &head.Head{Pooling: program.PoolLast, Output: program.OutputScore,
			Linears: []head.Linear{{Weight: scoreWeight, In: D, Out: 1}}}
	case st != nil:
		h, err := sentenceHead(st, D)
		if err != nil {
			return err
		}
		e.head = h
	case e.enc != nil: // a plain encoder: sentence-transformers' default for models without modules
		e.head = &head.Head{Pooling: program.PoolMean, Output: program.OutputEmbedding}
	default: // a decoder: its last token, normalized (Qwen3-Embedding)
		e.head = &head.Head{Pooling: program.PoolLast, Normalize: true, Output: program.OutputEmbedding}
	}
	if e.opts.Pooling != "" {
		if e.task == TaskRerank {
			return fmt.Errorf("%w: --pooling is for embedding programs (a reranker's head reads its own token)", ErrOptions)
		}
		e.head.Pooling = e.opts.Pooling
	}
	if err := e.head.Validate(D); err != nil {
		return fmt.Errorf("%w: %v", ErrOptions, err)
	}
	return nil
}

// chooseShape sets the sequences per call and tokens per sequence, and the metadata.
func (e *encodePlan) chooseShape(trained int) error {
	S := e.opts.Context
	if S == 0 {
		S = min(trained, MaxDefaultEncodeContext)
		if st := e.ckpt.SentenceTransformers; st != nil && st.MaxSeqLength > 0 {
			S = min(st.MaxSeqLength, trained)
		}
	}
	if S < 1 || S > trained {
		return fmt.Errorf("%w: context %d tokens per sequence: the model takes 1..%d", ErrOptions, S, trained)
	}
	if S > MaxContext {
		return fmt.Errorf("%w: context %d is beyond the bound %d (export.MaxContext)", ErrOptions, S, MaxContext)
	}
	B := e.opts.Batch
	if B == 0 {
		B = DefaultBatch
	}
	if int64(B)*int64(S) > MaxContext {
		return fmt.Errorf("%w: batch %d × context %d tokens is beyond the bound %d (export.MaxContext)", ErrOptions, B, S, MaxContext)
	}
	e.context = S
	tok := e.tokens()
	vocab := e.vocab()
	enc := &program.Encoder{Batch: B, Output: e.head.Output, Dim: e.head.Dim(e.hidden()), Pooling: e.head.Pooling,
		Normalized: e.head.Normalize}
	if e.enc != nil {
		enc.TokenTypes = e.enc.TokenTypes
	}
	if st := e.ckpt.SentenceTransformers; st != nil && e.task == TaskEmbed {
		enc.Prompts = st.Config.Prompts
		if n := st.Config.DefaultPromptName; n != nil && *n != "" {
			enc.DefaultPrompt = *n
		}
	}
	switch e.task {
	case TaskEmbed:
		enc.Matryoshka, enc.MatryoshkaDimensions = matryoshka(e.ckpt.Config.Raw)
		// Qwen3-Embedding's model card says it was trained for any number of dimensions
		// ("MRL support"); its config does not.
		enc.Matryoshka = enc.Matryoshka || e.opts.Matryoshka || strings.HasPrefix(e.ckpt.ReadmeTitle, "Qwen3-Embedding")
	case TaskRerank:
		if e.opts.Matryoshka {
			return fmt.Errorf("%w: --matryoshka is for embedding programs", ErrOptions)
		}
		if e.enc != nil {
			enc.Pair = &program.PairFormat{Kind: program.PairTokenizer}
			rel, err := crossEncoderRelevance(e.ckpt.Config.Raw, enc.Dim)
			if err != nil {
				return err
			}
			enc.Relevance = rel
		} else {
			pair := qwen3Reranker.pair
			enc.Pair, enc.Relevance = &pair, program.RelevanceSigmoid
		}
	}
	e.meta = program.Metadata{Contract: program.EncodeContractName, Version: program.EncodeContractVersion,
		MaxContext: S, VocabSize: vocab, Tokens: tok, Encoder: enc,
		Source: program.Source{Architecture: e.arch, Checkpoint: e.fingerprint(), Exporter: Version, Model: e.opts.Model, Writer: e.opts.Writer}}
	return nil
}

func (e *encodePlan) vocab() int {
	if e.enc != nil {
		return e.enc.Vocab
	}
	return e.spec.Vocab
}

// matrices lists the program's matrix names (for the TensorWeights rules).
func (e *encodePlan) matrices() []string {
	var names []string
	if e.enc != nil {
		for _, w := range e.enc.Weights() {
			if w.Kind != encoder.Vector {
				names = append(names, w.Name)
			}
		}
	} else {
		names = matrixNames(e.spec)
	}
	for _, l := range e.head.Linears {
		if !slices.Contains(names, l.Weight) && l.Weight != scoreWeight {
			names = append(names, l.Weight)
		}
	}
	return names
}

// checkTensors checks, before anything is converted, that the checkpoint has every tensor
// the program reads with the shape the config implies.
func (e *encodePlan) checkTensors() error {
	check := func(name string, want []int) error {
		t, ok := e.ckpt.Tensor(name)
		if !ok {
			return &TensorError{Name: name, Problem: "missing from the checkpoint"}
		}
		if !slices.Equal(t.Shape, want) {
			return &TensorError{Name: name, Problem: fmt.Sprintf("shape %v, the config implies %v", t.Shape, want)}
		}
		return nil
	}
	if e.enc != nil {
		for _, w := range e.enc.Weights() {
			shape := slices.Clone([]int(w.Shape))
			shape[0] += w.SkipRows
			if err := check(e.encoderSource(w), shape); err != nil {
				return err
			}
		}
	} else {
		for _, w := range e.spec.Weights() {
			if err := check(e.src(w.Name), w.Shape); err != nil {
				return err
			}
		}
	}
	for _, l := range e.head.Linears {
		if l.Weight == scoreWeight || e.isSpecWeight(l.Weight) {
			continue
		}
		if err := check(l.Weight, []int{l.Out, l.In}); err != nil {
			return err
		}
		if l.Bias != "" {
			if err := check(l.Bias, []int{l.Out}); err != nil {
				return err
			}
		}
	}
	return nil
}

// isSpecWeight reports whether a head tensor is one of the encoder spec's (a classifier).
func (e *encodePlan) isSpecWeight(name string) bool {
	return e.enc != nil && e.enc.Classifier != nil &&
		slices.Contains([]string{e.enc.Classifier.Dense, e.enc.Classifier.Out}, name)
}

// encoderSource is the checkpoint name of an encoder weight.
func (e *encodePlan) encoderSource(w encoder.Weight) string {
	if w.Head {
		return w.Name
	}
	return e.src(w.Name)
}

func (e *encodePlan) write(ctx context.Context, w io.Writer) (*Summary, error) {
	e.meta.Source.Weights = e.weights.String()
	cw := &countingWriter{w: w}
	pw, err := program.NewWriter(cw)
	if err != nil {
		return nil, err
	}
	var method program.Method
	if e.enc != nil {
		err = e.writeEncoderWeights(ctx, pw)
		if err == nil {
			method, err = e.enc.Method(&e.meta, e.head)
		}
	} else {
		err = e.writeDecoderWeights(ctx, pw)
		if err == nil {
			method, err = e.spec.EncodeMethod(&e.meta, e.head)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := e.writeHead(pw); err != nil {
		return nil, err
	}
	if e.opts.Delegate == DelegateONNX {
		assets, err := onnx.Build(&program.Manifest{Metadata: e.meta, Tensors: pw.Tensors(), Methods: []program.Method{method}}, e.opts.Writer)
		if err != nil {
			return nil, err
		}
		for _, a := range assets {
			if err := pw.WriteAsset(a.Name, a.Data); err != nil {
				return nil, err
			}
		}
	}
	for _, asset := range []struct {
		name string
		data []byte
	}{{program.AssetTokenizer, e.ckpt.TokenizerJSON}, {program.AssetTokenizerConfig, e.ckpt.TokenizerConfigJSON}} {
		if asset.data != nil {
			if err := pw.WriteAsset(asset.name, asset.data); err != nil {
				return nil, err
			}
		}
	}
	fp, err := pw.Finish(e.meta, []program.Method{method})
	if err != nil {
		return nil, fmt.Errorf("finish program: %w", err)
	}
	spec := ""
	if e.enc != nil {
		spec = e.enc.Describe()
	} else {
		spec = e.spec.Describe()
	}
	return &Summary{Fingerprint: fp, Architecture: e.arch, Spec: spec + ", " + e.describeHead(), Bytes: cw.n,
		Context: e.context, Tensors: pw.Tensors(), Ignored: e.ignored(pw.Tensors()), Task: e.task, Notes: e.notes}, nil
}

func (e *encodePlan) describeHead() string {
	h, m := e.head, e.meta.Encoder
	d := fmt.Sprintf("%s pooling", h.Pooling)
	if n := len(h.Linears); n > 0 {
		d += fmt.Sprintf(", %d linear layers", n)
	}
	if h.Normalize {
		d += ", normalized"
	}
	return d + fmt.Sprintf(" → %s of %d; %d sequences of %d tokens per call", m.Output, m.Dim, m.Batch, e.meta.MaxContext)
}

func (e *encodePlan) writeEncoderWeights(ctx context.Context, pw *program.Writer) error {
	for _, w := range e.enc.Weights() {
		if err := ctx.Err(); err != nil {
			return err
		}
		src := e.encoderSource(w)
		vals, _, err := e.ckpt.Float32(src)
		if err != nil {
			return &TensorError{Name: src, Problem: err.Error()}
		}
		vals = vals[w.SkipRows*w.Shape[len(w.Shape)-1]:]
		switch {
		case w.Kind == encoder.Vector || (w.Role == encoder.ClassOut && w.Shape[0] == 1):
			// A one-row output projection is a score's whole precision: kept float32.
			err = pw.WriteTensor(w.Name, program.F32, w.Shape, f32Bytes(vals))
		default:
			err = e.writeMatrix(pw, w.Name, src, w.Shape, vals, w.Kind == encoder.Embedding)
		}
		if err != nil {
			return err
		}
		e.report(pw, w.Name)
	}
	return nil
}

func (e *encodePlan) writeDecoderWeights(ctx context.Context, pw *program.Writer) error {
	for _, it := range e.spec.Weights() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.writeWeight(pw, it); err != nil {
			return err
		}
		e.report(pw, it.Name)
	}
	layerTypes := slices.Compact(slices.Sorted(slices.Values(e.spec.LayerTypes)))
	for _, t := range layerTypes {
		cos, sin := e.spec.RoPETables(t, e.context)
		half := e.spec.Rotary() / 2
		cn, sn := decoder.RoPETableNames(t)
		if err := pw.WriteTensor(cn, program.F32, program.Shape{e.context, half}, f32Bytes(cos)); err != nil {
			return err
		}
		if err := pw.WriteTensor(sn, program.F32, program.Shape{e.context, half}, f32Bytes(sin)); err != nil {
			return err
		}
	}
	return nil
}

// writeHead writes the head's tensors that the model's weights did not: a decoder
// reranker's score row, sentence-transformers' Dense modules.
func (e *encodePlan) writeHead(pw *program.Writer) error {
	for _, l := range e.head.Linears {
		switch {
		case l.Weight == scoreWeight:
			if err := pw.WriteTensor(scoreWeight, program.F32, program.Shape{1, l.In}, f32Bytes(e.score)); err != nil {
				return err
			}
			continue
		case e.isSpecWeight(l.Weight):
			continue
		}
		vals, _, err := e.ckpt.Float32(l.Weight)
		if err != nil {
			return &TensorError{Name: l.Weight, Problem: err.Error()}
		}
		if err := e.writeMatrix(pw, l.Weight, l.Weight, program.Shape{l.Out, l.In}, vals, false); err != nil {
			return err
		}
		if l.Bias != "" {
			b, _, err := e.ckpt.Float32(l.Bias)
			if err != nil {
				return &TensorError{Name: l.Bias, Problem: err.Error()}
			}
			if err := pw.WriteTensor(l.Bias, program.F32, program.Shape{l.Out}, f32Bytes(b)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *encodePlan) report(pw *program.Writer, name string) {
	if e.opts.Progress != nil {
		n := len(pw.Tensors())
		e.opts.Progress(Progress{Tensor: name, Done: n, Total: max(n, e.tensorCount())})
	}
}

func (e *encodePlan) tensorCount() int {
	if e.enc != nil {
		return len(e.enc.Weights()) + 2*len(e.head.Linears)
	}
	return len(e.spec.Weights()) + 2*len(e.head.Linears)
}

// ignored lists the checkpoint tensors the program does not read (BertModel's pooler, a
// decoder's output projection), sorted.
func (e *encodePlan) ignored(written []program.Tensor) []string {
	read := map[string]bool{}
	if e.enc != nil {
		for _, w := range e.enc.Weights() {
			read[e.encoderSource(w)] = true
		}
	} else {
		for _, w := range e.spec.Weights() {
			read[e.src(w.Name)] = true
		}
	}
	for _, t := range written {
		read[t.Name] = true
	}
	var out []string
	for _, n := range e.ckpt.Names() {
		if !read[n] {
			out = append(out, n)
		}
	}
	return out
}
