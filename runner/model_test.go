package runner_test

// Tests against real programs exported from checkpoints and run by the CPU executor
// (through package engine, which imports runner: hence this external test package).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

var (
	programsMu sync.Mutex
	programs   = map[string][]byte{}
)

// exportProgram exports a checkpoint into 64-byte aligned memory, once per key.
func exportProgram(t testing.TB, key string, fsys func() (fs.FS, error), opts export.Options) []byte {
	t.Helper()
	programsMu.Lock()
	defer programsMu.Unlock()
	if data, ok := programs[key]; ok {
		return data
	}
	src, err := fsys()
	if err != nil {
		t.Fatal(err)
	}
	data := exporttest.Program(t, src, opts)
	programs[key] = data
	return data
}

func stories() (fs.FS, error) { return models.Stories260K(), nil }

// slidingMistral is the random Mistral checkpoint with its first layer full and its second
// a sliding window of 4 (a real ring cache, as Gemma 3 and Mistral use).
func slidingMistral() (fs.FS, error) {
	src, err := testckpt.Random("mistral")
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := json.Unmarshal(src["config.json"].Data, &cfg); err != nil {
		return nil, err
	}
	cfg["sliding_window"] = 4
	cfg["layer_types"] = []string{"full_attention", "sliding_attention"}
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	out := fstest.MapFS{}
	for name, f := range src {
		out[name] = f
	}
	out["config.json"] = &fstest.MapFile{Data: js, Mode: 0o444}
	return out, nil
}

type model struct {
	name   string
	source func() (fs.FS, error)
	opts   export.Options
	vocab  int
}

var (
	storiesPrefill    = model{"stories260K/C=60/P=16", stories, export.Options{Context: 60, Prefill: 16, PrefillLogits: program.LogitsAll, CacheDType: program.F32}, 512}
	storiesDecode     = model{"stories260K/C=60/decode", stories, export.Options{Context: 60, CacheDType: program.F32}, 512}
	mistralRing       = model{"mistral-sliding/C=24/P=5", slidingMistral, export.Options{Context: 24, Prefill: 5, PrefillLogits: program.LogitsAll, CacheDType: program.F32}, 32000}
	mistralRingDecode = model{"mistral-sliding/C=24/decode", slidingMistral, export.Options{Context: 24, CacheDType: program.F32}, 32000}
	mistralRingF16    = model{"mistral-sliding/C=24/P=5/f16", slidingMistral, export.Options{Context: 24, Prefill: 5, CacheDType: program.F16}, 32000}
	// Mixtral's experts: a prefill step groups its rows by expert, a decode step has one.
	mixtralQ8       = model{"mixtral-q8/C=24/P=5", mixtral, export.Options{Context: 24, Prefill: 5, PrefillLogits: program.LogitsAll, Weights: "q8", CacheDType: program.F32}, 32000}
	mixtralQ8Decode = model{"mixtral-q8/C=24/decode", mixtral, export.Options{Context: 24, Weights: "q8", CacheDType: program.F32}, 32000}
)

func mixtral() (fs.FS, error) { return testckpt.Random("mixtral") }

func load(t testing.TB, m model, opts engine.Options) *engine.Model {
	t.Helper()
	if opts.Threads == 0 {
		opts.Threads = 2
	}
	em, err := engine.Load(exportProgram(t, m.name, m.source, m.opts), opts)
	if err != nil {
		t.Fatalf("load %s: %v", m.name, err)
	}
	t.Cleanup(func() { em.Close() })
	return em
}

func session(t testing.TB, r *runner.Runner) *runner.Session {
	t.Helper()
	s, err := r.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustAppend(t testing.TB, s *runner.Session, toks ...int) {
	t.Helper()
	if err := s.Append(context.Background(), toks); err != nil {
		t.Fatalf("append %d tokens at %d: %v", len(toks), s.Position(), err)
	}
}

func logits(t testing.TB, s *runner.Session) []float32 {
	t.Helper()
	v := s.Logits().View()
	if v == nil {
		t.Fatalf("stale logits at %d", s.Position())
	}
	return slices.Clone(v)
}

// stepwise appends toks one at a time and returns the logits after each.
func stepwise(t testing.TB, s *runner.Session, toks []int) [][]float32 {
	t.Helper()
	var rows [][]float32
	for _, tok := range toks {
		mustAppend(t, s, tok)
		rows = append(rows, logits(t, s))
	}
	return rows
}

func each(t testing.TB, s *runner.Session, toks []int) [][]float32 {
	t.Helper()
	var rows [][]float32
	err := s.AppendEach(context.Background(), toks, func(_ int, row []float32) error {
		rows = append(rows, slices.Clone(row))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func maxDiff(a, b [][]float32) float64 {
	worst := 0.0
	for i := range a {
		for j := range a[i] {
			d := math.Abs(float64(a[i][j] - b[i][j]))
			if d > worst || math.IsNaN(d) {
				worst = d
			}
		}
	}
	return worst
}

func tokens(n, vocab int, seed int) []int {
	out := make([]int, n)
	x := uint32(seed)*2654435761 + 1
	for i := range out {
		x = x*1664525 + 1013904223
		out[i] = int(x>>8) % vocab
	}
	return out
}

func TestModelChunkedPrefillEqualsTokenByToken(t *testing.T) {
	for _, pair := range [][2]model{{storiesPrefill, storiesDecode}, {mistralRing, mistralRingDecode}, {mixtralQ8, mixtralQ8Decode}} {
		t.Run(pair[0].name, func(t *testing.T) {
			chunked, decode := load(t, pair[0], engine.Options{}).Runner, load(t, pair[1], engine.Options{}).Runner
			C := chunked.Planner().Context
			toks := tokens(C, pair[0].vocab, 1)
			s := session(t, chunked)
			got := each(t, s, toks)
			want := each(t, session(t, decode), toks)
			d := maxDiff(want, got)
			if d != 0 {
				t.Errorf("chunked prefill vs token by token over %d tokens: max |diff| %.3g, want 0", C, d)
			}
			if !slices.Equal(got[C-1], logits(t, s)) {
				t.Errorf("the session's logits are not the last row's")
			}
			t.Logf("max |diff| %.3g", d)
		})
	}
}

func TestModelDecodeAppendAllocatesNothing(t *testing.T) {
	for _, m := range []model{storiesDecode, storiesPrefill, mistralRing, mixtralQ8} {
		t.Run(m.name, func(t *testing.T) {
			r := load(t, m, engine.Options{Threads: 1}).Runner
			s := session(t, r)
			ctx := context.Background()
			tok := []int{5}
			mustAppend(t, s, tokens(r.Planner().Context-22, m.vocab, 2)...)
			allocs := testing.AllocsPerRun(20, func() {
				if err := s.Append(ctx, tok); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%.1f allocations per single-token Append, want 0", allocs)
			}
			// The same through a Batcher a fresh session is joined to.
			b, err := runner.NewBatcher(r, runner.BatchOptions{MaxBatch: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			s2 := session(t, r)
			mustAppend(t, s2, tokens(r.Planner().Context-22, m.vocab, 2)...)
			q, err := b.Join(s2)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Leave()
			allocs = testing.AllocsPerRun(20, func() {
				if err := q.Append(ctx, tok); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%.1f allocations per single-token Append of a joined session, want 0", allocs)
			}
		})
	}
}

func TestModelForkContinuesLikeAFreshRun(t *testing.T) {
	for _, m := range []model{storiesPrefill, mistralRing, mistralRingF16} {
		t.Run(m.name, func(t *testing.T) {
			r := load(t, m, engine.Options{}).Runner
			prefix, a, b := tokens(13, m.vocab, 3), tokens(6, m.vocab, 4), tokens(6, m.vocab, 5)
			orig := session(t, r)
			mustAppend(t, orig, prefix...)
			f, err := orig.Fork()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			gotB := stepwise(t, f, b)
			gotA := stepwise(t, orig, a)
			fresh := func(cont []int) [][]float32 {
				s := session(t, r)
				mustAppend(t, s, prefix...)
				return stepwise(t, s, cont)
			}
			if d := maxDiff(gotB, fresh(b)); d != 0 {
				t.Errorf("fork continued vs fresh run: max |diff| %.3g, want bit-identical", d)
			}
			if d := maxDiff(gotA, fresh(a)); d != 0 {
				t.Errorf("original continued after the fork vs fresh run: max |diff| %.3g", d)
			}
		})
	}
}

func TestModelSaveRestoreEqualsNeverStopping(t *testing.T) {
	for _, m := range []model{storiesPrefill, mistralRing, mistralRingF16} {
		t.Run(m.name, func(t *testing.T) {
			em := load(t, m, engine.Options{})
			r := em.Runner
			prefix, more := tokens(17, m.vocab, 6), tokens(5, m.vocab, 7)
			s := session(t, r)
			mustAppend(t, s, prefix...)
			var file bytes.Buffer
			if err := s.Save(&file); err != nil {
				t.Fatal(err)
			}
			want := stepwise(t, s, more)
			// A second load of the same program file is the same program.
			again := load(t, m, engine.Options{Threads: 1}).Runner
			restored, err := again.RestoreSession(bytes.NewReader(file.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			defer restored.Close()
			if d := maxDiff(stepwise(t, restored, more), want); d != 0 {
				t.Errorf("save → restore → continue vs never stopped: max |diff| %.3g", d)
			}
		})
	}
}

func TestModelRestoreIntoAnotherProgramIsRejected(t *testing.T) {
	a := load(t, storiesPrefill, engine.Options{}).Runner
	b := load(t, storiesDecode, engine.Options{}).Runner
	s := session(t, a)
	mustAppend(t, s, 1, 2, 3)
	var file bytes.Buffer
	s.Save(&file)
	target := session(t, b)
	mustAppend(t, target, 4)
	want := logits(t, target)
	err := target.Restore(&file)
	var fe *runner.SessionFileError
	if !errors.As(err, &fe) || fe.Field != "fingerprint" || !errors.Is(err, runner.ErrWrongProgram) {
		t.Fatalf("restore into another program: %v", err)
	}
	if target.Position() != 1 || !slices.Equal(logits(t, target), want) {
		t.Errorf("the rejected restore changed the session")
	}
}

func TestModelRingRewindEqualsFreshRun(t *testing.T) {
	r := load(t, mistralRing, engine.Options{}).Runner
	hist, more := tokens(14, mistralRing.vocab, 8), tokens(4, mistralRing.vocab, 9)
	for _, to := range []int{0, 13, 14} { // the window of 4 still holds what these need
		s := session(t, r)
		mustAppend(t, s, hist...)
		if err := s.Rewind(to); err != nil {
			t.Fatalf("rewind 14 → %d: %v", to, err)
		}
		fresh := session(t, r)
		if to > 0 {
			mustAppend(t, fresh, hist[:to]...)
		}
		if d := maxDiff(stepwise(t, s, more), stepwise(t, fresh, more)); d != 0 {
			t.Errorf("rewind 14 → %d then continue vs fresh: max |diff| %.3g", to, d)
		}
	}
	s := session(t, r)
	mustAppend(t, s, hist...)
	if err := s.Rewind(12); !errors.Is(err, runner.ErrRewindRing) {
		t.Errorf("rewind 14 → 12 with a window of 4 needs position 9, overwritten by 13: %v", err)
	}
	info := s.Inspect()
	if got := info.Layers[1]; got.Lo != 10 || got.Hi != 14 || got.Slots != 4 || got.Rows != 4 {
		t.Errorf("ring layer info %+v, want positions [10,14) in 4 of 4 rows", got)
	}
	if got := info.Layers[0]; got.Lo != 0 || got.Hi != 14 || got.Rows != 24 {
		t.Errorf("full layer info %+v", got)
	}
}

func TestModelPoolAdoptionEqualsFreshRun(t *testing.T) {
	for _, m := range []model{storiesPrefill, mistralRing} {
		t.Run(m.name, func(t *testing.T) {
			r := load(t, m, engine.Options{}).Runner
			p, err := runner.NewPool(r, runner.PoolOptions{MaxSessions: 2, MemoryBudget: 2 * r.SessionBytes()})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			base := tokens(15, m.vocab, 10)
			first := append(slices.Clone(base), tokens(1, m.vocab, 11)...)
			second := append(slices.Clone(base), tokens(4, m.vocab, 12)...)
			l, err := p.Acquire(context.Background(), first)
			if err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l.Session, first...)
			l.Release()
			l, err = p.Acquire(context.Background(), second)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			got := each(t, l.Session, second[l.Reused:])
			fresh := session(t, r)
			mustAppend(t, fresh, second[:l.Reused]...)
			want := each(t, fresh, second[l.Reused:])
			if d := maxDiff(got, want); d != 0 {
				t.Errorf("adopted session (reused %d) vs fresh run: max |diff| %.3g", l.Reused, d)
			}
			t.Logf("reused %d tokens; stats %+v", l.Reused, p.Stats())
		})
	}
}

// ledger is an Allocator that keeps every live buffer, so tests can hash all of a
// session's memory and check that Close returns it.
type ledger struct {
	mu   sync.Mutex
	live map[*byte][]byte
}

func (l *ledger) Alloc(n int) ([]byte, error) {
	b, err := runner.HeapAllocator{}.Alloc(n)
	if err == nil && n > 0 {
		l.mu.Lock()
		l.live[&b[0]] = b
		l.mu.Unlock()
	}
	return b, err
}

func (l *ledger) Free(b []byte) {
	if len(b) > 0 {
		l.mu.Lock()
		delete(l.live, &b[0])
		l.mu.Unlock()
	}
}

func (l *ledger) digest() [32]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum [32]byte
	for _, b := range l.live {
		h := sha256.Sum256(b)
		for i := range sum {
			sum[i] ^= h[i] // order-independent
		}
	}
	return sum
}

func TestModelRejectedRequestChangesNothing(t *testing.T) {
	led := &ledger{live: map[*byte][]byte{}}
	r := load(t, storiesPrefill, engine.Options{Allocator: led}).Runner
	s, err := r.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(led.live), 2*4+3*len(r.Metadata().Layers); got != want {
		t.Errorf("%d buffers from the allocator, want %d (ids, mask, positions, logits per method; caches and counters per layer)", got, want)
	}
	mustAppend(t, s, tokens(50, 512, 13)...)
	before := led.digest()
	ctx := context.Background()
	for name, err := range map[string]error{
		"11 tokens past 50 of 60":   s.Append(ctx, tokens(11, 512, 14)),
		"a token outside the vocab": s.Append(ctx, []int{3, 512}),
		"nothing":                   s.Append(ctx, nil),
		"rewind beyond the end":     s.Rewind(51),
		"restore garbage":           s.Restore(bytes.NewReader([]byte("HFSSESS\x00garbage"))),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		if led.digest() != before {
			t.Errorf("%s: rejected, but a buffer changed", name)
		}
	}
	if err := s.Append(ctx, tokens(11, 512, 14)); !errors.Is(err, runner.ErrContextFull) || !strings.Contains(err.Error(), "60") {
		t.Errorf("context full error %q does not name the context 60", err)
	}
	if !s.Logits().Valid() {
		t.Errorf("rejected requests made the logits stale")
	}
	l := s.Logits()
	s.Close()
	if len(led.live) != 0 {
		t.Errorf("%d buffers not returned to the allocator on Close", len(led.live))
	}
	if l.Valid() || l.View() != nil {
		t.Errorf("a Logits view stays valid after Close (its buffer went back to the allocator)")
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, m := range []model{storiesDecode, storiesPrefill} {
		r := load(b, m, engine.Options{Threads: 1}).Runner
		ctx := context.Background()
		b.Run("model="+m.name+"/tokens=1", func(b *testing.B) {
			s := session(b, r)
			b.ReportAllocs()
			for b.Loop() {
				if s.Position() == r.Planner().Context {
					s.Reset()
				}
				if err := s.Append(ctx, []int{7}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("model="+m.name+"/tokens=48", func(b *testing.B) {
			s := session(b, r)
			toks := tokens(48, m.vocab, 15)
			b.ReportAllocs()
			for b.Loop() {
				s.Reset()
				if err := s.Append(ctx, toks); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
