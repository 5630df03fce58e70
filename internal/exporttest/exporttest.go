// Package exporttest exports checkpoints for tests, into the 64-byte-aligned memory the
// executor needs (export.ToMemory), failing the test on any error.
package exporttest

import (
	"context"
	"io/fs"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
)

// Program exports the Hugging Face folder fsys with opts and returns the program file's
// bytes, aligned to program.Alignment.
func Program(t testing.TB, fsys fs.FS, opts export.Options) []byte {
	t.Helper()
	ckpt, err := hf.Open(fsys)
	if err != nil {
		t.Fatalf("open checkpoint: %v", err)
	}
	defer ckpt.Close()
	data, _, err := export.ToMemory(context.Background(), ckpt, opts)
	if err != nil {
		t.Fatalf("export %+v: %v", opts, err)
	}
	return data
}
