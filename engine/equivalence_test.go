package engine

import (
	"fmt"
	"io/fs"
	"testing"

	"github.com/hfstatic/hfstatic/internal/exec"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
)

// Any prefill size, including ones that do not divide the prompt, gives the decode-only
// program's logits bit for bit, with f32 and f16 caches: every matrix-product row runs the
// decode arithmetic whatever the step's row count, element-wise ops run row by row, and
// with f16 caches the current rows are rounded to f16 before attention, as a later step
// reads them back. Repeated runs, with 1 or 2 threads, are bit-identical too.
func TestPrefillSizesMatchDecodeOnly(t *testing.T) {
	for _, m := range equivalenceModels(t) {
		for _, cache := range []program.DType{program.F32, program.F16} {
			opts := export.Options{Context: 80, CacheDType: cache, PrefillLogits: program.LogitsAll}
			fsys := exporttest.Program(t, m.fsys, opts)
			want := allLogits(t, loadModel(t, fsys, 1), m.tokens)
			again := allLogits(t, loadModel(t, fsys, 2), m.tokens)
			if d, at := maxAbsDiff(want, again); d != 0 {
				t.Errorf("%s/%s: two decode-only runs differ by %g at position %d", m.name, cache, d, at)
			}
			for _, p := range []int{2, 3, 5, 7, 16, 64, 80} {
				t.Run(fmt.Sprintf("%s/cache=%s/prefill=%d", m.name, cache, p), func(t *testing.T) {
					o := opts
					o.Prefill = p
					got := allLogits(t, loadModel(t, exporttest.Program(t, m.fsys, o), 2), m.tokens)
					if d, at := maxAbsDiff(want, got); d != 0 {
						t.Errorf("max |prefill - decode-only| = %.3g at position %d, want 0 (bit-identical)", d, at)
					}
				})
			}
		}
	}
}

// Grouped-query attention over float16 caches reads each key and value once for all the
// query heads that share it; every head's arithmetic is unchanged, so the logits equal
// the per-head path's bit for bit (stories260K and Qwen3 both have two query heads per
// key/value head), for decode-only and prefill programs.
func TestGroupedAttentionEqualsPerHead(t *testing.T) {
	for _, m := range equivalenceModels(t) {
		for _, prefill := range []int{0, 7} {
			opts := export.Options{Context: 80, Prefill: prefill, CacheDType: program.F16, PrefillLogits: program.LogitsAll}
			data := exporttest.Program(t, m.fsys, opts)
			perHead, err := load(data, Options{Threads: 2}, exec.Options{Threads: 2, PerHeadAttention: true})
			if err != nil {
				t.Fatal(err)
			}
			want := allLogits(t, perHead, m.tokens)
			perHead.Close()
			got := allLogits(t, loadModel(t, data, 2), m.tokens)
			if d, at := maxAbsDiff(want, got); d != 0 {
				t.Errorf("%s prefill %d: max |grouped - per-head| = %.3g at position %d, want 0", m.name, prefill, d, at)
			}
		}
	}
}

type equivalenceModel struct {
	name   string
	fsys   fs.FS
	tokens []int
}

// equivalenceModels are the checkpoints the equivalence tests run, with a prompt each:
// stories260K with run.c's tokens and the random Qwen3 with llama.cpp's.
func equivalenceModels(t *testing.T) []equivalenceModel {
	t.Helper()
	ref, _ := readRunc(t)
	qwen, err := testckpt.Random("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	qref, err := testckpt.Reference("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	return []equivalenceModel{{"stories260K", models.Stories260K(), ref.InputIDs}, {"qwen3", qwen, qref.InputIDs}}
}
