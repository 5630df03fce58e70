package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/runner"

	"github.com/hfstatic/hfstatic/internal/export"
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
	d := exportFS(t, fsys, opts)
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

// Gemma 3 (5 sliding layers with window 4, then 1 full; 17-token prompt) against llama.cpp.
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
				worst := compareReference(t, ref, rows, 2e-3)
				t.Logf("worst |diff|/range %.2g", worst)
			})
		}
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
	}{{program.LayoutRing, program.F16, W}, {program.LayoutRing, program.F32, W}, {program.LayoutFull, program.F32, C}} {
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
