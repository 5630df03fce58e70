//go:build ort

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/ort/orttest"
)

// A program exported without --delegate onnx, run with --executor ort, says how to export one.
func TestORTExecutorWithoutGraphsSaysHowToExport(t *testing.T) {
	lib := orttest.LibPath(t)
	prog := filepath.Join(t.TempDir(), "s.hfs")
	mustRun(t, "export", storiesDir, "-o", prog, "--context", "64", "-q")
	_, _, err := run(t, "", "generate", prog, "--executor", "ort", "--ort-lib", lib, "--prompt", "hi")
	if err == nil || !strings.Contains(err.Error(), "--delegate onnx") {
		t.Fatalf("generate --executor ort on a program without ONNX graphs: %v, want an error saying to export with --delegate onnx", err)
	}
}

// --executor ort without a library, or with one that is not there, says how to give it.
func TestORTLibraryMistakesSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "libonnxruntime.so.1")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"ort without its library", []string{"generate", "--executor", "ort", "--ort-lib", "", "--prompt", "hi"}, 2,
			"--executor ort needs ONNX Runtime's library: give the path of libonnxruntime.so.1 from ONNX Runtime 1.30 with --ort-lib or HFSTATIC_ORT_LIB"},
		{"ort library missing", []string{"generate", "--executor", "ort", "--ort-lib", missing, "--prompt", "hi"}, 1,
			"libonnxruntime.so.1: cannot be loaded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := run(t, "", c.args...)
			if code := exitCode(err); code != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("hfstatic %s: exit %d, %v\nwant exit %d and a message containing %q", strings.Join(c.args, " "), code, err, c.code, c.want)
			}
		})
	}
}

// The commands that run a program give the same results on ONNX Runtime as on the Go
// executor: greedy generation token for token, and accuracy reports full agreement.
func TestCommandsRunOnORT(t *testing.T) {
	lib := orttest.LibPath(t)
	prog := filepath.Join(t.TempDir(), "o.hfs")
	mustRun(t, "export", storiesDir, "-o", prog, "--context", "64", "--prefill", "16", "--cache-dtype", "f32", "--delegate", "onnx", "-q")
	gen := []string{"generate", prog, "--prompt", "Once upon a time", "-n", "24", "--temperature", "0"}
	want := mustRun(t, gen...)
	got := mustRun(t, append(gen, "--executor", "ort", "--ort-lib", lib)...)
	if got != want {
		t.Errorf("generate on ORT = %q, on Go %q", got, want)
	}
	if out := mustRun(t, "accuracy", prog, prog, "--generate", "8", "--executor", "ort", "--ort-lib", lib); !strings.Contains(out, "100.00%") {
		t.Errorf("accuracy on ORT said %q, want 100.00%% agreement", out)
	}
	if out := mustRun(t, "bench", prog, "--executor", "ort", "--ort-lib", lib, "--prompt-tokens", "16", "--gen-tokens", "4", "--repeat", "1", "--threads", "1"); !strings.Contains(out, "decode") {
		t.Errorf("bench on ORT said %q", out)
	}
}

// The server on ONNX Runtime: the runner, pool and batcher drive it unchanged.
func TestServeOnORT(t *testing.T) {
	lib := orttest.LibPath(t)
	onnxProg := filepath.Join(t.TempDir(), "o.hfs")
	mustRun(t, "export", storiesDir, "-o", onnxProg, "--prefill", "16", "--context", "128", "--delegate", "onnx", "-q")
	testServe(t, onnxProg, "o", "--executor", "ort", "--ort-lib", lib)
}
