package calib

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// Encoder turns text into token ids (a *tokenizer.Tokenizer).
type Encoder interface {
	Encode(text string, addSpecial bool) ([]int, error)
}

var _ Encoder = (*tokenizer.Tokenizer)(nil)

// Sequences encodes each paragraph of text (paragraphs are separated by blank lines) with
// the tokenizer's special tokens (e.g. BOS) and cuts it into sequences of at most maxLen
// tokens. Each sequence starts a fresh context.
func Sequences(enc Encoder, text string, maxLen int) ([][]int, error) {
	if maxLen < 1 {
		return nil, fmt.Errorf("%w: maximum sequence length %d, must be ≥ 1", ErrInput, maxLen)
	}
	var seqs [][]int
	for _, p := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		ids, err := enc.Encode(p, true)
		if err != nil {
			return nil, fmt.Errorf("calibration text: %w", err)
		}
		for len(ids) > 0 {
			n := min(len(ids), maxLen)
			seqs = append(seqs, ids[:n])
			ids = ids[n:]
		}
	}
	if len(seqs) == 0 {
		return nil, fmt.Errorf("%w: the calibration text has no words", ErrInput)
	}
	return seqs, nil
}

// Run exports ckpt with float32 weights into memory, with a context as long as the longest
// sequence, and collects the statistics of sequences through it (see Collect). Its result
// is what export.Options.Calibration takes.
func Run(ctx context.Context, ckpt *hf.Checkpoint, sequences [][]int, opts Options) (*Stats, error) {
	longest := 0
	for _, s := range sequences {
		longest = max(longest, len(s))
	}
	if longest == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrInput)
	}
	f, err := floatProgram(ctx, ckpt, longest, opts.Rotate)
	if err != nil {
		return nil, err
	}
	return Collect(ctx, f, sequences, opts)
}

// floatProgram exports ckpt with float32 weights and caches, a context of n tokens and the
// given rotation of the residual stream into memory.
func floatProgram(ctx context.Context, ckpt *hf.Checkpoint, n int, rotate string) (*program.File, error) {
	eo := export.Options{Context: n, Weights: "f32", CacheDType: program.F32, Rotate: rotate}
	if n >= 2 {
		eo.Prefill = min(n, 64)
	}
	var buf bytes.Buffer
	if _, err := export.Export(ctx, ckpt, &buf, eo); err != nil {
		return nil, fmt.Errorf("calib: float32 program: %w", err)
	}
	data := align.Bytes(buf.Len())
	copy(data, buf.Bytes())
	f, err := program.Decode(data, program.DecodeOptions{SkipDataChecksums: true})
	if err != nil {
		return nil, fmt.Errorf("calib: float32 program: %w", err)
	}
	return f, nil
}
