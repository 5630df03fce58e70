package engine

import (
	"bytes"
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
)

// The Phi-3 fixtures (internal/testckpt/testdata/README.md): Phi-3-mini-4k with a
// sliding window of 7, Phi-3.5-mini's longrope at a context below its original (short
// factors, attention factor), Phi-4-mini's partial rotary and longrope at a context above
// its original (long factors), f32 and bf16. The 40-token prompts are longer than the window
// and than Phi-4-mini's original_max_position_embeddings (32).
var phi3Fixtures = []string{"phi3", "phi35", "phi4mini", "phi4mini-bf16"}

// phi3Options: C = 64, float32 caches, every prefill row's logits.
func phi3Options(prefill int) export.Options {
	return export.Options{Context: 64, Prefill: prefill, PrefillLogits: program.LogitsAll, CacheDType: program.F32}
}

// Against llama.cpp's float32 run on its own conversion, at every prompt position, within
// 1e-3 of the logit range. llama.cpp disables Phi's sliding window (its Phi-3 loader says
// so, llama.cpp PR 13676), so the phi3 fixture is compared with its window removed; the
// float64 test below checks the window.
func TestPhi3MatchesLlamaCpp(t *testing.T) {
	for _, name := range phi3Fixtures {
		ref, err := testckpt.Reference(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, prefill := range []int{0, 3, 16} {
			t.Run(fmt.Sprintf("%s/prefill=%d", name, prefill), func(t *testing.T) {
				var data []byte
				if name == "phi3" {
					data = exporttest.Program(t, withoutSlidingWindow(t, name), phi3Options(prefill))
				} else {
					data = exportFixture(t, name, phi3Options(prefill))
				}
				rows := allLogits(t, loadModel(t, data, 2), ref.InputIDs)
				worst := compareReference(t, ref, rows, 1e-3)
				t.Logf("worst |diff|/range %.2g", worst)
			})
		}
	}
}

// withoutSlidingWindow returns fixture name with config.json's "sliding_window": 7 made null.
func withoutSlidingWindow(t *testing.T, name string) fstest.MapFS {
	t.Helper()
	fsys, err := testckpt.Random(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fsys["config.json"].Data
	edited := bytes.Replace(cfg, []byte(`"sliding_window": 7,`), []byte(`"sliding_window": null,`), 1)
	if bytes.Equal(edited, cfg) {
		t.Fatal(`phi3 config.json has no "sliding_window": 7`)
	}
	out := fstest.MapFS{}
	for n, f := range fsys {
		out[n] = f
	}
	out["config.json"] = &fstest.MapFile{Data: edited, Mode: 0o444}
	return out
}

// Against the float64 NumPy model written from transformers' modeling_phi3.py
// (tools/refs/phi3_ref64.py), sliding window included, within 1e-4 absolute.
func TestPhi3MatchesFloat64Reference(t *testing.T) {
	for _, name := range phi3Fixtures {
		ref, err := testckpt.Float64Reference(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, prefill := range []int{0, 3, 16} {
			t.Run(fmt.Sprintf("%s/prefill=%d", name, prefill), func(t *testing.T) {
				rows := allLogits(t, loadModel(t, exportFixture(t, name, phi3Options(prefill)), 2), ref.InputIDs)
				worst := compareAbsolute(t, ref, rows, 1e-4)
				t.Logf("worst |diff| %.2g", worst)
			})
		}
	}
}
