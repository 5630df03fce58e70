package server

import (
	"context"

	"github.com/hfstatic/hfstatic/runner"
)

// batcher runs the steps of the generations that joined it: each generation's session
// joins with its lease and steps through the returned sequence until it leaves.
type batcher interface {
	Join(s *runner.Session) (sequence, error)
	Stats() batchStats
	Close() error
}

// sequence is one joined session: Append runs tokens through it (with the other joined
// sessions' steps where the batcher can) and updates the session as Session.Append does.
type sequence interface {
	Append(ctx context.Context, tokens []int) error
	Leave()
}

// batchStats are a batcher's gauges, exported as metrics.
type batchStats struct {
	Running int // sequences joined: each takes part in steps until it leaves
}

// newBatcher makes the batcher of a server with opts (their OnStep is set here); onStep is
// told each step's sequences and tokens.
func newBatcher(r *runner.Runner, opts runner.BatchOptions, onStep func(seqs, tokens int)) (batcher, error) {
	opts.OnStep = func(st runner.StepStats) { onStep(st.Sessions, st.Rows) }
	b, err := runner.NewBatcher(r, opts)
	if err != nil {
		return nil, err
	}
	return runnerBatcher{b}, nil
}

// runnerBatcher adapts a *runner.Batcher.
type runnerBatcher struct{ b *runner.Batcher }

func (rb runnerBatcher) Join(s *runner.Session) (sequence, error) {
	q, err := rb.b.Join(s)
	if err != nil {
		return nil, err
	}
	return q, nil
}

func (rb runnerBatcher) Stats() batchStats { return batchStats{Running: rb.b.Stats().Joined} }
func (rb runnerBatcher) Close() error      { return rb.b.Close() }
