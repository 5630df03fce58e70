//go:build asmgen

package main

import (
	"bytes"
	"os"
	"testing"
)

// Regenerating reproduces the committed kernels_arm64.s and its stubs byte
// for byte: the files are the generator's output, nothing edited by hand,
// and the generator changed nothing it did not commit.
func TestRegenerationReproducesCommittedFiles(t *testing.T) {
	s, g := generate()
	for _, f := range []struct {
		path string
		want []byte
	}{{"../kernels_arm64.s", s}, {"../kernels_arm64_stubs.go", g}} {
		got, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s differs from the generator's output: run go generate ./internal/kernels", f.path)
		}
	}
}
