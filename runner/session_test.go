package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hfstatic/hfstatic/program"
)

var (
	full    = program.LayerFull
	sliding = program.LayerSliding
	// mixed has a full and two ring layers (W=3) and a prefill step of 4.
	mixed = fakeSpec{C: 20, P: 4, V: 7, W: 3, Layers: []program.LayerType{full, sliding, sliding}}
)

func newSession(t testing.TB, r *Runner) *Session {
	t.Helper()
	s, err := r.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func appendOK(t testing.TB, s *Session, toks ...int) {
	t.Helper()
	if err := s.Append(context.Background(), toks); err != nil {
		t.Fatalf("append %v at %d: %v", toks, s.Position(), err)
	}
}

func randomTokens(rng *rand.Rand, n, V int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = rng.IntN(V)
	}
	return out
}

// digest hashes every buffer the session owns.
func digest(s *Session) [32]byte {
	h := sha256.New()
	for _, b := range s.owned {
		h.Write(b)
	}
	fmt.Fprint(h, s.pos, s.history, s.lo, s.err)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// stateDigest hashes the caches, counters and the current logits (not per-method I/O).
func stateDigest(s *Session) [32]byte {
	h := sha256.New()
	for _, n := range s.r.stateNames() {
		h.Write(s.state[n])
	}
	for _, x := range s.Logits().View() {
		fmt.Fprint(h, x)
	}
	fmt.Fprint(h, s.pos, s.history)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func logitsCopy(t testing.TB, s *Session) []float32 {
	t.Helper()
	l := s.Logits()
	if !l.Valid() {
		t.Fatalf("logits at position %d are stale", s.Position())
	}
	out := make([]float32, l.Len())
	l.CopyTo(out)
	return out
}

// eachRows runs tokens through AppendEach and returns every row.
func eachRows(t testing.TB, s *Session, toks []int) [][]float32 {
	t.Helper()
	var rows [][]float32
	err := s.AppendEach(context.Background(), toks, func(i int, row []float32) error {
		rows = append(rows, slices.Clone(row))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestChunkedAppendEqualsTokenByToken(t *testing.T) {
	for _, spec := range []fakeSpec{
		mixed,
		{C: 9, P: 9, V: 5, Layers: []program.LayerType{full}},
		{C: 11, P: 3, V: 5, W: 2, Layers: []program.LayerType{sliding, full}, PrefillLogits: program.LogitsLast},
		{C: 10, P: 4, V: 5, W: 30, Layers: []program.LayerType{sliding}},
		{C: 10, P: 4, V: 5, W: 3, Layers: []program.LayerType{sliding, full}, Layout: program.LayoutFull},
	} {
		decodeOnly := spec
		decodeOnly.P = 0
		_, r := newFake(spec)
		_, ref := newFake(decodeOnly)
		rng := rand.New(rand.NewPCG(1, uint64(spec.C)))
		for m := 1; m <= spec.C; m++ {
			t.Run(fmt.Sprintf("C=%d/P=%d/W=%d/m=%d", spec.C, spec.P, spec.W, m), func(t *testing.T) {
				toks := randomTokens(rng, m, spec.V)
				one := newSession(t, ref)
				want := eachRows(t, one, toks)
				chunked := newSession(t, r)
				appendOK(t, chunked, toks...)
				if stateDigest(one) != stateDigest(chunked) {
					t.Errorf("caches or logits after a chunked append differ from token by token")
				}
				if r.PrefillLogitsAll() {
					got := eachRows(t, newSession(t, r), toks)
					if !slices.EqualFunc(want, got, slices.Equal) {
						t.Errorf("AppendEach rows over prefill differ from token by token")
					}
				}
			})
		}
	}
}

func TestRejectedRequestsChangeNothing(t *testing.T) {
	_, r := newFake(mixed)
	s := newSession(t, r)
	appendOK(t, s, 1, 2, 3, 4, 5, 6, 2, 3, 4, 5)
	before := digest(s)
	logits := s.Logits()
	var saved bytes.Buffer
	if err := s.Save(&saved); err != nil {
		t.Fatal(err)
	}
	_, other := newFake(fakeSpec{C: 20, P: 4, V: 7, W: 3, Layers: []program.LayerType{full, sliding, full}})
	os := newSession(t, other)
	appendOK(t, os, 1)
	var foreign bytes.Buffer
	os.Save(&foreign)
	damaged := bytes.Clone(saved.Bytes())
	damaged[len(damaged)/2] ^= 1
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"empty append", func() error { return s.Append(context.Background(), nil) }, ErrEmpty},
		{"past the context", func() error { return s.Append(context.Background(), make([]int, 11)) }, ErrContextFull},
		{"negative token", func() error { return s.Append(context.Background(), []int{1, -1}) }, ErrTokenOutOfRange},
		{"token beyond the vocabulary", func() error { return s.Append(context.Background(), []int{7}) }, ErrTokenOutOfRange},
		{"append each past the context", func() error {
			return s.AppendEach(context.Background(), make([]int, 11), func(int, []float32) error { return nil })
		}, ErrContextFull},
		{"rewind past the end", func() error { return s.Rewind(11) }, ErrRewindRange},
		{"rewind before 0", func() error { return s.Rewind(-1) }, ErrRewindRange},
		{"rewind a ring past its window", func() error { return s.Rewind(5) }, ErrRewindRing},
		{"restore another program's session", func() error { return s.Restore(&foreign) }, ErrWrongProgram},
		{"restore a damaged file", func() error { return s.Restore(bytes.NewReader(damaged)) }, ErrCorruptSession},
		{"restore a truncated file", func() error { return s.Restore(bytes.NewReader(saved.Bytes()[:100])) }, ErrCorruptSession},
		{"restore an empty file", func() error { return s.Restore(bytes.NewReader(nil)) }, ErrCorruptSession},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if digest(s) != before {
				t.Errorf("a rejected request changed the session's buffers or counters")
			}
			if !logits.Valid() {
				t.Errorf("a rejected request invalidated the logits")
			}
		})
	}
}

func TestFailedStepPoisonsUntilReset(t *testing.T) {
	fe, r := newFake(mixed)
	s := newSession(t, r)
	appendOK(t, s, 1, 2, 3)
	fe.failAt = fe.runs + 2 // the second step of the next append
	err := s.Append(context.Background(), []int{4, 5, 6, 1, 2, 3})
	if !errors.Is(err, errInjected) {
		t.Fatalf("append: %v, want the injected failure", err)
	}
	calls := map[string]func() error{
		"Append":  func() error { return s.Append(context.Background(), []int{1}) },
		"Rewind":  func() error { return s.Rewind(0) },
		"Fork":    func() error { _, err := s.Fork(); return err },
		"Save":    func() error { return s.Save(&bytes.Buffer{}) },
		"AppendE": func() error { return s.AppendEach(context.Background(), []int{1}, nil) },
	}
	for name, call := range calls {
		err := call()
		var pe *PoisonedError
		if !errors.As(err, &pe) || !errors.Is(err, errInjected) {
			t.Errorf("%s on a poisoned session: %v, want a *PoisonedError wrapping the failure", name, err)
		}
	}
	if !s.Inspect().Poisoned {
		t.Errorf("Inspect does not report the poison")
	}
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if digest(s) != digest(newSession(t, r)) {
		t.Errorf("a reset session differs from a new one")
	}
	appendOK(t, s, 1, 2, 3)
	want := newSession(t, r)
	appendOK(t, want, 1, 2, 3)
	if stateDigest(s) != stateDigest(want) {
		t.Errorf("after Reset the session does not run like a new one")
	}
}

func TestCancelBetweenStepsKeepsSessionConsistent(t *testing.T) {
	fe, r := newFake(mixed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fe.cancel, fe.cancelAt = cancel, 2
	toks := []int{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5}
	s := newSession(t, r)
	err := s.Append(ctx, toks)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("append: %v, want context.Canceled", err)
	}
	if got := s.Position(); got != 8 {
		t.Fatalf("position %d after two completed steps, want 8", got)
	}
	appendOK(t, s, toks[8:]...)
	want := newSession(t, r)
	appendOK(t, want, toks...)
	if stateDigest(s) != stateDigest(want) {
		t.Errorf("a cancelled then resumed append differs from an uninterrupted one")
	}
}

func TestResetTwiceIsIdentical(t *testing.T) {
	_, r := newFake(mixed)
	s := newSession(t, r)
	fresh := digest(s)
	appendOK(t, s, 1, 2, 3, 4, 5)
	s.Reset()
	first := digest(s)
	appendOK(t, s, 6, 5, 4)
	s.Reset()
	s.Reset()
	if first != fresh || digest(s) != fresh {
		t.Errorf("reset states differ from a new session's")
	}
	if s.Logits().Valid() || s.Position() != 0 || len(s.Tokens()) != 0 {
		t.Errorf("after Reset: logits valid %v, position %d, tokens %v", s.Logits().Valid(), s.Position(), s.Tokens())
	}
}

func TestLogitsViewGoesStale(t *testing.T) {
	_, r := newFake(mixed)
	s := newSession(t, r)
	if s.Logits().Valid() {
		t.Fatalf("a new session has valid logits")
	}
	appendOK(t, s, 1)
	l := s.Logits()
	if !l.Valid() || len(l.View()) != mixed.V || l.Len() != mixed.V {
		t.Fatalf("fresh logits: Len %d", l.Len())
	}
	appendOK(t, s, 2)
	if l.Valid() || l.View() != nil || l.Len() != 0 || l.CopyTo(make([]float32, mixed.V)) {
		t.Errorf("an old view still reads after the next step")
	}
	if err := s.Rewind(2); err != nil {
		t.Fatal(err)
	}
	if s.Logits().Valid() {
		t.Errorf("logits are valid after Rewind")
	}
}

func TestClosedSessionRefusesWork(t *testing.T) {
	_, r := newFake(mixed)
	s := newSession(t, r)
	s.Close()
	for name, err := range map[string]error{
		"Append":  s.Append(context.Background(), []int{1}),
		"Reset":   s.Reset(),
		"Rewind":  s.Rewind(0),
		"Restore": s.Restore(bytes.NewReader(nil)),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s: %v, want ErrClosed", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
