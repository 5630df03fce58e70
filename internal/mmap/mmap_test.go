package mmap

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenMapsWholeFile(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", []byte{7}},
		{"several pages", bytes.Repeat([]byte("0123456789abcdef"), 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "f", tt.data)
			f, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Size() != int64(len(tt.data)) {
				t.Errorf("Size = %d, want %d", f.Size(), len(tt.data))
			}
			if !bytes.Equal(f.Bytes(), tt.data) {
				t.Errorf("Bytes differ from the file contents")
			}
			got, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.data) {
				t.Errorf("ReadAt contents differ")
			}
		})
	}
}

func TestReadAtPastEndReturnsEOF(t *testing.T) {
	f, err := Open(writeFile(t, t.TempDir(), "f", []byte("abc")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4)
	n, err := f.ReadAt(buf, 1)
	if n != 2 || !errors.Is(err, io.EOF) || string(buf[:n]) != "bc" {
		t.Errorf("ReadAt(4 bytes at 1) = %d, %v, %q; want 2, EOF, \"bc\"", n, err, buf[:n])
	}
	if _, err := f.ReadAt(buf, -1); err == nil {
		t.Errorf("ReadAt at negative offset succeeded")
	}
}

func TestReadAfterCloseFails(t *testing.T) {
	f, err := Open(writeFile(t, t.TempDir(), "f", []byte("abc")))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadAt after Close: err = %v, want ErrClosed", err)
	}
}

func TestOpenRejectsDirectoryAndMissingFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil {
		t.Errorf("Open(directory) succeeded")
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(missing) err = %v, want fs.ErrNotExist", err)
	}
}

func TestDirFSPassesFSTestAndMapsFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("hello"))
	writeFile(t, dir, "empty", nil)
	writeFile(t, dir, "sub/b.bin", bytes.Repeat([]byte{1, 2, 3}, 5000))
	fsys := DirFS(dir)
	if err := fstest.TestFS(fsys, "a.txt", "empty", "sub/b.bin"); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open("sub/b.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(io.ReaderAt); !ok {
		t.Errorf("opened file does not implement io.ReaderAt")
	}
	b, ok := f.(interface{ Bytes() []byte })
	if !ok {
		t.Fatalf("opened file does not implement Bytes()")
	}
	if len(b.Bytes()) != 15000 || b.Bytes()[3] != 1 {
		t.Errorf("Bytes() = %d bytes, want 15000 starting 1,2,3,1", len(b.Bytes()))
	}
	if _, err := fsys.Open("../escape"); err == nil {
		t.Errorf("Open(../escape) succeeded")
	}
}

// TestLockKeepsContentsAndCloseUnlocks locks a small mapping, reads it, and
// closes it; a closed file refuses to lock.
func TestLockKeepsContentsAndCloseUnlocks(t *testing.T) {
	want := bytes.Repeat([]byte("hfstatic"), 4096)
	f, err := Open(writeFile(t, t.TempDir(), "p.bin", want))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Lock(); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if !bytes.Equal(f.Bytes(), want) {
		t.Fatal("locked mapping differs from the file")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Lock(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Lock after Close: %v, want ErrClosed", err)
	}
}
