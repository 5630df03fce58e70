package engine

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// replaceManifest rebuilds a program file around another manifest, with valid checksums,
// so that fuzzing reaches manifest validation, the contract check and executor compilation.
func replaceManifest(good, manifest []byte) []byte {
	tr := good[len(good)-64:]
	moff := binary.LittleEndian.Uint64(tr[8:])
	out := append(bytes.Clone(good[:moff]), manifest...)
	t := make([]byte, 64)
	copy(t, tr[:8])
	binary.LittleEndian.PutUint64(t[8:], moff)
	binary.LittleEndian.PutUint64(t[16:], uint64(len(manifest)))
	binary.LittleEndian.PutUint32(t[24:], crc32.Checksum(manifest, crc32.MakeTable(crc32.Castagnoli)))
	binary.LittleEndian.PutUint64(t[28:], uint64(len(out)+64))
	out = append(out, t...)
	aligned, _ := runner.HeapAllocator{}.Alloc(len(out))
	copy(aligned, out)
	return aligned
}

func manifestOf(data []byte) []byte {
	tr := data[len(data)-64:]
	moff := binary.LittleEndian.Uint64(tr[8:])
	mlen := binary.LittleEndian.Uint64(tr[16:])
	return data[moff : moff+mlen]
}

// FuzzLoadManifest: any manifest either loads or is rejected with an error; nothing panics,
// and a program that loads can run a step.
func FuzzLoadManifest(f *testing.F) {
	good := exportFS(f, models.Stories260K(), export.Options{Context: 16, Prefill: 4, CacheDType: program.F32})
	js := manifestOf(good)
	f.Add(bytes.Clone(js))
	f.Add(bytes.ReplaceAll(js, []byte(`"step":4`), []byte(`"step":40`)))
	f.Add(bytes.ReplaceAll(js, []byte(`"cache_rows":16`), []byte(`"cache_rows":8`)))
	f.Add(bytes.ReplaceAll(js, []byte(`"head_dim":8`), []byte(`"head_dim":16`)))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		m, err := Load(replaceManifest(good, manifest), Options{Threads: 1})
		if err != nil {
			return
		}
		defer m.Close()
		if m.Runner.SessionBytes() > 64<<20 {
			return // a consistent but huge program: allocating it is not what this fuzzes
		}
		s, err := m.Runner.NewSession()
		if err != nil {
			return
		}
		defer s.Close()
		_ = s.Append(t.Context(), []int{1, 2, 3})
	})
}
