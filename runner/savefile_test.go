package runner

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/hfstatic/hfstatic/program"
)

// endless repeats a byte forever.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// TestRestoreReadsABoundedAmount: a stranger's "session file" that never
// ends (a valid header, then bytes forever) is refused as corrupt after
// reading at most the size this program's own files can have, leaving the
// session unchanged; another program's file is ErrWrongProgram.
func TestRestoreReadsABoundedAmount(t *testing.T) {
	_, r := newFake(fakeSpec{C: 6, P: 2, V: 3, W: 2, Layers: []program.LayerType{sliding, full}})
	s := freshRun(t, r, []int{1, 2})
	var file bytes.Buffer
	if err := s.Save(&file); err != nil {
		t.Fatal(err)
	}
	head := file.Bytes()[:len(sessionMagic)+8+len(r.fingerprint)]
	before := digest(s)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	err := s.Restore(io.MultiReader(bytes.NewReader(head), endless(7)))
	runtime.ReadMemStats(&m1)
	if !errors.Is(err, ErrCorruptSession) {
		t.Fatalf("endless file: %v, want ErrCorruptSession", err)
	}
	if digest(s) != before {
		t.Error("a refused file changed the session")
	}
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 4*uint64(r.maxSessionFile())+1<<20 {
		t.Errorf("allocated %d bytes reading it; a session file of this program is at most %d", alloc, r.maxSessionFile())
	}

	foreign := bytes.Clone(file.Bytes())
	copy(foreign[len(sessionMagic)+8:], "not-this-program")
	if err := s.Restore(bytes.NewReader(foreign)); !errors.Is(err, ErrWrongProgram) {
		t.Errorf("another program's file: %v, want ErrWrongProgram", err)
	}
	if digest(s) != before {
		t.Error("a foreign file changed the session")
	}
}
