package engine

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/sample"
)

var (
	benchProgram = flag.String("program", "", "program file for BenchmarkBatchedDecode (default: stories260K exported in the test)")
	benchThreads = flag.Int("threads", 2, "threads for BenchmarkBatchedDecode")
)

// BenchmarkBatchedDecode measures B sessions decoding together through a Batcher: each
// prefills a 128-token prompt (not timed), then every iteration rewinds to the prompt and
// decodes 64 greedy tokens per session. tok/s is the sum over the sessions. For the
// Qwen3-0.6B shape (docs/performance.md):
//
//	go test -run XXX -bench BatchedDecode ./engine -args -program qwen3-0.6b-q8.hfs
func BenchmarkBatchedDecode(b *testing.B) {
	const prompt, gen = 128, 64
	var data []byte
	name := "stories260K"
	if *benchProgram != "" {
		f, err := mmap.Load(*benchProgram)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		data, name = f.Bytes(), *benchProgram
	} else {
		data = exporttest.Program(b, models.Stories260K(), export.Options{Context: 512, Prefill: 32, CacheDType: program.F32})
	}
	m, err := Load(data, Options{Threads: *benchThreads, SkipDataChecksums: true})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	r := m.Runner
	for _, B := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("program=%s/threads=%d/batch=%d", shortName(name), *benchThreads, B), func(b *testing.B) {
			var steps, sessions atomic.Int64
			batcher, err := runner.NewBatcher(r, runner.BatchOptions{MaxBatch: B, OnStep: func(st runner.StepStats) {
				steps.Add(1)
				sessions.Add(int64(st.Sessions))
			}})
			if err != nil {
				b.Fatal(err)
			}
			defer batcher.Close()
			ctx := context.Background()
			seqs := make([]*runner.Seq, B)
			for i := range seqs {
				s, err := r.NewSession()
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				toks := make([]int, prompt)
				for j := range toks {
					toks[j] = (j*7919 + i*104729) % r.Metadata().VocabSize
				}
				if err := s.Append(ctx, toks); err != nil {
					b.Fatal(err)
				}
				if seqs[i], err = batcher.Join(s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			var decode time.Duration
			steps.Store(0)
			sessions.Store(0)
			for b.Loop() {
				for _, q := range seqs {
					if err := q.Session().Rewind(prompt); err != nil {
						b.Fatal(err)
					}
				}
				start := time.Now()
				var wg sync.WaitGroup
				for _, q := range seqs {
					wg.Go(func() {
						s := q.Session()
						tok := max(0, sample.Argmax(s.Logits().View())) // stale after Rewind: 0
						for range gen {
							if err := q.Append(ctx, []int{tok}); err != nil {
								b.Error(err)
								return
							}
							tok = sample.Argmax(s.Logits().View())
						}
					})
				}
				wg.Wait()
				decode += time.Since(start)
			}
			b.ReportMetric(float64(B*gen*b.N)/decode.Seconds(), "tok/s")
			b.ReportMetric(float64(sessions.Load())/float64(max(steps.Load(), 1)), "sessions/step")
		})
	}
}

// shortName is a program path's last element.
func shortName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}
