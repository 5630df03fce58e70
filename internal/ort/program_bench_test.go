//go:build ort && unix

package ort_test

import (
	"context"
	"flag"
	"fmt"
	"syscall"
	"testing"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/internal/ort"
	"github.com/hfstatic/hfstatic/internal/ort/orttest"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

var (
	benchProgram = flag.String("program", "", "program file (exported with --delegate onnx) for BenchmarkORTProgram")
	benchProfile = flag.String("ort-profile", "", "file prefix for ONNX Runtime's profiler in BenchmarkORTProgram")
	benchThreads = flag.Int("ort-threads", 1, "ORT intra-op threads in BenchmarkORTProgram")
	benchSpin    = flag.Bool("ort-spin", false, "let ORT's worker threads spin in BenchmarkORTProgram")
	benchGo      = flag.Bool("go-executor", false, "BenchmarkORTProgram runs the Go executor instead (same steps, for comparison)")
)

// cpuSeconds is the process's user+system CPU time: on a machine shared with other work,
// CPU time per token compares executors better than wall time (with one thread each).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// openBenchProgram maps and decodes a benchmark's program file (closed when b ends).
func openBenchProgram(b *testing.B, path string) (*mmap.File, *program.File) {
	b.Helper()
	mf, err := mmap.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { mf.Close() })
	f, err := program.Decode(mf.Bytes(), program.DecodeOptions{SkipDataChecksums: true})
	if err != nil {
		b.Fatal(err)
	}
	return mf, f
}

// BenchmarkORTProgram runs one prefill step and decode steps of -program on ORT, with
// ORT's profiler on when -ort-profile is given (where ORT spends its time, per node):
//
//	go test ./internal/ort -run X -bench ORTProgram -args -program q4.hfs -ort-profile /tmp/q4
func BenchmarkORTProgram(b *testing.B) {
	if *benchProgram == "" {
		b.Skip("give -program PATH (exported with --delegate onnx)")
	}
	mf, f := openBenchProgram(b, *benchProgram)
	var r *runner.Runner
	if *benchGo {
		m, err := engine.Load(mf.Bytes(), engine.Options{Threads: *benchThreads, SkipDataChecksums: true})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		r = m.Runner
	} else {
		lib, err := ort.Open(orttest.LibPath(b))
		if err != nil {
			b.Fatal(err)
		}
		x, err := ort.New(lib, f, ort.Options{Threads: *benchThreads, Spin: *benchSpin, ProfilePrefix: *benchProfile})
		if err != nil {
			b.Fatal(err)
		}
		defer x.Close()
		if r, err = runner.New(&f.Manifest, f.Fingerprint, x, runner.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	s := newSession(b, r)
	P := r.Planner().Prefill
	V := r.Metadata().VocabSize
	ctx := context.Background()
	b.Run(fmt.Sprintf("prefill=%d", P), func(b *testing.B) {
		cpu := cpuSeconds()
		for b.Loop() {
			s.Reset()
			if err := s.Append(ctx, tokens(P, V, 1)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(P*b.N)/b.Elapsed().Seconds(), "tok/s")
		b.ReportMetric(float64(P*b.N)/(cpuSeconds()-cpu), "tok/cpu-s")
	})
	b.Run("decode", func(b *testing.B) {
		s.Reset()
		if err := s.Append(ctx, tokens(P, V, 1)); err != nil {
			b.Fatal(err)
		}
		tok := []int{7}
		cpu := cpuSeconds()
		for b.Loop() {
			if err := s.Append(ctx, tok); err != nil {
				b.Fatal(err)
			}
			s.Rewind(P)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		b.ReportMetric(float64(b.N)/(cpuSeconds()-cpu), "tok/cpu-s")
	})
}

var benchArgmaxSteps = flag.Int("argmax-steps", 64, "greedy decode steps compared in BenchmarkORTProgramArgmax")

// BenchmarkORTProgramArgmax loads -program on both executors, prefills the same prompt,
// then decodes -argmax-steps greedy tokens of the Go executor on both (ORT is fed the Go
// executor's tokens, so one disagreement does not change the rest) and reports the share of
// positions where the argmaxes agree (#36's target: ≥ 99% for q8 and q4):
//
//	go test -tags ort ./internal/ort -run X -bench ORTProgramArgmax -benchtime 1x -args -program q4.hfs
func BenchmarkORTProgramArgmax(b *testing.B) {
	if *benchProgram == "" {
		b.Skip("give -program PATH (exported with --delegate onnx)")
	}
	mf, err := mmap.Open(*benchProgram)
	if err != nil {
		b.Fatal(err)
	}
	defer mf.Close()
	var rs [2]*runner.Runner
	for i, name := range []string{engine.ExecutorGo, engine.ExecutorORT} {
		m, err := engine.Load(mf.Bytes(), engine.Options{Threads: *benchThreads, Executor: name, ORTLib: orttest.LibPath(b), SkipDataChecksums: true})
		if err != nil {
			b.Fatalf("load on %s: %v", name, err)
		}
		defer m.Close()
		rs[i] = m.Runner
	}
	for b.Loop() {
		gs, ors := newSession(b, rs[0]), newSession(b, rs[1])
		P := rs[0].Planner().Prefill
		toks := tokens(max(P, 1), rs[0].Metadata().VocabSize, 1)
		agree, total := 0, 0
		var worst float64
		for step := 0; step <= *benchArgmaxSteps; step++ {
			want, got := appendTokens(b, gs, toks), appendTokens(b, ors, toks)
			worst = max(worst, maxDiff(want, got))
			total++
			if argmax(want) == argmax(got) {
				agree++
			}
			toks = []int{argmax(want)}
		}
		b.ReportMetric(100*float64(agree)/float64(total), "%agree")
		b.ReportMetric(float64(total), "positions")
		b.ReportMetric(worst, "max|dlogit|")
	}
}
