package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/models"
)

// storiesWith returns stories260K's folder in memory with config.json's
// fields replaced by edits.
func storiesWith(t testing.TB, edits map[string]any) fs.FS {
	t.Helper()
	src := models.Stories260K()
	out := fstest.MapFS{}
	err := fs.WalkDir(src, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, path)
		out[path] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(out[hf.ConfigName].Data, &cfg); err != nil {
		t.Fatal(err)
	}
	for k, v := range edits {
		cfg[k] = v
	}
	out[hf.ConfigName].Data, _ = json.Marshal(cfg)
	return out
}

// TestExportRefusesConfigClaimsTheTensorsDoNotBack is the regression test
// for a config claiming a billion layers over a 5-layer folder (it grew to
// 2 GB before): every claim is refused before anything is written, with a
// named error and a few megabytes allocated at most.
func TestExportRefusesConfigClaimsTheTensorsDoNotBack(t *testing.T) {
	cases := []struct {
		name  string
		edits map[string]any
		opts  export.Options
		want  error
		says  string
	}{
		{"a billion layers", map[string]any{"num_hidden_layers": 1_000_000_000}, export.Options{}, hf.ErrConfigLimit, "num_hidden_layers"},
		{"a billion heads", map[string]any{"num_attention_heads": 1_000_000_000}, export.Options{}, hf.ErrConfigLimit, "num_attention_heads"},
		{"a huge vocabulary", map[string]any{"vocab_size": int64(1 << 40)}, export.Options{}, hf.ErrConfigLimit, "vocab_size"},
		{"a huge context", map[string]any{"max_position_embeddings": int64(1 << 40)}, export.Options{}, hf.ErrConfigLimit, "max_position_embeddings"},
		{"six layers in a five-layer folder", map[string]any{"num_hidden_layers": 6}, export.Options{}, export.ErrConfigClaims, "model.layers.5."},
		{"a vocabulary the embedding lacks", map[string]any{"vocab_size": 1000}, export.Options{}, export.ErrConfigClaims, "vocab_size 1000"},
		{"a context past the bound", nil, export.Options{Context: export.MaxContext + 1, Prefill: 0}, export.ErrOptions, "MaxContext"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := storiesWith(t, c.edits)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var buf bytes.Buffer
			err := func() error {
				ckpt, err := hf.Open(fsys)
				if err != nil {
					return err
				}
				defer ckpt.Close()
				_, err = export.Export(context.Background(), ckpt, &buf, c.opts)
				return err
			}()
			runtime.ReadMemStats(&after)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error = %v, want %v naming %q", err, c.want, c.says)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before refusing", buf.Len())
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("allocated %d bytes before refusing, want < 16 MiB", alloc)
			}
		})
	}
}
