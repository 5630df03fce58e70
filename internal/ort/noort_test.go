//go:build !ort

package ort

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// Without the ort tag, Open says how to get a build that runs ONNX Runtime, whatever the path.
func TestOpenWithoutTheTagSaysHowToBuild(t *testing.T) {
	if Supported {
		t.Fatal("Supported in a build without the ort tag")
	}
	for _, path := range []string{"", "/usr/lib/libonnxruntime.so.1"} {
		_, err := Open(path)
		var le *LibraryError
		if !errors.As(err, &le) || !le.NotBuilt || !errors.Is(err, ErrLibrary) {
			t.Fatalf("Open(%q) = %v, want a *LibraryError with NotBuilt", path, err)
		}
		if want := wantNotBuilt(); !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %q, want %q", path, err, want)
		}
	}
}

// wantNotBuilt is what the error says: how to build with the tag, or on a system the loader
// does not support, which systems it does.
func wantNotBuilt() string {
	switch runtime.GOOS {
	case "linux", "darwin", "windows":
		return "go build -tags ort ./cmd/hfstatic"
	}
	return "Linux, macOS and Windows only"
}
