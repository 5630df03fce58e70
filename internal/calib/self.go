package calib

import (
	"context"
	"fmt"

	"github.com/hfstatic/hfstatic/internal/exec"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/sample"
)

// SelfOptions configure Self: calibration text that the float model writes itself, for
// quantizing a model without any text from the user (self-calibration, as in Williams et
// al., "Self-calibration for language model quantization and pruning", 2025).
type SelfOptions struct {
	// Sequences is how many sequences to write, each Length tokens long counting the
	// start token; both must be ≥ 1.
	Sequences, Length int
	// Temperature of the draw, > 0; Seed of the sampler (the same seed gives the same text).
	Temperature float32
	Seed        uint64
}

// DefaultSelf is the self-calibration export uses when given no text: 5,120 tokens drawn
// at temperature 1, the model's own distribution. (On stories260K's tuning text, q4:
// 10 sequences gave KL 0.037 to 0.042 depending on the seed, 20 gave 0.036 to 0.037;
// temperatures 0.8 and 1.2 did no better.)
var DefaultSelf = SelfOptions{Sequences: 20, Length: 256, Temperature: 1, Seed: 1}

func (o SelfOptions) validate() error {
	switch {
	case o.Sequences < 1:
		return fmt.Errorf("calib: SelfOptions.Sequences = %d, must be ≥ 1", o.Sequences)
	case o.Length < 2:
		return fmt.Errorf("calib: SelfOptions.Length = %d, must be ≥ 2", o.Length)
	case !(o.Temperature > 0):
		return fmt.Errorf("calib: SelfOptions.Temperature = %v, must be > 0", o.Temperature)
	}
	return nil
}

// RunSelf exports ckpt with float32 weights, lets it write calibration sequences (see
// Self) and collects their statistics (see Collect). It returns the sequences too.
func RunSelf(ctx context.Context, ckpt *hf.Checkpoint, so SelfOptions, opts Options) (*Stats, [][]int, error) {
	if err := so.validate(); err != nil {
		return nil, nil, err
	}
	f, err := floatProgram(ctx, ckpt, so.Length, opts.Rotate)
	if err != nil {
		return nil, nil, err
	}
	seqs, err := Self(ctx, f, so, opts.Threads)
	if err != nil {
		return nil, nil, err
	}
	st, err := Collect(ctx, f, seqs, opts)
	if err != nil {
		return nil, nil, err
	}
	return st, seqs, nil
}

// Self writes so.Sequences token sequences with the program f (its decode method): each
// starts at the BOS token, or at the first EOS token for models without one (a document
// boundary), and continues with tokens drawn from the model's next-token distribution at
// so.Temperature, a seeded draw per sequence. Deterministic for the same program, options
// and threads' kernels.
func Self(ctx context.Context, f *program.File, so SelfOptions, threads int) ([][]int, error) {
	if err := so.validate(); err != nil {
		return nil, err
	}
	if threads < 1 {
		return nil, fmt.Errorf("calib: %d threads, must be ≥ 1", threads)
	}
	if so.Length > f.Manifest.Metadata.MaxContext {
		return nil, fmt.Errorf("%w: self-calibration sequences of %d tokens, beyond the program's context of %d", ErrInput, so.Length, f.Manifest.Metadata.MaxContext)
	}
	tok := f.Manifest.Metadata.Tokens
	var start int
	switch {
	case tok.BOS != nil:
		start = int(*tok.BOS)
	case len(tok.EOS) > 0:
		start = int(tok.EOS[0])
	default:
		return nil, fmt.Errorf("%w: the model has neither a BOS nor an EOS token to start its own text from", ErrInput)
	}
	xp, err := exec.Load(f, exec.Options{Threads: threads})
	if err != nil {
		return nil, fmt.Errorf("calib: float32 program: %w", err)
	}
	defer xp.Close()
	r, err := runner.New(&f.Manifest, f.Fingerprint, executor{xp}, runner.Options{Allocator: runner.HeapAllocator{}})
	if err != nil {
		return nil, fmt.Errorf("calib: float32 program: %w", err)
	}
	seqs := make([][]int, so.Sequences)
	for i := range seqs {
		smp, err := sample.New(sample.Options{Temperature: so.Temperature, Seed: so.Seed + uint64(i)})
		if err != nil {
			return nil, fmt.Errorf("calib: %w", err)
		}
		seq, err := write(ctx, r, smp, start, so.Length)
		if err != nil {
			return nil, fmt.Errorf("calib: self-calibration sequence %d: %w", i, err)
		}
		seqs[i] = seq
	}
	return seqs, nil
}

// write runs one sequence of n tokens from start in a fresh session.
func write(ctx context.Context, r *runner.Runner, smp *sample.Sampler, start, n int) ([]int, error) {
	s, err := r.NewSession()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	seq := make([]int, 1, n)
	seq[0] = start
	for {
		if err := s.Append(ctx, seq[len(seq)-1:]); err != nil {
			return nil, err
		}
		if len(seq) == n {
			return seq, nil
		}
		// The draw sees no history: no penalties, the model's own distribution.
		seq = append(seq, smp.Sample(s.Logits().View(), nil))
	}
}

// executor runs the program's methods for a runner.Runner.
type executor struct{ p *exec.Program }

func (e executor) Bind(name string, bufs map[string][]byte) (runner.Step, error) {
	m, ok := e.p.Method(name)
	if !ok {
		return nil, fmt.Errorf("program has no method %q", name)
	}
	return m.Bind(bufs)
}
