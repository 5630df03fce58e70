// Package orttest finds ONNX Runtime for tests of the packages that run it.
package orttest

import (
	"os"
	"testing"
)

// LibPath is HFSTATIC_ORT_LIB, the ONNX Runtime library the tests load. Without it the
// test is skipped with a message, unless CI is set (.ci/run installs the library and sets
// the variable): then it fails.
func LibPath(t testing.TB) string {
	t.Helper()
	path := os.Getenv("HFSTATIC_ORT_LIB")
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("HFSTATIC_ORT_LIB is not set under CI: .ci/run installs ONNX Runtime and sets it")
		}
		t.Skip("ONNX Runtime tests skipped: set HFSTATIC_ORT_LIB to libonnxruntime.so.1 of ONNX Runtime 1.30 (npm install --ignore-scripts onnxruntime-node@1.30.0)")
	}
	return path
}
