//go:build 386 || arm

package mmap

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// On a 32-bit platform a file larger than an int can index is refused with a
// *TooLargeError before anything maps or reads it (GOARCH=arm go test -exec
// qemu-arm-static ./internal/mmap runs this on an amd64 host). The file is sparse.
func TestOpenRefusesFilesBeyondTheAddressSpace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const size = 3 << 30
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for name, open := range map[string]func(string) (*File, error){"Open": Open, "Load": Load} {
		_, err := open(path)
		var te *TooLargeError
		if !errors.As(err, &te) || !errors.Is(err, ErrTooLarge) || te.Size != size || te.Path != path {
			t.Errorf("%s of a %d-byte file: %v, want a *TooLargeError", name, int64(size), err)
		}
	}
}
