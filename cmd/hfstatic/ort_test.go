package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ortLibForTest is HFSTATIC_ORT_LIB; without it the test is skipped with a message, unless
// CI is set (.ci/run installs ONNX Runtime): then it fails.
func ortLibForTest(t testing.TB) string {
	t.Helper()
	lib := os.Getenv("HFSTATIC_ORT_LIB")
	if lib == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("HFSTATIC_ORT_LIB is not set under CI: .ci/run installs ONNX Runtime and sets it")
		}
		t.Skip("ONNX Runtime tests skipped: set HFSTATIC_ORT_LIB to ONNX Runtime 1.30's libonnxruntime.so.1")
	}
	return lib
}

// A program exported without --delegate onnx, run with --executor ort, says how to export one.
func TestORTExecutorWithoutGraphsSaysHowToExport(t *testing.T) {
	lib := ortLibForTest(t)
	prog := filepath.Join(t.TempDir(), "s.hfs")
	mustRun(t, "export", storiesDir, "-o", prog, "--context", "64", "-q")
	_, _, err := run(t, "", "generate", prog, "--executor", "ort", "--ort-lib", lib, "--prompt", "hi")
	if err == nil || !strings.Contains(err.Error(), "--delegate onnx") {
		t.Fatalf("generate --executor ort on a program without ONNX graphs: %v, want an error saying to export with --delegate onnx", err)
	}
}
