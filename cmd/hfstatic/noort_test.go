//go:build !ort

package main

import (
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/ort"
)

// In the default (static) build, --executor ort says how to get a build with ONNX Runtime,
// with or without a library path.
func TestORTExecutorWithoutTheTagSaysHowToBuild(t *testing.T) {
	for _, lib := range []string{"", "/usr/lib/libonnxruntime.so.1"} {
		_, _, err := run(t, "", "generate", "--executor", "ort", "--ort-lib", lib, "--prompt", "hi")
		want := (&ort.LibraryError{NotBuilt: true}).Error() // the build command; on FreeBSD, that there is none
		if code := exitCode(err); code != 2 || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("generate --executor ort --ort-lib %q: exit %d, %v\nwant exit 2 and %q", lib, code, err, want)
		}
	}
}
