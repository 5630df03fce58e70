package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/runner"
)

// benchBatch measures o.batch sessions joined to one Batcher: in each repeat every session
// appends depth (untimed), then all prefill prompt at once, then all run o.genTokens greedy
// decode steps at once. The rates it records in rep are totals over the sessions.
func benchBatch(ctx context.Context, r *runner.Runner, o benchOptions, depth, prompt []int, rep *benchReport) error {
	sessions := make([]*runner.Session, o.batch)
	defer func() {
		for _, s := range sessions {
			if s != nil {
				s.Close()
			}
		}
	}()
	for i := range sessions {
		s, err := r.NewSession()
		if err != nil {
			return fmt.Errorf("session %d of %d: %w", i+1, o.batch, err)
		}
		sessions[i] = s
	}
	b, err := runner.NewBatcher(r, runner.BatchOptions{MaxBatch: o.batch})
	if err != nil {
		return err
	}
	defer b.Close()
	seqs := make([]*runner.Seq, o.batch)
	for i, s := range sessions {
		if seqs[i], err = b.Join(s); err != nil {
			return err
		}
		defer seqs[i].Leave()
	}
	// together runs f for every sequence at once and returns how long they all took.
	together := func(f func(q *runner.Seq) error) (time.Duration, error) {
		errs := make([]error, len(seqs))
		var wg sync.WaitGroup
		start := time.Now()
		for i, q := range seqs {
			wg.Go(func() { errs[i] = f(q) })
		}
		wg.Wait()
		return time.Since(start), errors.Join(errs...)
	}
	greedy := generate.Greedy{}
	decode := func(q *runner.Seq) error {
		s, next := q.Session(), make([]int, 1)
		for i := range o.genTokens {
			next[0] = greedy.Sample(s.Logits().View(), nil)
			if err := q.Append(ctx, next); err != nil {
				return fmt.Errorf("decode step %d: %w", i+1, err)
			}
		}
		return nil
	}

	// Warm-up: every session's pages are written once (Reset) and one short round runs.
	for _, s := range sessions {
		if err := s.Reset(); err != nil {
			return err
		}
	}
	if _, err := together(func(q *runner.Seq) error { return q.Append(ctx, prompt[:min(len(prompt), 8)]) }); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}

	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	for k := range o.repeat {
		for _, s := range sessions {
			if err := s.Reset(); err != nil {
				return err
			}
		}
		if len(depth) > 0 {
			if _, err := together(func(q *runner.Seq) error { return q.Append(ctx, depth) }); err != nil {
				return fmt.Errorf("repeat %d: depth of %d tokens: %w", k+1, len(depth), err)
			}
		}
		runtime.GC() // collect earlier garbage outside the timed region
		pre, err := together(func(q *runner.Seq) error { return q.Append(ctx, prompt) })
		if err != nil {
			return fmt.Errorf("repeat %d: prefill of %d tokens: %w", k+1, len(prompt), err)
		}
		dec, err := together(decode)
		if err != nil {
			return fmt.Errorf("repeat %d: %w", k+1, err)
		}
		rep.PrefillRuns = append(rep.PrefillRuns, float64(o.batch*len(prompt))/pre.Seconds())
		rep.DecodeRuns = append(rep.DecodeRuns, float64(o.batch*o.genTokens)/dec.Seconds())
	}
	rep.PrefillTokS = median(rep.PrefillRuns)
	rep.DecodeTokS = median(rep.DecodeRuns)
	return nil
}
