package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/runner"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/safetensors"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
)

// exported caches programs exported from fixtures, so tests that need the same program
// share one export (each Gemma 3 export converts a 33 MB embedding table).
var exported struct {
	sync.Mutex
	data map[string][]byte
}

// exportFixture exports fixture name (testckpt.Random) once per options for the process.
// The returned bytes are shared and must not be modified.
func exportFixture(t testing.TB, name string, opts export.Options) []byte {
	t.Helper()
	key := fmt.Sprintf("%s %d %d %s %s %s", name, opts.Context, opts.Prefill, opts.PrefillLogits, opts.CacheDType, opts.SlidingLayout)
	if opts.Weights != "" || opts.Keep != nil || opts.Progress != nil {
		t.Fatalf("exportFixture does not cache options %+v", opts)
	}
	exported.Lock()
	defer exported.Unlock()
	if d, ok := exported.data[key]; ok {
		return d
	}
	fsys, err := testckpt.Random(name)
	if err != nil {
		t.Fatal(err)
	}
	d := exporttest.Program(t, fsys, opts)
	if exported.data == nil {
		exported.data = map[string][]byte{}
	}
	exported.data[key] = d
	return d
}

// gemma3Options are the export options the Gemma 3 tests share: C = 40, float32 caches,
// every prefill row's logits.
func gemma3Options(prefill int, layout program.SlidingLayout) export.Options {
	return export.Options{Context: 40, Prefill: prefill, PrefillLogits: program.LogitsAll, CacheDType: program.F32, SlidingLayout: layout}
}

// Gemma 3 (5 sliding layers with window 4, then 1 full; 17-token prompt) against llama.cpp,
// at every position, for prefill chunks shorter than, equal to and longer than the window
// and one longer than the prompt. docs/architecture.md ("How correctness is shown") asks
// 1e-3 of the logit range (the issue 2e-3).
func TestGemma3MatchesLlamaCpp(t *testing.T) {
	for _, name := range []string{"gemma3", "gemma3-bf16"} {
		ref, err := testckpt.Reference(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, prefill := range []int{0, 3, 8, 16} {
			t.Run(fmt.Sprintf("%s/prefill=%d", name, prefill), func(t *testing.T) {
				data := exportFixture(t, name, gemma3Options(prefill, program.LayoutRing))
				rows := allLogits(t, loadModel(t, data, 2), ref.InputIDs)
				worst := compareReference(t, ref, rows, 1e-3)
				t.Logf("worst |diff|/range %.2g", worst)
			})
		}
		// The default float16 cache rounds K and V; llama.cpp's reference keeps float32.
		t.Run(name+"/cache=f16/prefill=8", func(t *testing.T) {
			opts := gemma3Options(8, program.LayoutRing)
			opts.CacheDType = program.F16
			rows := allLogits(t, loadModel(t, exportFixture(t, name, opts), 2), ref.InputIDs)
			worst := compareReference(t, ref, rows, 1e-3)
			t.Logf("worst |diff|/range %.2g", worst)
		})
	}
}

// countingAllocator records every session allocation.
type countingAllocator struct {
	runner.HeapAllocator
	sizes []int
}

func (a *countingAllocator) Alloc(n int) ([]byte, error) {
	a.sizes = append(a.sizes, n)
	return a.HeapAllocator.Alloc(n)
}

// A Gemma 3 session holds W rows for each sliding layer and C rows for the full one, and
// allocates exactly that plus the per-method I/O.
func TestGemma3CacheBytesMatchTheRingLayout(t *testing.T) {
	const (
		C, P, W          = 40, 8, 4
		kvHeads, headDim = 1, 16
		vocab            = 262208
	)
	for _, tc := range []struct {
		layout      program.SlidingLayout
		cache       program.DType
		slidingRows int
	}{{program.LayoutRing, program.F16, W}, {program.LayoutRing, program.F32, W}, {program.LayoutFull, program.F16, C}} {
		t.Run(fmt.Sprintf("%s/%s", tc.layout, tc.cache), func(t *testing.T) {
			opts := gemma3Options(P, tc.layout)
			opts.CacheDType = tc.cache
			alloc := &countingAllocator{}
			m, err := Load(exportFixture(t, "gemma3", opts), Options{Threads: 1, Allocator: alloc})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			elem := tc.cache.ElemBytes()
			// Prediction: 5 sliding layers then 1 full, K and V each [1, kvHeads, rows, headDim].
			var wantRows []int
			wantCache := 0
			for l := range 6 {
				rows := tc.slidingRows
				if l == 5 {
					rows = C
				}
				wantRows = append(wantRows, rows)
				wantCache += 2 * kvHeads * rows * headDim * elem
			}
			var gotRows []int
			gotCache := 0
			dec, _ := m.File.Manifest.Method("decode")
			for l, ly := range m.Runner.Metadata().Layers {
				gotRows = append(gotRows, ly.CacheRows)
				for _, name := range []string{program.KCache(l), program.VCache(l)} {
					io, ok := dec.Input(name)
					if !ok {
						t.Fatalf("decode has no input %s", name)
					}
					gotCache += io.Bytes()
				}
			}
			if diff := cmp.Diff(wantRows, gotRows); diff != "" {
				t.Errorf("cache rows per layer (-want +got):\n%s", diff)
			}
			if gotCache != wantCache {
				t.Errorf("cache bytes %d, want %d", gotCache, wantCache)
			}
			s, err := m.Runner.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Per method of step S: ids and positions i64 [1,S], mask bool [1,1,S,C], logits
			// f32 [1,S,V] (every row).
			io := func(S int) int { return 8*S + 8*S + S*C + 4*S*vocab }
			wantSession := wantCache + 6*8 + io(1) + io(P)
			total := 0
			for _, n := range alloc.sizes {
				total += n
			}
			if total != wantSession {
				t.Errorf("session allocated %d bytes in %d buffers, want %d (caches %d + counters + I/O)", total, len(alloc.sizes), wantSession, wantCache)
			}
			if got := m.Runner.SessionBytes(); got != int64(wantSession) {
				t.Errorf("Runner.SessionBytes() = %d, want %d", got, wantSession)
			}
			t.Logf("caches %d bytes, session %d bytes", wantCache, wantSession)
		})
	}
}

// Generation runs past the window up to the full context; the first 16 greedy tokens are
// llama.cpp's, and the ring and full-length layouts generate the same tokens.
func TestGemma3GeneratesToTheFullContext(t *testing.T) {
	ref, err := testckpt.Reference("gemma3")
	if err != nil {
		t.Fatal(err)
	}
	const C = 40
	var tokens [][]int
	for _, layout := range []program.SlidingLayout{program.LayoutRing, program.LayoutFull} {
		m := loadModel(t, exportFixture(t, "gemma3", gemma3Options(8, layout)), 2)
		s, err := m.Runner.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := generate.Run(context.Background(), s, ref.InputIDs, generate.Options{MaxTokens: 1000})
		if err != nil {
			t.Fatalf("%s layout: generate: %v", layout, err)
		}
		if want := C - len(ref.InputIDs) + 1; len(res.Tokens) != want || res.Reason != generate.StopContextFull || !res.Clamped {
			t.Errorf("%s layout: %d tokens, reason %s, clamped %v; want %d tokens, context_full, clamped", layout, len(res.Tokens), res.Reason, res.Clamped, want)
		}
		if s.Position() != C {
			t.Errorf("%s layout: session at position %d, want the full context %d", layout, s.Position(), C)
		}
		if err := s.Append(context.Background(), []int{res.Tokens[0]}); !errors.Is(err, runner.ErrContextFull) {
			t.Errorf("%s layout: append past the context: %v, want ErrContextFull", layout, err)
		}
		if n := len(ref.GreedyIDs); !slices.Equal(res.Tokens[:n], ref.GreedyIDs) {
			t.Errorf("%s layout: greedy tokens differ from llama.cpp's\n got %v\nwant %v", layout, res.Tokens[:n], ref.GreedyIDs)
		}
		tokens = append(tokens, res.Tokens)
	}
	if !slices.Equal(tokens[0], tokens[1]) {
		t.Errorf("ring and full layouts generate different tokens:\nring %v\nfull %v", tokens[0], tokens[1])
	}
}

// gemma2Checkpoint is a tiny Gemma 2 (4 layers alternating sliding/full with window 3)
// with random weights in the fixtures' initialisation; set replaces config fields (nil:
// null). There is no independent reference for Gemma 2 here: tests check relations.
func gemma2Checkpoint(t testing.TB, set map[string]any) fstest.MapFS {
	t.Helper()
	cfg := map[string]any{
		"architectures": []string{"Gemma2ForCausalLM"}, "model_type": "gemma2",
		"vocab_size": 512, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 4,
		"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
		"hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
		"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "query_pre_attn_scalar": 16,
		"sliding_window": 3, "attn_logit_softcapping": 2.0, "final_logit_softcapping": 3.0,
		"bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
	}
	for k, v := range set {
		cfg[k] = v
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := testckpt.Synthesize(data, 2, "F32")
	if err != nil {
		t.Fatal(err)
	}
	weights, err := testckpt.Generate(spec, safetensors.F32)
	if err != nil {
		t.Fatal(err)
	}
	return fstest.MapFS{
		"config.json":            {Data: data},
		"generation_config.json": {Data: []byte(`{"bos_token_id": 2, "eos_token_id": 1}`)},
		"model.safetensors":      {Data: weights},
	}
}

var gemma2Prompt = []int{2, 17, 300, 45, 45, 9, 511, 120, 77, 3, 250, 64, 8}

func gemma2Logits(t *testing.T, set map[string]any, opts export.Options) [][]float32 {
	t.Helper()
	m := loadModel(t, exporttest.Program(t, gemma2Checkpoint(t, set), opts), 1)
	return allLogits(t, m, gemma2Prompt)
}

// The final soft-cap is cap·tanh(logit/cap) of the uncapped logits; the attention soft-cap
// changes the logits; the alternating ring layout equals the full-length layout and
// one token per step.
func TestGemma2SoftCapsAndAlternatingWindows(t *testing.T) {
	opts := export.Options{Context: 16, Prefill: 5, PrefillLogits: program.LogitsAll, CacheDType: program.F32}
	capped := gemma2Logits(t, nil, opts)
	uncapped := gemma2Logits(t, map[string]any{"final_logit_softcapping": nil}, opts)
	worst := 0.0
	for i := range capped {
		for j, x := range uncapped[i] {
			want := 3 * math.Tanh(float64(x)/3)
			worst = max(worst, math.Abs(float64(capped[i][j])-want))
			if math.Abs(float64(capped[i][j])) > 3 {
				t.Fatalf("position %d logit %d = %g is outside the soft-cap ±3", i, j, capped[i][j])
			}
		}
	}
	if worst > 1e-5 {
		t.Errorf("capped logits differ from 3·tanh(uncapped/3) by up to %.3g, want ≤ 1e-5", worst)
	}
	t.Logf("max |capped - 3·tanh(uncapped/3)| = %.3g", worst)
	if d, _ := maxAbsDiff(uncapped, gemma2Logits(t, map[string]any{"final_logit_softcapping": nil, "attn_logit_softcapping": nil}, opts)); d < 1e-3 {
		t.Errorf("removing the attention soft-cap changed the logits by only %.3g", d)
	}

	m := loadModel(t, exporttest.Program(t, gemma2Checkpoint(t, nil), opts), 1)
	var types []program.LayerType
	var rows []int
	for _, ly := range m.Runner.Metadata().Layers {
		types, rows = append(types, ly.Type), append(rows, ly.CacheRows)
	}
	s, f := program.LayerSliding, program.LayerFull
	if !slices.Equal(types, []program.LayerType{s, f, s, f}) || !slices.Equal(rows, []int{3, 16, 3, 16}) {
		t.Errorf("layers %v with cache rows %v, want sliding/full alternating with rows [3 16 3 16]", types, rows)
	}
	opts.SlidingLayout = program.LayoutFull
	full := gemma2Logits(t, nil, opts)
	decode := gemma2Logits(t, nil, export.Options{Context: 16, CacheDType: program.F32})
	for name, got := range map[string][][]float32{"full layout": full, "one token per step": decode} {
		if d, at := maxAbsDiff(capped, got); d > 1e-5 {
			t.Errorf("%s: max |logit diff| vs ring prefill = %.3g at position %d, want ≤ 1e-5", name, d, at)
		}
	}
}
