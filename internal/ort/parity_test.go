//go:build ort

package ort_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/ort/orttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

var allParity = flag.Bool("ort-all", false, "TestLogitsMatchGoExecutor: every prefill size on every checkpoint")

var (
	programsMu sync.Mutex
	programs   = map[string][]byte{}
)

// program exports a checkpoint with its ONNX graphs, once per key.
func exportONNX(t testing.TB, key string, fsys func() (fs.FS, error), opts export.Options) []byte {
	t.Helper()
	programsMu.Lock()
	defer programsMu.Unlock()
	if data, ok := programs[key]; ok {
		return data
	}
	src, err := fsys()
	if err != nil {
		t.Fatal(err)
	}
	opts.Delegate = export.DelegateONNX
	data := exporttest.Program(t, src, opts)
	programs[key] = data
	return data
}

func stories() (fs.FS, error) { return models.Stories260K(), nil }

func random(name string) func() (fs.FS, error) {
	return func() (fs.FS, error) { return testckpt.Random(name) }
}

// executors loads the same program on the Go executor and on ONNX Runtime.
func executors(t testing.TB, data []byte) (goModel, ortModel *engine.Model) {
	t.Helper()
	lib := orttest.LibPath(t)
	var out [2]*engine.Model
	for i, name := range []string{engine.ExecutorGo, engine.ExecutorORT} {
		m, err := engine.Load(data, engine.Options{Threads: 1, Executor: name, ORTLib: lib})
		if err != nil {
			t.Fatalf("load on %s: %v", name, err)
		}
		t.Cleanup(func() { m.Close() })
		out[i] = m
	}
	return out[0], out[1]
}

func newSession(t testing.TB, r *runner.Runner) *runner.Session {
	t.Helper()
	s, err := r.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func appendTokens(t testing.TB, s *runner.Session, toks []int) []float32 {
	t.Helper()
	if err := s.Append(context.Background(), toks); err != nil {
		t.Fatalf("append %d tokens at %d: %v", len(toks), s.Position(), err)
	}
	return slices.Clone(s.Logits().View())
}

// tokens returns n token ids below vocab, deterministic.
func tokens(n, vocab, seed int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (seed*131 + i*37 + 7) % vocab
	}
	return out
}

func maxDiff(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// chunks are the appends of every parity case: prefill steps with padding, then decode
// steps; 20 tokens wrap Gemma 3's window-4 ring caches several times.
var chunks = []int{11, 3, 1, 1, 4}

// TestLogitsMatchGoExecutor appends the same tokens on both executors and compares the
// logits after every append. f32 weights and caches within 1e-4 (absolute); f16 caches
// within 1e-3 with the same argmax (a value on opposite sides of a binary16 rounding
// boundary moves a logit by about that much, as docs/contract.md "Numerics" says); q4 and
// q8: the same argmax at most appends (the Go executor quantizes activations to int8, ORT
// multiplies by dequantized weights in float32).
func TestLogitsMatchGoExecutor(t *testing.T) {
	type parity struct {
		name    string
		source  func() (fs.FS, error)
		opts    export.Options
		tol     float64
		argmax  float64 // the fraction of appends whose argmax must agree
		weights string
	}
	f32 := func(prefill int) export.Options {
		return export.Options{Context: 32, Prefill: prefill, CacheDType: program.F32, Weights: "f32"}
	}
	var cases []parity
	for _, src := range []struct {
		name   string
		source func() (fs.FS, error)
	}{{"stories260K", stories}, {"llama", random("llama")}, {"qwen3", random("qwen3")}, {"qwen2", random("qwen2")},
		{"mistral", random("mistral")}, {"gemma3", random("gemma3")}} {
		for _, p := range []int{0, 7, 16} {
			// prefill sizes 0 and 16 on stories260K and Gemma 3 (ring caches) only, unless
			// -ort-all: the random checkpoints' 128K–152K vocabularies make each case slow
			if p != 7 && src.name != "stories260K" && src.name != "gemma3" && !*allParity {
				continue
			}
			cases = append(cases, parity{name: fmt.Sprintf("%s/prefill=%d", src.name, p), source: src.source, opts: f32(p), tol: 1e-4, argmax: 1})
		}
	}
	for _, src := range []string{"qwen3", "gemma3"} {
		o := f32(7)
		o.CacheDType = program.F16
		cases = append(cases, parity{name: src + "/f16-cache", source: random(src), opts: o, tol: 2e-3, argmax: 1})
	}
	o := f32(7)
	o.CacheDType = program.F16
	cases = append(cases, parity{name: "stories260K/f16-cache", source: stories, opts: o, tol: 2e-3, argmax: 1})
	for _, w := range []string{"q8", "q4"} {
		o := f32(7)
		o.Weights = w
		cases = append(cases, parity{name: "stories260K/weights=" + w, source: stories, opts: o, tol: math.Inf(1), argmax: 0.8})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := exportONNX(t, c.name, c.source, c.opts)
			gm, om := executors(t, data)
			gs, ors := newSession(t, gm.Runner), newSession(t, om.Runner)
			V := gm.Runner.Metadata().VocabSize
			var worst float64
			agree, total := 0, 0
			for i, n := range chunks {
				toks := tokens(n, V, i)
				want, got := appendTokens(t, gs, toks), appendTokens(t, ors, toks)
				d := maxDiff(want, got)
				worst = max(worst, d)
				if d > c.tol {
					t.Errorf("append %d (%d tokens at %d): logits differ by %.3g, want ≤ %g", i, n, gs.Position()-n, d, c.tol)
				}
				total++
				if argmax(want) == argmax(got) {
					agree++
				}
			}
			if float64(agree) < c.argmax*float64(total) {
				t.Errorf("argmax agrees on %d of %d appends, want ≥ %.0f%%", agree, total, 100*c.argmax)
			}
			t.Logf("%d appends, largest logit difference %.3g, argmax agrees %d/%d", total, worst, agree, total)
		})
	}
}

// TestSessionsBehaveTheSameOnORT: fork, save/restore, rewind and the pool give the same
// logits on ONNX Runtime as on the Go executor (the session layer is executor-agnostic).
func TestSessionsBehaveTheSameOnORT(t *testing.T) {
	data := exportONNX(t, "gemma3/prefill=7", random("gemma3"), export.Options{Context: 32, Prefill: 7, CacheDType: program.F32, Weights: "f32"})
	gm, om := executors(t, data)
	V := gm.Runner.Metadata().VocabSize
	prompt, more := tokens(9, V, 1), tokens(3, V, 2)
	// script runs the same session operations on one executor and returns the logits seen.
	script := func(t *testing.T, m *engine.Model) [][]float32 {
		r := m.Runner
		var seen [][]float32
		s := newSession(t, r)
		seen = append(seen, appendTokens(t, s, prompt))
		f, err := s.Fork()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		seen = append(seen, appendTokens(t, f, more))
		var saved bytes.Buffer
		if err := f.Save(&saved); err != nil {
			t.Fatal(err)
		}
		restored, err := r.RestoreSession(&saved)
		if err != nil {
			t.Fatal(err)
		}
		defer restored.Close()
		seen = append(seen, appendTokens(t, restored, more[:1]))
		if err := s.Rewind(8); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, appendTokens(t, s, more))
		pool, err := runner.NewPool(r, runner.PoolOptions{MaxSessions: 2, MemoryBudget: 4 * r.SessionBytes()})
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		ctx := context.Background()
		for _, toks := range [][]int{prompt, append(slices.Clone(prompt), more...)} {
			l, err := pool.Acquire(ctx, toks)
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, appendTokens(t, l.Session, toks[l.Session.Position():]))
			l.Release()
		}
		return seen
	}
	want, got := script(t, gm), script(t, om)
	for i := range want {
		if d := maxDiff(want[i], got[i]); d > 1e-4 {
			t.Errorf("logits %d differ by %.3g between the executors, want ≤ 1e-4", i, d)
		}
	}
}

// BenchmarkORTDecodeAppend: one decode append on ORT (its allocations are reported; the
// RunWithBinding call itself allocates nothing: TestSessionReadsMappedWeightsAndWritesBoundBuffers).
func BenchmarkORTDecodeAppend(b *testing.B) {
	data := exportONNX(b, "stories260K/prefill=7", stories, export.Options{Context: 32, Prefill: 7, CacheDType: program.F32, Weights: "f32"})
	_, om := executors(b, data)
	s := newSession(b, om.Runner)
	appendTokens(b, s, []int{1, 2, 3})
	tok := []int{5}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Append(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
		s.Rewind(3)
	}
}

// Closing the model before its sessions (the order a deferred Close can give) is safe: the
// executor releases the bindings before the sessions, and a step run afterwards fails.
func TestORTModelClosedBeforeSessions(t *testing.T) {
	data := exportONNX(t, "stories260K/prefill=7", stories, export.Options{Context: 32, Prefill: 7, CacheDType: program.F32, Weights: "f32"})
	m, err := engine.Load(data, engine.Options{Threads: 1, Executor: engine.ExecutorORT, ORTLib: orttest.LibPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Runner.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	appendTokens(t, s, []int{1, 2, 3})
	m.Close()
	if err := s.Append(context.Background(), []int{4}); err == nil {
		t.Error("append after the model closed succeeded")
	}
	s.Close()
}
