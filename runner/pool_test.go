package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hfstatic/hfstatic/program"
)

func newPool(t testing.TB, r *Runner, max int) *Pool {
	t.Helper()
	p, err := NewPool(r, PoolOptions{MaxSessions: max, MemoryBudget: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func acquire(t testing.TB, p *Pool, toks []int) *Lease {
	t.Helper()
	l, err := p.Acquire(context.Background(), toks)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestNewPoolValidatesOptions(t *testing.T) {
	_, r := newFake(mixed)
	per := r.SessionBytes()
	tests := []struct {
		opts  PoolOptions
		field string
		limit int
	}{
		{PoolOptions{MaxSessions: 0, MemoryBudget: per}, "MaxSessions", 0},
		{PoolOptions{MaxSessions: -3, MemoryBudget: per}, "MaxSessions", 0},
		{PoolOptions{MaxSessions: 2, MemoryBudget: per - 1}, "MemoryBudget", 0},
		{PoolOptions{MaxSessions: 2, MemoryBudget: 0}, "MemoryBudget", 0},
		{PoolOptions{MaxSessions: 5, MemoryBudget: 3*per + per/2}, "", 3},
		{PoolOptions{MaxSessions: 2, MemoryBudget: 100 * per}, "", 2},
	}
	for _, tc := range tests {
		p, err := NewPool(r, tc.opts)
		if tc.field != "" {
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("%+v: %v, want an error naming %s", tc.opts, err, tc.field)
			}
			continue
		}
		if err != nil || p.Limit() != tc.limit {
			t.Errorf("%+v: limit %v, err %v; want limit %d", tc.opts, p, err, tc.limit)
		}
	}
}

// fullOnly has no ring: every rewind is possible.
var fullOnly = fakeSpec{C: 20, P: 4, V: 7, Layers: []program.LayerType{full, full}}

func TestPoolAdoptsLongestPrefix(t *testing.T) {
	_, r := newFake(fullOnly)
	p := newPool(t, r, 3)
	a := []int{1, 2, 3, 4, 5, 6}
	b := []int{1, 2, 6, 6}
	la, lb := acquire(t, p, a), acquire(t, p, b)
	appendOK(t, la.Session, a...)
	appendOK(t, lb.Session, b...)
	la.Release()
	lb.Release()

	// Shares 4 tokens with a, 2 with b: adopts a's session at 4.
	req := []int{1, 2, 3, 4, 0, 0}
	l := acquire(t, p, req)
	if l.Session != la.Session || l.Reused != 4 || l.Session.Position() != 4 || l.Session.Logits().Valid() {
		t.Fatalf("adopted session %p (a is %p) reused %d at %d", l.Session, la.Session, l.Reused, l.Session.Position())
	}
	appendOK(t, l.Session, req[l.Reused:]...)
	l.Release()
	// The whole request is cached: keep all but one token so the caller gets logits.
	l = acquire(t, p, req)
	if l.Reused != len(req)-1 {
		t.Errorf("whole request cached: reused %d, want %d", l.Reused, len(req)-1)
	}
	l.Release()
	l.Release() // idempotent
	want := PoolStats{Hits: 2, Misses: 2, ReusedTokens: 4 + 5, Sessions: 2}
	if diff := cmp.Diff(want, p.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestPoolEvictsLeastRecentlyUsed(t *testing.T) {
	_, r := newFake(fullOnly)
	p := newPool(t, r, 2)
	l1 := acquire(t, p, []int{1, 1})
	appendOK(t, l1.Session, 1, 1)
	l2 := acquire(t, p, []int{2, 2})
	appendOK(t, l2.Session, 2, 2)
	l1.Release()
	l2.Release()
	l3 := acquire(t, p, []int{3, 3}) // no prefix: evicts l1's (least recently used)
	if l3.Session != l1.Session || l3.Reused != 0 || l3.Session.Position() != 0 {
		t.Errorf("evicted the wrong session or did not reset it")
	}
	l3.Release()
	if st := p.Stats(); st.Evictions != 1 || st.Sessions != 2 {
		t.Errorf("stats %+v", st)
	}
	l := acquire(t, p, []int{2, 2, 5})
	if l.Session != l2.Session || l.Reused != 2 {
		t.Errorf("the survivor was not adopted")
	}
	l.Release()
}

func TestPoolResetsRingSessionsItCannotRewind(t *testing.T) {
	spec := fakeSpec{C: 12, V: 5, W: 2, Layers: []program.LayerType{sliding}}
	_, r := newFake(spec)
	p := newPool(t, r, 1)
	hist := []int{1, 2, 3, 4, 0, 0, 0}
	l := acquire(t, p, hist)
	appendOK(t, l.Session, hist...)
	l.Release()
	req := []int{1, 2, 3, 4, 1}
	l = acquire(t, p, req)
	if l.Reused != 0 || l.Session.Position() != 0 {
		t.Errorf("reused %d at %d; the ring cannot go back to 4 from 7", l.Reused, l.Session.Position())
	}
	appendOK(t, l.Session, req...)
	if !slices.Equal(logitsCopy(t, l.Session), logitsCopy(t, freshRun(t, r, req))) {
		t.Errorf("the recomputed session differs from a fresh run")
	}
	l.Release()
	if st := p.Stats(); st.Recomputes != 1 || st.Hits != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestPoolResetsPoisonedSessionsOnRelease(t *testing.T) {
	fe, r := newFake(mixed)
	p := newPool(t, r, 1)
	l := acquire(t, p, []int{1, 2})
	fe.failAt = fe.runs + 1
	if err := l.Session.Append(context.Background(), []int{1, 2}); err == nil {
		t.Fatal("the injected failure did not surface")
	}
	l.Release()
	l = acquire(t, p, []int{1, 2})
	if l.Session.Inspect().Poisoned || l.Reused != 0 {
		t.Errorf("a poisoned session came back poisoned or with reuse")
	}
	l.Release()
}

func TestPoolAcquireBlocksUntilReleaseOrCancel(t *testing.T) {
	_, r := newFake(mixed)
	p := newPool(t, r, 1)
	held := acquire(t, p, []int{1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Acquire(ctx, []int{1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire with every session leased: %v, want the deadline", err)
	}
	got := make(chan *Lease)
	go func() {
		l, err := p.Acquire(context.Background(), []int{1})
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(5 * time.Millisecond)
	held.Release()
	if l := <-got; l.Session != held.Session {
		t.Errorf("the waiter did not get the released session")
	} else {
		l.Release()
	}
	if _, err := p.Acquire(context.Background(), nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty request: %v", err)
	}
	p.Close()
	if _, err := p.Acquire(context.Background(), []int{1}); !errors.Is(err, ErrPoolClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// Many goroutines share a small pool; every lease must compute exactly what a fresh run
// does. Run with -race.
func TestPoolConcurrentLeasesMatchFreshRuns(t *testing.T) {
	_, r := newFake(mixed)
	p := newPool(t, r, 3)
	prompts := [][]int{{1, 2, 3, 4, 5}, {1, 2, 3, 0}, {4, 4, 4, 4, 4, 4, 4}, {1, 2}, {6, 5, 4, 3, 2, 1, 0, 1}}
	want := map[string][]float32{}
	for _, pr := range prompts {
		want[fmt.Sprint(pr)] = logitsCopy(t, freshRun(t, r, pr))
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			for range 40 {
				pr := prompts[rng.IntN(len(prompts))]
				l, err := p.Acquire(context.Background(), pr)
				if err != nil {
					t.Error(err)
					return
				}
				if err := l.Session.Append(context.Background(), pr[l.Reused:]); err != nil {
					t.Error(err)
				} else if got := l.Session.Logits().View(); !slices.Equal(got, want[fmt.Sprint(pr)]) {
					t.Errorf("prompt %v reusing %d tokens: logits differ from a fresh run", pr, l.Reused)
				}
				l.Release()
			}
		}()
	}
	wg.Wait()
	st := p.Stats()
	if st.Leased != 0 || st.Sessions > 3 || st.Hits == 0 || st.Hits+st.Misses != 240 {
		t.Errorf("stats %+v", st)
	}
	t.Logf("%+v", st)
}

func TestPoolDropsSessionsClosedByTheCaller(t *testing.T) {
	_, r := newFake(fullOnly)
	p := newPool(t, r, 1)
	l := acquire(t, p, []int{1, 2})
	l.Session.Close()
	l.Release()
	if st := p.Stats(); st.Sessions != 0 || st.Leased != 0 {
		t.Errorf("stats %+v after releasing a closed session", st)
	}
	l = acquire(t, p, []int{1, 2})
	if err := l.Session.Append(context.Background(), []int{1, 2}); err != nil {
		t.Errorf("the replacement session does not work: %v", err)
	}
	l.Release()
}

func TestPoolPrefersASessionItCanRewind(t *testing.T) {
	spec := fakeSpec{C: 12, V: 5, W: 2, Layers: []program.LayerType{sliding, full}}
	_, r := newFake(spec)
	p := newPool(t, r, 2)
	long, short := []int{1, 2, 3, 4, 0, 0, 0}, []int{1, 2, 3}
	la, lb := acquire(t, p, long), acquire(t, p, short)
	appendOK(t, la.Session, long...)
	appendOK(t, lb.Session, short...)
	la.Release()
	lb.Release()
	// Shares 4 tokens with long (which cannot rewind from 7 to 4 with W=2) and 3 with short.
	req := []int{1, 2, 3, 4, 1}
	l := acquire(t, p, req)
	if l.Session != lb.Session || l.Reused != 3 {
		t.Fatalf("reused %d (short's session: %v); want short's 3 tokens", l.Reused, l.Session == lb.Session)
	}
	appendOK(t, l.Session, req[l.Reused:]...)
	if !slices.Equal(logitsCopy(t, l.Session), logitsCopy(t, freshRun(t, r, req))) {
		t.Errorf("the adopted session differs from a fresh run")
	}
	l.Release()
}
