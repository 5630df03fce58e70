package engine

import (
	"fmt"
	"io/fs"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
)

// Any prefill size, including ones that do not divide the prompt, gives the decode-only
// program's logits; repeated runs are bit-identical. Prefill (m ≥ 4 rows) runs the GEMM,
// decode the GEMV: they sum in different orders, so the bound is float32 rounding relative
// to each row's logit range — and, with float16 caches, one f16 rounding step of a cached
// value that lands on the other side of a rounding boundary.
func TestPrefillSizesMatchDecodeOnly(t *testing.T) {
	ref, _ := readRunc(t)
	qwen, err := testckpt.Random("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	qref, err := testckpt.Reference("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		fsys   fs.FS
		tokens []int
	}{
		{"stories260K", models.Stories260K(), ref.InputIDs},
		{"qwen3", qwen, qref.InputIDs},
	}
	for _, m := range cases {
		for _, cache := range []program.DType{program.F32, program.F16} {
			opts := export.Options{Context: 80, CacheDType: cache, PrefillLogits: program.LogitsAll}
			fsys := exportFS(t, m.fsys, opts)
			want := allLogits(t, loadModel(t, fsys, 1), m.tokens)
			again := allLogits(t, loadModel(t, fsys, 2), m.tokens)
			if d, at := maxAbsDiff(want, again); d != 0 {
				t.Errorf("%s/%s: two decode-only runs differ by %g at position %d", m.name, cache, d, at)
			}
			for _, p := range []int{2, 3, 5, 7, 16, 64, 80} {
				t.Run(fmt.Sprintf("%s/cache=%s/prefill=%d", m.name, cache, p), func(t *testing.T) {
					o := opts
					o.Prefill = p
					got := allLogits(t, loadModel(t, exportFS(t, m.fsys, o), 2), m.tokens)
					tol := 1e-6
					if cache == program.F16 {
						tol = 1e-3
					}
					if d, at := maxRelDiff(want, got); !(d <= tol) {
						t.Errorf("max |prefill - decode-only|/range = %.3g at position %d, want ≤ %g", d, at, tol)
					}
				})
			}
		}
	}
}
