package runner

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/program"
)

// continuation appends toks one at a time and returns the logits after each.
func continuation(t testing.TB, s *Session, toks []int) [][]float32 {
	t.Helper()
	var rows [][]float32
	for _, tok := range toks {
		appendOK(t, s, tok)
		rows = append(rows, logitsCopy(t, s))
	}
	return rows
}

func freshRun(t testing.TB, r *Runner, toks []int) *Session {
	t.Helper()
	s := newSession(t, r)
	if len(toks) > 0 {
		appendOK(t, s, toks...)
	}
	return s
}

func TestForkContinuesLikeAFreshRun(t *testing.T) {
	_, r := newFake(mixed)
	rng := rand.New(rand.NewPCG(2, 2))
	for _, at := range []int{1, 3, 4, 9, 16} {
		t.Run(fmt.Sprintf("at=%d", at), func(t *testing.T) {
			prefix := randomTokens(rng, at, mixed.V)
			a, b := randomTokens(rng, 4, mixed.V), randomTokens(rng, 4, mixed.V)
			orig := freshRun(t, r, prefix)
			f, err := orig.Fork()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if !slices.Equal(logitsCopy(t, f), logitsCopy(t, orig)) || f.Position() != at || !slices.Equal(f.Tokens(), prefix) {
				t.Fatalf("the fork does not start where the original is")
			}
			gotB := continuation(t, f, b)
			gotA := continuation(t, orig, a)
			if !slices.EqualFunc(gotA, continuation(t, freshRun(t, r, prefix), a), slices.Equal) {
				t.Errorf("the original continued differs from a fresh run (the fork disturbed it)")
			}
			if !slices.EqualFunc(gotB, continuation(t, freshRun(t, r, prefix), b), slices.Equal) {
				t.Errorf("the fork continued differs from a fresh run")
			}
		})
	}
}

func TestSaveRestoreContinuesAsIfNeverStopped(t *testing.T) {
	_, r := newFake(mixed)
	rng := rand.New(rand.NewPCG(3, 3))
	for _, at := range []int{0, 1, 5, 12, 20} {
		t.Run(fmt.Sprintf("at=%d", at), func(t *testing.T) {
			prefix := randomTokens(rng, at, mixed.V)
			more := randomTokens(rng, min(4, mixed.C-at), mixed.V)
			s := freshRun(t, r, prefix)
			var file bytes.Buffer
			if err := s.Save(&file); err != nil {
				t.Fatal(err)
			}
			saved := bytes.Clone(file.Bytes())
			// Into a busy session of the same program…
			into := freshRun(t, r, []int{6, 6, 6})
			if err := into.Restore(bytes.NewReader(saved)); err != nil {
				t.Fatal(err)
			}
			// …and into a new one.
			restored, err := r.RestoreSession(bytes.NewReader(saved))
			if err != nil {
				t.Fatal(err)
			}
			defer restored.Close()
			for _, got := range []*Session{into, restored} {
				if stateDigest(got) != stateDigest(s) || !cmp.Equal(got.Inspect(), s.Inspect()) {
					t.Fatalf("restored state differs from the saved one")
				}
				if !slices.EqualFunc(continuation(t, got, more), continuation(t, freshRun(t, r, prefix), more), slices.Equal) {
					t.Errorf("restore then continue differs from never stopping")
				}
			}
		})
	}
}

func TestRestoreRejectsEveryDamagedByte(t *testing.T) {
	_, r := newFake(fakeSpec{C: 6, P: 2, V: 3, W: 2, Layers: []program.LayerType{sliding, full}})
	s := freshRun(t, r, []int{1, 2, 0})
	var file bytes.Buffer
	s.Save(&file)
	data := file.Bytes()
	target := freshRun(t, r, []int{2})
	before := digest(target)
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x10
		err := target.Restore(bytes.NewReader(bad))
		var fe *SessionFileError
		if !errors.As(err, &fe) {
			t.Fatalf("byte %d flipped: %v, want a *SessionFileError", i, err)
		}
		if digest(target) != before {
			t.Fatalf("byte %d flipped: the failed restore changed the session", i)
		}
	}
	for n := range len(data) {
		if _, err := r.RestoreSession(bytes.NewReader(data[:n])); !errors.Is(err, ErrCorruptSession) {
			t.Fatalf("file cut to %d of %d bytes: %v, want ErrCorruptSession", n, len(data), err)
		}
	}
	if _, err := r.RestoreSession(bytes.NewReader(append(bytes.Clone(data), 0))); !errors.Is(err, ErrCorruptSession) {
		t.Errorf("a trailing byte: %v, want ErrCorruptSession", err)
	}
}

// TestRewindIsPreciseForRings checks, for every history length and rewind target, that
// Rewind accepts exactly the targets from which continuing equals a fresh run: a forced
// rewind of a rejected target must read overwritten slots and differ.
func TestRewindIsPreciseForRings(t *testing.T) {
	for _, spec := range []fakeSpec{
		{C: 10, V: 5, W: 3, Layers: []program.LayerType{full, sliding}},
		{C: 10, P: 4, V: 5, W: 4, Layers: []program.LayerType{sliding}},
		{C: 7, V: 5, W: 1, Layers: []program.LayerType{sliding}},
		{C: 6, P: 3, V: 5, W: 9, Layers: []program.LayerType{sliding, full}},
		{C: 8, P: 3, V: 5, W: 3, Layers: []program.LayerType{sliding}, Layout: program.LayoutFull},
	} {
		_, r := newFake(spec)
		rng := rand.New(rand.NewPCG(4, uint64(spec.W)))
		accepted, rejected := 0, 0
		for end := 1; end <= spec.C; end++ {
			for to := 0; to <= end; to++ {
				name := fmt.Sprintf("C=%d/P=%d/W=%d/%s/end=%d/to=%d", spec.C, spec.P, spec.W, spec.Layout, end, to)
				hist := randomTokens(rng, end, spec.V)
				more := randomTokens(rng, min(3, spec.C-to), spec.V)
				want := continuation(t, freshRun(t, r, hist[:to]), more)
				s := freshRun(t, r, hist)
				err := s.Rewind(to)
				if err != nil {
					var re *RewindError
					if !errors.As(err, &re) || !errors.Is(err, ErrRewindRing) {
						t.Fatalf("%s: %v, want a *RewindError", name, err)
					}
					rejected++
					s.dropAfter(to) // force it: continuing must now differ
					if slices.EqualFunc(continuation(t, s, more), want, slices.Equal) {
						t.Errorf("%s: rejected, but a forced rewind continues correctly", name)
					}
					continue
				}
				accepted++
				if !slices.Equal(s.Tokens(), hist[:to]) || s.Position() != to {
					t.Fatalf("%s: position %d tokens %v", name, s.Position(), s.Tokens())
				}
				if got := continuation(t, s, more); !slices.EqualFunc(got, want, slices.Equal) {
					t.Errorf("%s: accepted, but continuing differs from a fresh run", name)
				}
			}
		}
		t.Logf("C=%d W=%d layout %q: %d rewinds accepted, %d rejected", spec.C, spec.W, spec.Layout, accepted, rejected)
		if spec.W < spec.C && spec.Layout != program.LayoutFull && spec.W > 1 && rejected == 0 {
			t.Errorf("no rewind was rejected: the test does not reach the ring's limit")
		}
	}
}

func TestInspectReportsRanges(t *testing.T) {
	spec := fakeSpec{C: 10, P: 4, V: 5, W: 3, Layers: []program.LayerType{full, sliding}}
	_, r := newFake(spec)
	s := newSession(t, r)
	perSlot := int64(fakeHeads * 2 * fakeDim * 4)
	check := func(pos, fullSlots, ringLo int) {
		t.Helper()
		want := SessionInfo{Position: pos, Bytes: r.SessionBytes(),
			Layers: []LayerInfo{
				{Type: full, Lo: 0, Hi: pos, Slots: fullSlots, Rows: 10},
				{Type: sliding, Lo: ringLo, Hi: pos, Slots: pos - ringLo, Rows: 3},
			},
			CacheBytesUsed: int64(fullSlots+pos-ringLo) * perSlot}
		if diff := cmp.Diff(want, s.Inspect()); diff != "" {
			t.Errorf("Inspect (-want +got):\n%s", diff)
		}
	}
	check(0, 0, 0)
	appendOK(t, s, 1, 2)
	check(2, 2, 0)
	appendOK(t, s, 1, 2, 3, 4, 0)
	check(7, 7, 4)
	if err := s.Rewind(6); err != nil {
		t.Fatal(err)
	}
	check(6, 6, 4)
	if err := s.Rewind(5); !errors.Is(err, ErrRewindRing) {
		t.Fatalf("rewind to 5 needs position 3, overwritten: %v", err)
	}
	if err := s.Rewind(0); err != nil {
		t.Fatal(err)
	}
	check(0, 0, 0)
}

// recordingAllocator hands out buffers and remembers which are live.
type recordingAllocator struct {
	mu     sync.Mutex
	live   map[*byte]int
	allocs int
	failAt int // 1-based Alloc call that fails; 0: never
}

func (a *recordingAllocator) Alloc(n int) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.allocs++
	if a.allocs == a.failAt {
		return nil, errors.New("out of device memory")
	}
	b, err := HeapAllocator{}.Alloc(n)
	if err == nil && n > 0 {
		a.live[unsafe.SliceData(b)] = n
	}
	return b, err
}

func (a *recordingAllocator) Free(b []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(b) > 0 {
		delete(a.live, unsafe.SliceData(b))
	}
}

// bindingExec records every buffer bound to a method.
type bindingExec struct {
	*fakeExec
	bound map[string][]byte
}

func (b *bindingExec) Bind(method string, bufs map[string][]byte) (Step, error) {
	for name, buf := range bufs {
		b.bound[method+"/"+name] = buf
	}
	return b.fakeExec.Bind(method, bufs)
}

func TestEveryBufferComesFromTheAllocator(t *testing.T) {
	alloc := &recordingAllocator{live: map[*byte]int{}}
	be := &bindingExec{fakeExec: &fakeExec{f: mixed}, bound: map[string][]byte{}}
	r, err := New(mixed.manifest(), "fp", be, Options{Allocator: alloc})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Fork()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for name, buf := range be.bound {
		if n, ok := alloc.live[unsafe.SliceData(buf)]; !ok || n != len(buf) {
			t.Errorf("bound buffer %s did not come from the allocator", name)
		}
	}
	for _, n := range alloc.live {
		total += n
	}
	if want := 2 * r.SessionBytes(); int64(total) != want {
		t.Errorf("two sessions hold %d bytes, SessionBytes says %d", total, want)
	}
	appendOK(t, s, 1, 2, 3, 4, 5)
	s.Close()
	f.Close()
	if len(alloc.live) != 0 {
		t.Errorf("%d buffers not freed after Close", len(alloc.live))
	}
	// A failing allocation releases what was already allocated.
	for failAt := 1; failAt <= 10; failAt++ {
		alloc.allocs, alloc.failAt = 0, failAt
		if _, err := r.NewSession(); err == nil {
			t.Fatalf("allocation %d failed but NewSession succeeded", failAt)
		}
		if len(alloc.live) != 0 {
			t.Errorf("allocation %d failed: %d buffers leaked", failAt, len(alloc.live))
		}
	}
}

func TestAppendEachStopsOnCallbackError(t *testing.T) {
	_, r := newFake(mixed)
	s := newSession(t, r)
	stop := errors.New("enough")
	err := s.AppendEach(context.Background(), []int{1, 2, 3, 4, 5, 6}, func(i int, _ []float32) error {
		if i == 1 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("got %v", err)
	}
	if s.Inspect().Poisoned {
		t.Errorf("a callback error poisoned the session")
	}
	if err := s.Append(context.Background(), []int{1}); err != nil {
		t.Errorf("append after a callback error: %v", err)
	}
}

// FuzzRestoreWithChecksum is FuzzRestore past the checksum: the CRC-32C that stops damaged
// files is no defence against a file made to pass it, so each input gets a correct one and
// the fields behind it are what is fuzzed. A rejected file must leave the session
// unchanged; an accepted one must save back to the same bytes and take a further token.
func FuzzRestoreWithChecksum(f *testing.F) {
	spec := fakeSpec{C: 6, P: 2, V: 3, W: 2, Layers: []program.LayerType{sliding, full}}
	_, r := newFake(spec)
	for _, toks := range [][]int{nil, {1}, {1, 2, 0}, {2, 2, 2, 1, 0, 1}, {0, 1, 2, 0, 1, 2}} {
		s := freshRun(f, r, toks)
		var b bytes.Buffer
		s.Save(&b)
		f.Add(b.Bytes()[:b.Len()-4]) // the body; the fuzz function appends the checksum
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		data := binary.LittleEndian.AppendUint32(slices.Clone(body), crc32.Checksum(body, castagnoli))
		s := restoreFuzzed(t, r, data)
		if s == nil {
			return
		}
		if s.Position() < spec.C {
			if err := s.Append(context.Background(), []int{1}); err != nil {
				t.Fatalf("append after a restore: %v", err)
			}
		}
		if _, err := r.RestoreSession(bytes.NewReader(data)); err != nil {
			t.Fatalf("RestoreSession of a file Restore took: %v", err)
		}
	})
}

// FuzzRestore feeds damaged session files to Restore: it must never panic, a rejected file
// must leave the session unchanged, and an accepted one must save back to the same bytes.
func FuzzRestore(f *testing.F) {
	spec := fakeSpec{C: 6, P: 2, V: 3, W: 2, Layers: []program.LayerType{sliding, full}}
	_, r := newFake(spec)
	for _, toks := range [][]int{nil, {1}, {1, 2, 0}, {2, 2, 2, 1, 0, 1}} {
		s := freshRun(f, r, toks)
		var b bytes.Buffer
		s.Save(&b)
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		restoreFuzzed(t, r, data)
	})
}

// restoreFuzzed restores data into a fresh session: a rejected file must be a
// *SessionFileError and leave the session unchanged (restoreFuzzed returns nil);
// an accepted one must save back to the same bytes (the session is returned).
func restoreFuzzed(t *testing.T, r *Runner, data []byte) *Session {
	t.Helper()
	s := freshRun(t, r, []int{1, 1})
	before := digest(s)
	if err := s.Restore(bytes.NewReader(data)); err != nil {
		var fe *SessionFileError
		if !errors.As(err, &fe) {
			t.Fatalf("error %v is not a *SessionFileError", err)
		}
		if digest(s) != before {
			t.Fatalf("a rejected file changed the session")
		}
		return nil
	}
	var again bytes.Buffer
	if err := s.Save(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), data) {
		t.Fatalf("restored then saved file differs from the input")
	}
	return s
}
