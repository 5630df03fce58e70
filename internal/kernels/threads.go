package kernels

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// spinTime is how long an idle worker (or a caller waiting for a chunk a
// worker still holds) busy-waits before parking. Decode issues hundreds of
// matmuls per token a few microseconds apart; a futex wake-up per matmul
// would cost more than the spin.
const spinTime = 50 * time.Microsecond

// maxChunks bounds the chunks of one job: the chunk count and the next
// chunk index share one atomic word with the job generation.
const maxChunks = 1 << 16

// Pool is a persistent worker pool that splits MatMul (and For) across threads. The
// calling goroutine is one of the threads; Threads()-1 goroutines are owned
// by the pool and stopped by Close. Calls are serialized: one Pool serves one
// executor. A MatMul allocates nothing once the pool's scratch has grown to
// the largest shape seen.
//
// Work is handed out in chunks of weight rows claimed with one atomic
// compare-and-swap, so a worker that the OS has not scheduled yet never
// delays a call: the caller claims the remaining chunks itself and only
// waits for chunks a worker has already started.
type Pool struct {
	threads int
	exact   bool       // PoolOptions.ExactQuantized
	call    sync.Mutex // serializes MatMul calls
	scratch []workerScratch
	xpad    []float32          // x padded to whole blocks, shared by all threads
	xsum    []float32          // per-block sums of xpad (or of xq8)
	xq8     []byte             // x quantized to int8 blocks for the VNNI kernels
	xq8t    []byte             // xq8 transposed for the q8 VNNI matrix product
	dx      []float32          // scales of the xq8 blocks
	xs8     []int32            // the block sums of xq8 (arm64 q8/q4 products)
	bp      []float32          // scales and offset sums of the VNNI batch stream (prepareBatch)
	starts  [maxGuided + 1]int // chunk starts of a matrix-vector product

	// The current job, written by the caller before claim is published:
	// a MatMul, or (forFn != nil) a For over forN items, forPer per chunk.
	job    matmulJob
	forFn  func(worker, i int)
	forN   int
	forPer int
	// prepRow prepares row i of a matrix product's input (set once: a
	// method value, so that parallel preparation allocates nothing).
	prepRow func(worker, i int)
	gen     uint32 // generation of the current job, caller-owned
	// claim packs the job generation (bits 32-63), its chunk count (bits
	// 16-31) and the next unclaimed chunk (bits 0-15).
	claim atomic.Uint64
	done  atomic.Int64 // chunks of the current job finished

	mu            sync.Mutex // guards parking
	wake          *sync.Cond // workers park here
	finished      *sync.Cond // the caller parks here
	sleepers      int        // workers parked on wake, guarded by mu
	callerWaiting bool       // the caller is parked on finished, guarded by mu
	closed        atomic.Bool
	exited        sync.WaitGroup
}

// workerScratch is per-thread scratch memory, padded to keep threads off
// each other's cache lines.
type workerScratch struct {
	buf  []float32
	gemm *gemmScratch
	wt   []byte // q8/q4 weight rows transposed for the int8 tiles (vnniTile<q>, <p>Tile<q>AVX2)
	_    [64 - 56]byte
}

// PoolOptions configures NewPoolWith.
type PoolOptions struct {
	// Threads is the number of threads MatMul uses, the caller included
	// (>= 1).
	Threads int
	// ExactQuantized turns off the int8 quantization of activations in the
	// q8/q4 matrix product (the VNNI path, and the int8 path of AVX2 CPUs; see
	// the package comment): float32 arithmetic on the stored weights for
	// every m, at about 1.6-2.2× the time per q8/q4 decode matmul. Rows of a
	// batch then agree with single-row calls only to float32 rounding.
	ExactQuantized bool
}

// NewPool starts a pool of threads threads (the caller counts as one);
// threads < 1 is treated as 1. Use NewPoolWith for more options.
func NewPool(threads int) *Pool {
	p, _ := NewPoolWith(PoolOptions{Threads: max(threads, 1)})
	return p
}

// NewPoolWith starts a pool configured by opts.
func NewPoolWith(opts PoolOptions) (*Pool, error) {
	if opts.Threads < 1 {
		return nil, fmt.Errorf("kernels: PoolOptions.Threads = %d, want >= 1", opts.Threads)
	}
	threads := opts.Threads
	p := &Pool{threads: threads, exact: opts.ExactQuantized, scratch: make([]workerScratch, threads)}
	p.wake = sync.NewCond(&p.mu)
	p.finished = sync.NewCond(&p.mu)
	p.exited.Add(threads - 1)
	for id := 1; id < threads; id++ {
		go p.worker(id)
	}
	return p, nil
}

// Threads returns the number of threads MatMul uses, including the caller.
func (p *Pool) Threads() int { return p.threads }

// Close stops the pool's goroutines and waits for them to exit. MatMul
// still works afterwards, on the calling goroutine only.
func (p *Pool) Close() {
	p.call.Lock()
	defer p.call.Unlock()
	if p.closed.Swap(true) {
		return
	}
	p.mu.Lock()
	p.wake.Broadcast()
	p.mu.Unlock()
	p.exited.Wait()
}

func (p *Pool) worker(id int) {
	defer p.exited.Done()
	var seen uint32 // generation 0 is never a job
	for {
		g, ok := p.waitJob(seen)
		if !ok {
			return
		}
		seen = g
		p.work(id, g)
	}
}

// waitJob spins, then parks, until a job generation other than seen is
// published. It reports false when the pool is closed.
func (p *Pool) waitJob(seen uint32) (uint32, bool) {
	start := time.Now()
	for i := 1; ; i++ {
		if p.closed.Load() {
			return 0, false
		}
		if g := uint32(p.claim.Load() >> 32); g != seen {
			return g, true
		}
		if i%256 == 0 && time.Since(start) > spinTime {
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sleepers++
	for uint32(p.claim.Load()>>32) == seen && !p.closed.Load() {
		p.wake.Wait()
	}
	p.sleepers--
	return uint32(p.claim.Load() >> 32), !p.closed.Load()
}

// work claims and runs chunks of job generation g until none are left.
func (p *Pool) work(id int, g uint32) {
	for {
		c := p.claim.Load()
		next, chunks := c&0xffff, c>>16&0xffff
		if uint32(c>>32) != g || next >= chunks {
			return
		}
		if !p.claim.CompareAndSwap(c, c+1) {
			continue
		}
		p.runChunk(id, int(next))
		if p.done.Add(1) == int64(chunks) && id != 0 {
			// The caller may have parked. Whether it has is read under mu,
			// not from an atomic flag: a flag would be a store-then-load
			// handshake on each side (Dekker's), which needs sequentially
			// consistent atomics, and qemu-aarch64 on an x86 host does not
			// give them (it lets an STLR pass a later LDAR); the caller then
			// parked after the last worker had looked, and both slept for
			// ever. Only the thread that finishes the job takes the lock.
			p.mu.Lock()
			if p.callerWaiting {
				p.finished.Signal()
			}
			p.mu.Unlock()
		}
	}
}

// runChunk runs chunk c of the current job on thread id.
func (p *Pool) runChunk(id, c int) {
	if p.forFn == nil {
		p.job.runChunk(p, id, c)
		return
	}
	for i := c * p.forPer; i < min(p.forN, (c+1)*p.forPer); i++ {
		p.forFn(id, i)
	}
}

// For calls fn(worker, i) once for every i in [0, n), spread over the
// pool's threads, and returns when all calls have returned. worker is in
// [0, Threads()) and no two calls running at the same time share it, so it
// can index per-thread scratch. Items are claimed one at a time (or in
// equal runs when n is very large), so uneven items balance. Calls are
// serialized with MatMul and For; fn must not call back into the pool. For
// allocates nothing: build fn once, not per call.
func (p *Pool) For(n int, fn func(worker, i int)) {
	if n <= 0 {
		return
	}
	p.call.Lock()
	defer p.call.Unlock()
	if p.threads == 1 || n == 1 {
		for i := range n {
			fn(0, i)
		}
		return
	}
	p.runFor(n, (n+maxChunks-2)/(maxChunks-1), fn)
}

// runFor runs fn over [0, n) in chunks of per items on every thread; the
// caller holds p.call.
func (p *Pool) runFor(n, per int, fn func(worker, i int)) {
	p.forFn, p.forN, p.forPer = fn, n, per
	p.runJob((n + per - 1) / per)
	p.forFn = nil
}

// runJob runs p.job's chunks on every thread and returns when all are done.
func (p *Pool) runJob(chunks int) {
	p.gen++
	if p.gen == 0 {
		p.gen = 1
	}
	p.done.Store(0)
	p.claim.Store(uint64(p.gen)<<32 | uint64(chunks)<<16)
	if p.threads > 1 && !p.closed.Load() {
		p.mu.Lock()
		if p.sleepers > 0 {
			p.wake.Broadcast()
		}
		p.mu.Unlock()
	}
	p.work(0, p.gen)
	start := time.Now()
	for i := 1; p.done.Load() != int64(chunks); i++ {
		if i%256 == 0 && time.Since(start) > spinTime {
			p.mu.Lock()
			p.callerWaiting = true
			for p.done.Load() != int64(chunks) {
				p.finished.Wait()
			}
			p.callerWaiting = false
			p.mu.Unlock()
			break
		}
	}
}

// grow returns thread id's scratch with at least n floats.
func (p *Pool) grow(id, n int) []float32 {
	s := &p.scratch[id]
	if len(s.buf) < n {
		s.buf = make([]float32, n)
	}
	return s.buf[:n]
}
