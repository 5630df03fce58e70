package onnx_test

import (
	"flag"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"testing"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/internal/onnx"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/sample"
)

// prompt returns n token ids below vocab, deterministic.
func prompt(n, vocab, seed int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (seed*131 + i*37 + 7) % vocab
	}
	return out
}

func randomCheckpoint(t testing.TB, name string) fs.FS {
	t.Helper()
	fsys, err := testckpt.Random(name)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

var allGraphs = flag.Bool("onnx-all", false, "TestGraphsMatchGoExecutor: every family, prefill size and layout (else a subset that keeps the suite fast)")

// TestGraphsMatchGoExecutor runs the same steps through the Go executor and through the
// method graphs on ONNX Runtime (Node.js binding), from the inputs the Go executor saw:
// the logits of every real row agree, and writing the graph's k/v rows into the incoming
// caches as the contract's cache_write does gives the caches the Go executor left.
func TestGraphsMatchGoExecutor(t *testing.T) {
	dir := nodeRuntime(t)
	type check struct {
		name     string
		fsys     func(testing.TB) fs.FS
		opts     export.Options
		prompts  [][]int // appended one after another: prefill steps, then decode steps
		tol      float64 // on the logits, relative to the largest |logit| of the row
		cacheTol float64 // on the caches, relative to their largest |value|
		argmax   bool    // also require the same argmax on every real row
		more     bool    // run with -onnx-all only
	}
	stories := func(testing.TB) fs.FS { return models.Stories260K() }
	random := func(name string) func(testing.TB) fs.FS {
		return func(t testing.TB) fs.FS { return randomCheckpoint(t, name) }
	}
	f32 := func(prefill int) export.Options {
		return export.Options{Context: 32, Prefill: prefill, CacheDType: program.F32, Weights: "f32", Delegate: export.DelegateONNX}
	}
	// 31 of the 32 positions in four appends: prefill steps with padding, the context-tail
	// decode fallback, and a window-4 ring cache (Gemma 3) wrapped many times
	mixed := [][]int{prompt(11, 250, 1), prompt(3, 250, 2), prompt(1, 250, 3), prompt(16, 250, 4)}
	var checks []check
	add := func(name string, fsys func(testing.TB) fs.FS, opts export.Options) *check {
		checks = append(checks, check{name: name, fsys: fsys, opts: opts, prompts: mixed, tol: 1e-5})
		return &checks[len(checks)-1]
	}
	for _, p := range []int{0, 7, 16} {
		add(fmt.Sprintf("stories260K/prefill=%d", p), stories, f32(p))
		add(fmt.Sprintf("gemma3/prefill=%d", p), random("gemma3"), f32(p)).more = p != 7
		if p == 0 { // decode steps only: fewer tokens (the window-4 ring still wraps)
			checks[len(checks)-2].prompts = mixed[:3]
			checks[len(checks)-1].prompts = mixed[:3]
		}
	}
	all := f32(7)
	all.PrefillLogits = program.LogitsAll
	add("stories260K/prefill-logits=all", stories, all)
	full := f32(7)
	full.SlidingLayout = program.LayoutFull
	add("gemma3/sliding-layout=full", random("gemma3"), full).more = true
	add("llama/prefill=7", random("llama"), f32(7))
	add("qwen3/prefill=16", random("qwen3"), f32(16)).more = true
	add("qwen2/prefill=7", random("qwen2"), f32(7)).more = true
	mistral := add("mistral/prefill=0", random("mistral"), f32(0))
	mistral.prompts, mistral.more = mixed[:2], true
	for _, name := range []string{"olmo2", "smollm3", "granite", "phi3", "phi4mini", "mixtral", "qwen3moe"} {
		// one family per new op: scale (Granite), moe (Qwen3-MoE)
		add(name+"/prefill=7", random(name), f32(7)).more = name != "granite" && name != "qwen3moe"
	}
	f16 := f32(7)
	f16.CacheDType = program.F16
	for _, name := range []string{"stories260K", "gemma3", "qwen3"} {
		fsys := stories
		if name != "stories260K" {
			fsys = random(name)
		}
		c := add(name+"/cache=f16", fsys, f16)
		c.tol, c.cacheTol, c.argmax = 1e-3, 2e-3, true // one binary16 rounding either side
		c.more = name == "qwen3"
	}
	for _, w := range []string{"f16", "bf16", "q8", "q4"} {
		o := f32(7)
		o.Weights = w
		for _, name := range []string{"stories260K", "qwen3"} {
			if name == "qwen3" && w != "q4" {
				continue
			}
			fsys := stories
			if name != "stories260K" {
				fsys = random(name)
			}
			c := add(name+"/weights="+w, fsys, o)
			if w == "q8" || w == "q4" {
				// the Go executor quantizes activations to int8 for these (docs/contract.md,
				// "Numerics"); ORT multiplies by the dequantized weights in float32
				c.tol, c.cacheTol, c.argmax = 2e-2, 5e-2, true
			}
		}
	}
	if !*allGraphs {
		checks = slices.DeleteFunc(checks, func(c check) bool { return c.more })
	}
	// every check's steps go to one run of node (its start and ORT's load cost seconds)
	type ran struct {
		man   *program.Manifest // not the whole program: its weights can go
		steps []recorded
		first int // index of its first case
	}
	runs := make([]ran, len(checks))
	var cases []nodeCase
	for i, c := range checks {
		f := decodeProgram(t, exporttest.Program(t, c.fsys(t), c.opts))
		steps := runGo(t, f, c.prompts...)
		gdir := extract(t, f)
		runs[i] = ran{man: &f.Manifest, steps: steps, first: len(cases)}
		for _, st := range steps {
			cases = append(cases, caseOf(f, gdir, st))
		}
	}
	results := runNode(t, dir, cases)
	for i, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			r := runs[i]
			var worst float64
			for k, st := range r.steps {
				worst = max(worst, compareStep(t, r.man, st, results[r.first+k], c.tol, max(c.cacheTol, 1e-4), c.argmax))
			}
			t.Logf("%d steps, largest logit difference %.2g (relative to the row's largest |logit|)", len(r.steps), worst)
		})
	}
}

// compareStep checks one step's graph outputs against the Go executor's and returns the
// largest relative logit difference.
func compareStep(t *testing.T, man *program.Manifest, st recorded, got map[string][]byte, tol, cacheTol float64, argmax bool) float64 {
	t.Helper()
	md := &man.Metadata
	m, _ := man.Method(st.method)
	S, C := m.Step, md.MaxContext
	positions, mask := align.AsI64(st.in[program.PositionIDs]), st.in[program.AttentionMask]
	pos, n := int(positions[0]), 0
	for i := 0; i < S && pos+i < C && mask[i*C+pos+i] != 0; i++ {
		n++
	}
	rows := n
	if m.Logits == program.LogitsLast {
		rows = 1
	}
	V := md.VocabSize
	want, have := align.AsF32(st.out[program.Logits]), asF32(got[program.Logits])
	if len(have) < rows*V {
		t.Fatalf("%s at %d: graph logits have %d values, want ≥ %d", st.method, pos, len(have), rows*V)
	}
	var worst float64
	for r := range rows {
		w, h := want[r*V:(r+1)*V], have[r*V:(r+1)*V]
		var big, diff float64
		for i := range w {
			big = max(big, math.Abs(float64(w[i])))
			diff = max(diff, math.Abs(float64(w[i]-h[i])))
		}
		rel := diff / max(big, 1e-6)
		worst = max(worst, rel)
		if rel > tol {
			t.Errorf("%s at pos %d (n=%d) row %d: logits differ by %.3g (relative %.3g > %.3g)", st.method, pos, n, r, diff, rel, tol)
		}
		if argmax && sample.Argmax(w) != sample.Argmax(h) {
			t.Errorf("%s at pos %d row %d: argmax %d, graph %d", st.method, pos, r, sample.Argmax(w), sample.Argmax(h))
		}
	}
	// the rows, written as cache_write does, give the caches the Go executor left
	for l, ly := range md.Layers {
		for _, cache := range []struct {
			name string
			D    int
		}{{program.KCache(l), ly.KHeadDim}, {program.VCache(l), ly.VHeadDim}} {
			before, after := cacheValues(md.CacheDType, st.in[cache.name]), cacheValues(md.CacheDType, st.out[cache.name])
			rowsOut := cacheValues(md.CacheDType, got[onnxRows(cache.name)])
			H, L, D := ly.KVHeads, ly.CacheRows, cache.D
			if len(rowsOut) != H*S*D {
				t.Fatalf("%s: %s has %d values, want %d", st.method, onnxRows(cache.name), len(rowsOut), H*S*D)
			}
			for i := max(0, n-L); i < n; i++ {
				slot := (pos + i) % L
				for h := range H {
					copy(before[(h*L+slot)*D:(h*L+slot+1)*D], rowsOut[(h*S+i)*D:(h*S+i+1)*D])
				}
			}
			var big, diff float64
			for i := range after {
				big = max(big, math.Abs(float64(after[i])))
				diff = max(diff, math.Abs(float64(after[i]-before[i])))
			}
			if diff > cacheTol*max(big, 1) {
				t.Errorf("%s at pos %d: %s after the step differs by %.3g from the Go executor's (largest |value| %.3g)", st.method, pos, cache.name, diff, big)
			}
		}
	}
	return worst
}

func onnxRows(cache string) string { return onnx.RowsName(cache) }

func asF32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return out
}

// cacheValues returns a cache's values as float32 (a copy).
func cacheValues(d program.DType, b []byte) []float32 {
	if d != program.F16 {
		return asF32(b)
	}
	h := make([]uint16, len(b)/2)
	for i := range h {
		h[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	out := make([]float32, len(h))
	kernels.F16ToF32(out, h)
	return out
}
