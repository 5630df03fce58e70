package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Load copies the whole file, across its 32 MiB read chunks and an unaligned tail.
func TestLoadReadsTheWholeFile(t *testing.T) {
	for _, size := range []int{0, 1, 4097, 2*32<<20 + 17} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(i*7 + i>>20)
		}
		path := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Load(path)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if !bytes.Equal(f.Bytes(), want) {
			t.Errorf("size %d: contents differ", size)
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("Load of a directory: no error")
	}
}
