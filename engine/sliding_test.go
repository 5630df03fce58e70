package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
)

// slidingModel is a checkpoint with sliding layers of window W, and a prompt long enough
// to wrap its ring several times.
type slidingModel struct {
	name   string
	window int
	prompt []int
	// export returns the program for a sliding layout and prefill step (0: decode only),
	// with float32 caches, every prefill row's logits and a context longer than the prompt.
	export func(layout program.SlidingLayout, prefill int) []byte
}

// slidingModels: the Gemma 3 fixture (5 sliding layers of window 4 + 1 full) and the
// Mistral fixture with sliding_window set to 3 (every layer slides).
func slidingModels(t testing.TB) []slidingModel {
	t.Helper()
	ref, err := testckpt.Reference("gemma3")
	if err != nil {
		t.Fatal(err)
	}
	mistral := randomWithConfig(t, "mistral", map[string]any{"sliding_window": 3})
	mref, err := testckpt.Reference("mistral")
	if err != nil {
		t.Fatal(err)
	}
	prompt := func(ids []int, n int) []int {
		if len(ids) < n {
			t.Fatalf("reference prompt has %d tokens, need %d", len(ids), n)
		}
		return ids[:n]
	}
	return []slidingModel{
		{name: "gemma3", window: 4, prompt: prompt(ref.InputIDs, 3*4+2),
			export: func(layout program.SlidingLayout, prefill int) []byte {
				return exportFixture(t, "gemma3", gemma3Options(prefill, layout))
			}},
		{name: "mistral-window3", window: 3, prompt: prompt(mref.InputIDs, 3*3+2),
			export: func(layout program.SlidingLayout, prefill int) []byte {
				return exporttest.Program(t, mistral, export.Options{Context: 12, Prefill: prefill,
					PrefillLogits: program.LogitsAll, CacheDType: program.F32, SlidingLayout: layout})
			}},
	}
}

// randomWithConfig is fixture name with some config.json fields replaced (nil: null).
func randomWithConfig(t testing.TB, name string, fields map[string]any) fstest.MapFS {
	t.Helper()
	fsys, err := testckpt.Random(name)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(fsys["config.json"].Data, &cfg); err != nil {
		t.Fatal(err)
	}
	maps.Copy(cfg, fields)
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := maps.Clone(fsys)
	out["config.json"] = &fstest.MapFile{Data: data, Mode: 0o444}
	return out
}

// logitsInPieces appends tokens to one fresh session in consecutive pieces (the last
// piece takes what is left) and returns the logits after every token.
func logitsInPieces(t testing.TB, m *Model, tokens []int, pieces ...int) [][]float32 {
	t.Helper()
	s, err := m.Runner.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var rows [][]float32
	for done := 0; done < len(tokens); {
		n := len(tokens) - done
		if len(pieces) > 0 {
			n, pieces = min(pieces[0], n), pieces[1:]
		}
		err := s.AppendEach(context.Background(), tokens[done:done+n], func(_ int, row []float32) error {
			rows = append(rows, append([]float32(nil), row...))
			return nil
		})
		if err != nil {
			t.Fatalf("append tokens %d..%d: %v", done, done+n-1, err)
		}
		done += n
	}
	return rows
}

// A ring cache of W rows, a full-length cache, one token per step and chunked prefill of
// any size give the same logits, on prompts around the window size and across chunk
// boundaries that fall anywhere in the ring.
func TestSlidingRingEqualsFullLayoutAndDecodeOnly(t *testing.T) {
	const tol = 1e-5
	for _, sm := range slidingModels(t) {
		W := sm.window
		export1 := func(layout program.SlidingLayout, prefill int) *Model {
			return loadModel(t, sm.export(layout, prefill), 1)
		}
		base := allLogits(t, export1(program.LayoutRing, 0), sm.prompt) // one token per step
		worst := 0.0
		check := func(t *testing.T, got [][]float32) {
			d, at := maxAbsDiff(base[:len(got)], got)
			worst = max(worst, d)
			if d > tol {
				t.Errorf("max |logit diff| vs one token per step = %.3g at position %d, want ≤ %g", d, at, tol)
			}
		}
		programs := []struct {
			layout  program.SlidingLayout
			prefill int
		}{{program.LayoutFull, 0}, {program.LayoutRing, W - 1}, {program.LayoutRing, 2 * W}, {program.LayoutFull, 2 * W}}
		for _, pr := range programs {
			m := export1(pr.layout, pr.prefill)
			md := m.Runner.Metadata()
			for l, ly := range md.Layers {
				want := md.MaxContext
				if ly.Type == program.LayerSliding && pr.layout == program.LayoutRing {
					want = W
				}
				if ly.CacheRows != want {
					t.Errorf("%s %s layout: layer %d (%s) has %d cache rows, want %d", sm.name, pr.layout, l, ly.Type, ly.CacheRows, want)
				}
			}
			for _, n := range []int{1, W - 1, W, W + 1, 3*W + 2} {
				t.Run(fmt.Sprintf("%s/%s/prefill=%d/prompt=%d", sm.name, pr.layout, pr.prefill, n), func(t *testing.T) {
					check(t, allLogits(t, m, sm.prompt[:n]))
				})
			}
			// Appends that start mid-ring: pieces of 1, W-1, W+1 and the rest.
			t.Run(fmt.Sprintf("%s/%s/prefill=%d/pieces", sm.name, pr.layout, pr.prefill), func(t *testing.T) {
				check(t, logitsInPieces(t, m, sm.prompt, 1, W-1, W+1))
			})
		}
		t.Logf("%s: worst max |logit diff| vs one token per step %.3g", sm.name, worst)
	}
}

// A window at least as long as the context changes nothing; a short one changes the logits
// once the prompt is longer than the window (so the window is really applied).
func TestSlidingWindowTakesEffectOnlyBeyondTheWindow(t *testing.T) {
	ref, err := testckpt.Reference("mistral")
	if err != nil {
		t.Fatal(err)
	}
	const C = 16
	prompt := ref.InputIDs[:min(len(ref.InputIDs), C)]
	logits := func(window any) [][]float32 {
		fsys := randomWithConfig(t, "mistral", map[string]any{"sliding_window": window})
		m := loadModel(t, exporttest.Program(t, fsys, export.Options{Context: C, Prefill: 4, PrefillLogits: program.LogitsAll, CacheDType: program.F32}), 1)
		if got := m.Runner.Metadata().SlidingWindow; window != nil && got != window.(int) {
			t.Fatalf("sliding_window %v exported as %d", window, got)
		}
		return allLogits(t, m, prompt)
	}
	none := logits(nil)
	if d, at := maxAbsDiff(none, logits(C)); d != 0 {
		t.Errorf("sliding_window = context: max |logit diff| vs no window = %.3g at position %d, want 0", d, at)
	}
	short := logits(3)
	if d, at := maxAbsDiff(none[:3], short[:3]); d != 0 {
		t.Errorf("sliding_window 3, first 3 positions: max |logit diff| vs no window = %.3g at position %d, want 0", d, at)
	}
	for i := 3; i < len(prompt); i++ {
		if d, _ := maxAbsDiff(none[i:i+1], short[i:i+1]); d < 1e-3 {
			t.Errorf("sliding_window 3, position %d: max |logit diff| vs no window = %.3g, want a visible change", i, d)
		}
	}
}

// With float16 caches the ring and full-length layouts still agree exactly: both round the
// same K and V rows.
func TestSlidingRingEqualsFullLayoutWithFloat16Caches(t *testing.T) {
	f16 := func(layout program.SlidingLayout, prefill int) export.Options {
		opts := gemma3Options(prefill, layout)
		opts.CacheDType = program.F16
		return opts
	}
	ref, err := testckpt.Reference("gemma3")
	if err != nil {
		t.Fatal(err)
	}
	ring := allLogits(t, loadModel(t, exportFixture(t, "gemma3", f16(program.LayoutRing, 8)), 1), ref.InputIDs)
	full := allLogits(t, loadModel(t, exportFixture(t, "gemma3", f16(program.LayoutFull, 8)), 1), ref.InputIDs)
	if d, at := maxAbsDiff(ring, full); d > 1e-5 {
		t.Errorf("gemma3, f16 caches: max |logit diff| ring vs full layout = %.3g at position %d, want ≤ 1e-5", d, at)
	}
	mistral := randomWithConfig(t, "mistral", map[string]any{"sliding_window": 3})
	mref, err := testckpt.Reference("mistral")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][][]float32
	for _, layout := range []program.SlidingLayout{program.LayoutRing, program.LayoutFull} {
		m := loadModel(t, exporttest.Program(t, mistral, export.Options{Context: 18, Prefill: 5, PrefillLogits: program.LogitsAll,
			CacheDType: program.F16, SlidingLayout: layout}), 1)
		rows = append(rows, logitsInPieces(t, m, mref.InputIDs, 2, 7))
	}
	if d, at := maxAbsDiff(rows[0], rows[1]); d > 1e-5 {
		t.Errorf("mistral window 3, f16 caches: max |logit diff| ring vs full layout = %.3g at position %d, want ≤ 1e-5", d, at)
	}
}

// A window longer than the context gives sliding layers min(W, C) = C rows; the program
// runs to the full context and equals the full-length layout.
func TestSlidingWindowLongerThanTheContext(t *testing.T) {
	const C = 5
	fsys := gemma2Checkpoint(t, map[string]any{"sliding_window": 8})
	var rows [][][]float32
	for _, layout := range []program.SlidingLayout{program.LayoutRing, program.LayoutFull} {
		m := loadModel(t, exporttest.Program(t, fsys, export.Options{Context: C, Prefill: 2, PrefillLogits: program.LogitsAll,
			CacheDType: program.F32, SlidingLayout: layout}), 1)
		md := m.Runner.Metadata()
		for l, ly := range md.Layers {
			if ly.CacheRows != C {
				t.Errorf("%s layout: layer %d (%s) has %d cache rows, want min(W=8, C=%d) = %d", layout, l, ly.Type, ly.CacheRows, C, C)
			}
		}
		if md.SlidingWindow != 8 {
			t.Errorf("%s layout: sliding window %d, want 8", layout, md.SlidingWindow)
		}
		rows = append(rows, allLogits(t, m, gemma2Prompt[:C]))
	}
	if d, at := maxAbsDiff(rows[0], rows[1]); d > 1e-5 {
		t.Errorf("max |logit diff| ring vs full layout = %.3g at position %d, want ≤ 1e-5", d, at)
	}
}
