package onnx_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/sample"
)

// TestExtractedDecodeStepOnNode is the outside check: a graph extracted as `hfstatic
// inspect --extract-onnx` writes it (the graph file and its external data files in one
// folder) loads in onnxruntime-node, and testdata/check.mjs, which reads the inputs'
// names and shapes from the graph, reproduces one decode step's logits from zero caches.
func TestExtractedDecodeStepOnNode(t *testing.T) {
	dir := nodeRuntime(t)
	const token = 37
	for _, c := range []struct {
		name string
		fsys func(testing.TB) fs.FS
		opts export.Options
		tol  float64 // largest absolute logit difference
	}{
		{"stories260K", func(testing.TB) fs.FS { return models.Stories260K() },
			export.Options{Context: 64, Prefill: 16, CacheDType: program.F32, Weights: "f32", Delegate: export.DelegateONNX}, 1e-4},
		{"gemma3/cache=f16", func(t testing.TB) fs.FS { return randomCheckpoint(t, "gemma3") },
			export.Options{Context: 32, CacheDType: program.F16, Weights: "f32", Delegate: export.DelegateONNX}, 1e-4},
		{"qwen3/weights=q4", func(t testing.TB) fs.FS { return randomCheckpoint(t, "qwen3") },
			export.Options{Context: 32, Prefill: 8, CacheDType: program.F16, Weights: "q4", Delegate: export.DelegateONNX}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := decodeProgram(t, exporttest.Program(t, c.fsys(t), c.opts))
			want := align.AsF32(runGo(t, f, []int{token})[0].out[program.Logits])
			gdir := extract(t, f)
			cmd := exec.Command("node", filepath.Join("testdata", "check.mjs"), filepath.Join(gdir, "decode.onnx"), fmt.Sprint(token))
			cmd.Env = append(os.Environ(), ortNodeEnv+"="+dir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node check.mjs: %v\n%s", err, stderr.String())
			}
			var got struct{ Logits []float32 }
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("check.mjs output: %v", err)
			}
			if len(got.Logits) != len(want) {
				t.Fatalf("check.mjs gave %d logits, want %d", len(got.Logits), len(want))
			}
			var diff float64
			for i := range want {
				diff = max(diff, math.Abs(float64(want[i]-got.Logits[i])))
			}
			t.Logf("largest logit difference %.2g", diff)
			if c.tol > 0 && diff > c.tol {
				t.Errorf("logits differ by %.3g, more than %g", diff, c.tol)
			}
			if a, b := sample.Argmax(want), sample.Argmax(got.Logits); a != b {
				t.Errorf("argmax %d, onnxruntime-node %d", a, b)
			}
		})
	}
}
