package kernels

import (
	"sync/atomic"
	"testing"
)

func TestPoolForCallsEveryItemOnceWithDistinctWorkers(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		p := NewPool(threads)
		for _, n := range []int{0, 1, 2, 7, 100, maxChunks + 5} {
			hits := make([]atomic.Int32, n)
			var busy [3]atomic.Int32
			var bad atomic.Bool
			fn := func(worker, i int) {
				if worker < 0 || worker >= threads || busy[worker].Add(1) != 1 {
					bad.Store(true)
				}
				hits[i].Add(1)
				busy[worker].Add(-1)
			}
			p.For(n, fn)
			if bad.Load() {
				t.Fatalf("threads=%d n=%d: a worker id was out of range or used by two calls at once", threads, n)
			}
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("threads=%d n=%d: item %d ran %d times, want 1", threads, n, i, h)
				}
			}
		}
		p.Close()
	}
}

func TestPoolForAllocatesNothing(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	var sum atomic.Int64
	fn := func(worker, i int) { sum.Add(int64(i)) }
	if a := testing.AllocsPerRun(50, func() { p.For(64, fn) }); a != 0 {
		t.Errorf("For allocated %v times per call, want 0", a)
	}
}
