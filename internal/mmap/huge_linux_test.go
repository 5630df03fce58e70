package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSmapsHugeReadsTheMappingAtAddr(t *testing.T) {
	smaps := []byte(`55d0c0000000-55d0c0021000 r--p 00000000 fe:00 12 /usr/bin/x
Rss:                 132 kB
FilePmdMapped:      4096 kB
7f2e51400000-7f2ee010d000 r--s 00000000 fe:00 5318558                    /work/a b-c.hfs
Size:            2339892 kB
Rss:             2339892 kB
AnonHugePages:         0 kB
FilePmdMapped:   2338816 kB
VmFlags: rd sh mr mw me ms sd hg
7f2ee010d000-7f2ee0200000 rw-p 00000000 00:00 0
FilePmdMapped:      2048 kB
`)
	if got, want := smapsHuge(smaps, 0x7f2e51400000), int64(2338816)<<10; got != want {
		t.Errorf("smapsHuge = %d, want %d", got, want)
	}
	if got := smapsHuge(smaps, 0x7f2e51400001); got != 0 {
		t.Errorf("smapsHuge of an address that starts no mapping = %d, want 0", got)
	}
	if got := smapsHuge([]byte("garbage\n-\n"), 0); got != 0 {
		t.Errorf("smapsHuge of garbage = %d, want 0", got)
	}
}

// A file above RecacheMin opens in huge-page mode with its contents intact, whatever the
// page cache held (the re-read path runs when its pages are small), and reports no more
// huge bytes than it has.
func TestOpenHugeKeepsContents(t *testing.T) {
	size := RecacheMin + 3<<20 + 17
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*13 + i>>21)
	}
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.Bytes(), want) {
			t.Fatal("contents differ")
		}
		if h := f.HugeBytes(); h < 0 || h > int64(size) {
			t.Errorf("HugeBytes %d outside [0, %d]", h, size)
		}
		t.Logf("huge %d of %d bytes, recached %v", f.HugeBytes(), size, f.Recached())
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A large file cached in small pages (written 4 KiB at a time, then synced so the
// pages are clean) is re-read when its huge-page share is under half and the
// mapping is 2 MiB aligned, and keeps its contents either way.
func TestOpenRecachesSmallPages(t *testing.T) {
	size := RecacheMin + 1<<20
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*31 + i>>20)
	}
	path := filepath.Join(t.TempDir(), "small-pages")
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < size; off += 4096 {
		if _, err := w.Write(want[off:min(off+4096, size)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	plain, err := OpenWith(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, known := hugeMapped(plain.Bytes())
	expect := known && 2*plain.HugeBytes() < int64(size) && hugeAligned(plain.Bytes()) && fileHugeInUse()
	plain.Close()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !bytes.Equal(f.Bytes(), want) {
		t.Fatal("contents differ")
	}
	if f.Recached() != expect {
		t.Errorf("Recached() = %v, want %v", f.Recached(), expect)
	}
	t.Logf("plain huge %d; after Open huge %d of %d, recached %v", plain.HugeBytes(), f.HugeBytes(), size, f.Recached())
}

// fileHugeInUse agrees with /proc/meminfo's FileHugePages line.
func TestFileHugeInUseReadsMeminfo(t *testing.T) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	want := false
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("FileHugePages:")); ok {
			want = !bytes.Equal(bytes.TrimSpace(rest), []byte("0 kB"))
		}
	}
	if got := fileHugeInUse(); got != want {
		t.Errorf("fileHugeInUse() = %v, /proc/meminfo says %v", got, want)
	}
}
