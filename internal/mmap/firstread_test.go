package mmap

import (
	"flag"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var firstReadFile = flag.String("file", "", "BenchmarkFirstRead: the file to map (default: a new 512 MiB file)")

// BenchmarkFirstRead maps a file and checksums it twice, as a program load verifies
// its tensors. It reports the GB/s of the first pass over the new mapping and of the
// second, for a file that was just written or for -file (a program exported earlier),
// mapped as the page cache holds it (mmap-plain) and in huge pages (mmap, Open; this
// may re-read the file once, after which mmap-plain maps the same huge pages):
//
//	go test -run XXX -bench FirstRead ./internal/mmap -args -file X.hfs
func BenchmarkFirstRead(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts Options
	}{{"mmap-plain", Options{}}, {"mmap", Options{HugePages: true}}} {
		b.Run(mode.name, func(b *testing.B) { benchmarkFirstRead(b, mode.opts) })
	}
}

func benchmarkFirstRead(b *testing.B, opts Options) {
	path := *firstReadFile
	if path == "" {
		path = filepath.Join(b.TempDir(), "data")
		buf := make([]byte, 512<<20)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		if err := os.WriteFile(path, buf, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	var first, second time.Duration
	for b.Loop() {
		f, err := OpenWith(path, opts)
		if err != nil {
			b.Fatal(err)
		}
		t := time.Now()
		c1 := crc32.Checksum(f.Bytes(), tab)
		t1 := time.Now()
		c2 := crc32.Checksum(f.Bytes(), tab)
		second += time.Since(t1)
		first += t1.Sub(t)
		if c1 != c2 {
			b.Fatal("checksums of the same mapping differ")
		}
		f.Close()
	}
	gb := float64(st.Size()) * float64(b.N) / 1e9
	b.ReportMetric(gb/first.Seconds(), "first-GB/s")
	b.ReportMetric(gb/second.Seconds(), "second-GB/s")
}
