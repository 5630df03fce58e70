package engine

import (
	"bytes"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/program/programtest"
)

// FuzzLoadManifest: any manifest either loads or is rejected with an error; nothing panics,
// and a program that loads can run a step.
func FuzzLoadManifest(f *testing.F) {
	good := exporttest.Program(f, models.Stories260K(), export.Options{Context: 16, Prefill: 4, CacheDType: program.F32})
	js := programtest.Manifest(good)
	f.Add(bytes.Clone(js))
	f.Add(bytes.ReplaceAll(js, []byte(`"step":4`), []byte(`"step":40`)))
	f.Add(bytes.ReplaceAll(js, []byte(`"cache_rows":16`), []byte(`"cache_rows":8`)))
	f.Add(bytes.ReplaceAll(js, []byte(`"head_dim":8`), []byte(`"head_dim":16`)))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		m, err := Load(programtest.ReplaceManifest(good, manifest), Options{Threads: 1})
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
