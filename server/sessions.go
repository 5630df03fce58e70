package server

import (
	"context"

	"github.com/hfstatic/hfstatic/runner"
)

// SessionPool lends sessions for a prompt, preferring the free session that already holds
// the longest prefix of it (so a multi-turn chat does not re-process its history).
// Acquire blocks while every session is leased, until ctx is done. *runner.Pool
// satisfies it through RunnerPool.
type SessionPool interface {
	Acquire(ctx context.Context, tokens []int) (Lease, error)
	Stats() PoolStats
}

// Lease is one borrowed session. The session holds the first Reused() tokens of the
// prompt it was acquired for (Reused() ≤ len(prompt)-1). Release returns it to the pool;
// the session must not be used afterwards.
type Lease interface {
	Session() *runner.Session
	Reused() int
	Release()
}

// PoolStats are a pool's counters, exported as metrics.
type PoolStats struct {
	Hits, Misses int64 // acquisitions that did / did not reuse a prefix
	ReusedTokens int64 // tokens not re-processed thanks to reuse
	Evictions    int64 // free sessions reset to make room for another prompt
	Recomputes   int64 // adoptions whose ring cache could not be rewound
	Sessions     int64 // sessions alive (leased or free)
	Leased       int64 // sessions leased now
	Limit        int64 // most sessions the pool holds
}

// RunnerPool adapts a *runner.Pool.
func RunnerPool(p *runner.Pool) SessionPool { return runnerPool{p} }

type runnerPool struct{ p *runner.Pool }

func (rp runnerPool) Acquire(ctx context.Context, tokens []int) (Lease, error) {
	l, err := rp.p.Acquire(ctx, tokens)
	if err != nil {
		return nil, err
	}
	return runnerLease{l}, nil
}

func (rp runnerPool) Stats() PoolStats {
	st := rp.p.Stats()
	return PoolStats{Hits: st.Hits, Misses: st.Misses, ReusedTokens: st.ReusedTokens, Evictions: st.Evictions,
		Recomputes: st.Recomputes, Sessions: st.Sessions, Leased: st.Leased, Limit: int64(rp.p.Limit())}
}

type runnerLease struct{ l *runner.Lease }

func (rl runnerLease) Session() *runner.Session { return rl.l.Session }
func (rl runnerLease) Reused() int              { return rl.l.Reused }
func (rl runnerLease) Release()                 { rl.l.Release() }
