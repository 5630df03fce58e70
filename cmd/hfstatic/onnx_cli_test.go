package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportDelegateONNXAndExtract: --delegate onnx adds the ONNX graphs beside the op lists
// (the program still runs as before), and inspect --extract-onnx writes them with their
// external data files; a program without them says how to export one.
func TestExportDelegateONNXAndExtract(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "s.hfs")
	out := mustRun(t, "export", storiesDir, "-o", prog, "--prefill", "16", "--context", "64", "--cache-dtype", "f32", "--delegate", "onnx", "-q")
	if !strings.Contains(out, "(and their ONNX graphs)") {
		t.Errorf("export said %q", out)
	}
	if out := mustRun(t, "inspect", prog); !strings.Contains(out, "onnx/decode.onnx onnx/decode.batch2.onnx onnx/decode.batch4.onnx onnx/decode.batch8.onnx onnx/prefill.onnx onnx/initializers.json") {
		t.Errorf("inspect does not list the graphs:\n%s", out)
	}
	ids := strings.TrimSpace(mustRun(t, "generate", prog, "--tokens", "1", "-n", "5", "--temperature", "0", "--ids"))
	if ids != "403,407,261,378,432" {
		t.Errorf("generate --ids = %q, want run.c's first tokens 403,407,261,378,432", ids)
	}
	x := filepath.Join(dir, "graphs")
	out = mustRun(t, "inspect", prog, "--extract-onnx", x)
	if !strings.Contains(out, "wrote decode.onnx, prefill.onnx, decode.batch2.onnx, decode.batch4.onnx, decode.batch8.onnx into "+x+" with 50 external data files") {
		t.Errorf("inspect --extract-onnx said %q", out)
	}
	// The tied embedding is there twice: as it is for the Gather, transposed (f32.t) for the output MatMul.
	for name, size := range map[string]int64{"model.embed_tokens.weight": 512 * 64 * 4, "model.embed_tokens.weight.f32.t": 512 * 64 * 4,
		"model.layers.0.mlp.up_proj.weight.f32.t": 172 * 64 * 4, "model.norm.weight": 64 * 4, "rope.full.cos": 64 * 4 * 4} {
		if st, err := os.Stat(filepath.Join(x, name)); err != nil || st.Size() != size {
			t.Errorf("extracted %s: %v, want %d bytes", name, err, size)
		}
	}
	for _, name := range []string{"decode.onnx", "prefill.onnx", "decode.batch2.onnx", "decode.batch8.onnx"} {
		if st, err := os.Stat(filepath.Join(x, name)); err != nil || st.Size() == 0 {
			t.Errorf("extracted %s: %v", name, err)
		}
	}

	plain := filepath.Join(dir, "plain.hfs")
	mustRun(t, "export", storiesDir, "-o", plain, "--context", "64", "-q")
	_, _, err := run(t, "", "inspect", plain, "--extract-onnx", filepath.Join(dir, "none"))
	if err == nil || !strings.Contains(err.Error(), "--delegate onnx") {
		t.Errorf("extracting from a program without graphs: %v, want an error naming --delegate onnx", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); !os.IsNotExist(err) {
		t.Errorf("the folder was created anyway: %v", err)
	}
	if _, _, err := run(t, "", "export", storiesDir, "-o", filepath.Join(dir, "x.hfs"), "--delegate", "tflite", "-q"); err == nil || !strings.Contains(err.Error(), `delegate "tflite"`) {
		t.Errorf("export --delegate tflite: %v", err)
	}
}
