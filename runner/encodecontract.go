package runner

import (
	"strings"

	"github.com/hfstatic/hfstatic/program"
)

// validateHFEncodeV1 checks a manifest against docs/contract.md, "The hf_encode v1 contract".
func validateHFEncodeV1(m *program.Manifest) error {
	md := &m.Metadata
	S := md.MaxContext
	if S < 1 {
		return cerr("max_context", "%d must be ≥ 1", S)
	}
	if md.VocabSize < 1 {
		return cerr("vocab_size", "%d must be ≥ 1", md.VocabSize)
	}
	if md.CacheDType != "" || md.SlidingLayout != "" || md.SlidingWindow != 0 {
		return cerr("cache_dtype", "an hf_encode program has no caches (cache_dtype %q, sliding_layout %q, sliding_window %d)", md.CacheDType, md.SlidingLayout, md.SlidingWindow)
	}
	if len(md.Layers) > 0 {
		return cerr("layers", "an hf_encode program has no caches, so no layers metadata")
	}
	if err := checkTokens(md); err != nil {
		return err
	}
	e := md.Encoder
	if e == nil {
		return cerr("encoder", "missing (hf_encode programs describe their encode method there)")
	}
	if err := checkEncoder(e); err != nil {
		return err
	}
	if len(m.Methods) != 1 || m.Methods[0].Name != program.MethodEncode {
		names := make([]string, len(m.Methods))
		for i, mt := range m.Methods {
			names[i] = mt.Name
		}
		return cerr("methods", "[%s]: an hf_encode program has exactly one method, %q", strings.Join(names, ", "), program.MethodEncode)
	}
	mt := &m.Methods[0]
	if mt.Step != e.Batch*S {
		return cerr("encode.step", "%d, must be batch × max_context = %d × %d", mt.Step, e.Batch, S)
	}
	if mt.Logits != "" {
		return cerr("encode.logits", "%q: the encode method has no logits", mt.Logits)
	}
	in, out, err := program.EncodeIO(md)
	if err != nil {
		return cerr("encoder.output", "%v", err)
	}
	if err := matchIO("encode input", mt.Inputs, in); err != nil {
		return err
	}
	return matchIO("encode output", mt.Outputs, out)
}

// checkEncoder checks the encoder metadata's fields.
func checkEncoder(e *program.Encoder) error {
	switch {
	case e.Batch < 1:
		return cerr("encoder.batch", "%d must be ≥ 1", e.Batch)
	case e.Output != program.OutputEmbedding && e.Output != program.OutputScore:
		return cerr("encoder.output", "%q is not %q or %q", e.Output, program.OutputEmbedding, program.OutputScore)
	case e.Dim < 1:
		return cerr("encoder.dim", "%d must be ≥ 1", e.Dim)
	case e.TokenTypes < 0:
		return cerr("encoder.token_types", "%d must be ≥ 0", e.TokenTypes)
	}
	switch e.Pooling {
	case "", program.PoolCLS, program.PoolMean, program.PoolMax, program.PoolLast:
	default:
		return cerr("encoder.pooling", "%q is not cls, mean, max or last", e.Pooling)
	}
	if (e.Matryoshka || len(e.MatryoshkaDimensions) > 0) && e.Output != program.OutputEmbedding {
		return cerr("encoder.matryoshka", "only embeddings can be truncated")
	}
	for _, d := range e.MatryoshkaDimensions {
		if d < 1 || d > e.Dim {
			return cerr("encoder.matryoshka_dimensions", "%d is outside [1, dim %d]", d, e.Dim)
		}
	}
	if e.DefaultPrompt != "" {
		if _, ok := e.Prompts[e.DefaultPrompt]; !ok {
			return cerr("encoder.default_prompt", "%q is not one of the prompts", e.DefaultPrompt)
		}
	}
	if e.Pair != nil {
		if e.Output != program.OutputScore {
			return cerr("encoder.pair", "only score programs read pairs")
		}
		switch e.Pair.Kind {
		case program.PairTokenizer:
		case program.PairTemplate:
			if !strings.Contains(e.Pair.Body, "{query}") || !strings.Contains(e.Pair.Body, "{document}") {
				return cerr("encoder.pair.body", "%q must hold {query} and {document}", e.Pair.Body)
			}
		default:
			return cerr("encoder.pair.kind", "%q is not %q or %q", e.Pair.Kind, program.PairTokenizer, program.PairTemplate)
		}
	}
	if e.Relevance != "" && (e.Relevance != program.RelevanceSigmoid || e.Output != program.OutputScore) {
		return cerr("encoder.relevance", "%q: only %q, for score programs", e.Relevance, program.RelevanceSigmoid)
	}
	return nil
}
