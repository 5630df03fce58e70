//go:build !ort

package ort

import (
	"errors"
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
		if !strings.Contains(err.Error(), "go build -tags ort ./cmd/hfstatic") {
			t.Errorf("Open(%q) = %q, want the build command", path, err)
		}
	}
}
