//go:build ort

package ort_test

import (
	"bytes"
	"os"
	"runtime"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/ort"
	"github.com/hfstatic/hfstatic/program"
)

// TestSpilledPayloadIsTheConversion: on Linux with a disk-backed temporary directory,
// ReadPayload's converted q4/q8 initializers come from its spill file (an unlinked
// temporary file, mapped) and hold the same bytes as the conversion kept in memory; raw
// ones alias the program either way. Elsewhere (or on tmpfs) nothing is spilled.
func TestSpilledPayloadIsTheConversion(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	want := ort.SpillsIn(tmp) // Linux, not tmpfs or ramfs
	if runtime.GOOS != "linux" && want {
		t.Fatalf("spills on %s", runtime.GOOS)
	}
	for _, w := range []string{"q8", "q4"} {
		t.Run(w, func(t *testing.T) {
			data := exportONNX(t, "stories260K/weights="+w, stories, export.Options{Context: 32, Prefill: 7, CacheDType: program.F32, Weights: w})
			f, err := program.Decode(data, program.DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ort.ReadPayload(f)
			if err != nil {
				t.Fatal(err)
			}
			defer ort.ReleasePayload(got)
			if ort.Spilled(got) != want {
				t.Fatalf("spilled = %v, want %v (GOOS %s, TMPDIR %s)", ort.Spilled(got), want, runtime.GOOS, tmp)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("the spill file is left in TMPDIR: %v", left)
			}
			mem, err := ort.ReadPayloadInMemory(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Initializers) != len(mem.Initializers) {
				t.Fatalf("%d initializers, in memory %d", len(got.Initializers), len(mem.Initializers))
			}
			quantized := 0
			for i, in := range got.Initializers {
				m := mem.Initializers[i]
				if in.Name != m.Name || !bytes.Equal(in.Data, m.Data) {
					t.Fatalf("initializer %d %q: %d bytes differ from the in-memory conversion's %q (%d bytes)", i, in.Name, len(in.Data), m.Name, len(m.Data))
				}
				if len(in.Data) > 0 && &in.Data[0] != &m.Data[0] {
					quantized++
				}
			}
			if want && quantized == 0 {
				t.Error("no initializer came from the spill file")
			}
		})
	}
}
