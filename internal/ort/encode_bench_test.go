//go:build ort && unix

package ort_test

import (
	"context"
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/hfstatic/hfstatic/internal/ort"
	"github.com/hfstatic/hfstatic/internal/ort/orttest"
	"github.com/hfstatic/hfstatic/runner"
)

var benchEncode = flag.String("encode-program", "", "encoder program file (exported with --delegate onnx) for BenchmarkORTEncode")

// BenchmarkORTEncode encodes one full batch of random ids per iteration with -encode-program
// on ORT (-ort-threads threads), with ORT's profiler on when -ort-profile is given (where ORT
// spends its time, per node; see docs/performance.md, "Embeddings"):
//
//	go test -tags ort ./internal/ort -run X -bench ORTEncode -args -encode-program minilm128.hfs -ort-threads 2 -ort-profile /tmp/minilm
func BenchmarkORTEncode(b *testing.B) {
	if *benchEncode == "" {
		b.Skip("give -encode-program PATH (exported with --delegate onnx)")
	}
	_, f := openBenchProgram(b, *benchEncode)
	lib, err := ort.Open(orttest.LibPath(b))
	if err != nil {
		b.Fatal(err)
	}
	x, err := ort.New(lib, f, ort.Options{Threads: *benchThreads, Spin: *benchSpin, ProfilePrefix: *benchProfile})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	e, err := runner.NewEncoder(&f.Manifest, x, runner.EncoderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	md := f.Manifest.Metadata
	B, S := md.Encoder.Batch, md.MaxContext
	rng := rand.New(rand.NewPCG(1, 2))
	seqs := make([]runner.Sequence, B)
	for i := range seqs {
		ids := make([]int, S)
		for j := range ids {
			ids[j] = 1000 + rng.IntN(md.VocabSize-1000)
		}
		seqs[i] = runner.Sequence{IDs: ids}
	}
	if _, err := e.Encode(context.Background(), seqs); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := e.Encode(context.Background(), seqs); err != nil {
			b.Fatal(err)
		}
	}
}
