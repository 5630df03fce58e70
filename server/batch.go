package server

import (
	"context"
	"sync"

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

// newBatcher makes the batcher of a server: at most maxBatch sequences in one step;
// onStep is told each step's sequences and tokens.
func newBatcher(r *runner.Runner, maxBatch int, onStep func(seqs, tokens int)) (batcher, error) {
	return &aloneBatcher{onStep: onStep}, nil
}

// aloneBatcher steps each session on its own.
type aloneBatcher struct {
	onStep func(seqs, tokens int)
	mu     sync.Mutex
	joined int
}

func (b *aloneBatcher) Join(s *runner.Session) (sequence, error) {
	b.mu.Lock()
	b.joined++
	b.mu.Unlock()
	return &aloneSeq{b: b, s: s}, nil
}

func (b *aloneBatcher) Stats() batchStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return batchStats{Running: b.joined}
}

func (b *aloneBatcher) Close() error { return nil }

type aloneSeq struct {
	b    *aloneBatcher
	s    *runner.Session
	once sync.Once
}

func (q *aloneSeq) Append(ctx context.Context, tokens []int) error {
	err := q.s.Append(ctx, tokens)
	q.b.onStep(1, len(tokens))
	return err
}

func (q *aloneSeq) Leave() {
	q.once.Do(func() {
		q.b.mu.Lock()
		q.b.joined--
		q.b.mu.Unlock()
	})
}
