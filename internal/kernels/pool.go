package kernels

import (
	"sync"
	"sync/atomic"
	"time"
)

// spinTime is how long an idle worker (or a caller waiting for workers)
// busy-waits before parking. Decode issues hundreds of matmuls per token a
// few microseconds apart; a futex wake-up per matmul would cost more than
// the spin.
const spinTime = 50 * time.Microsecond

// Pool is a persistent worker pool that splits MatMul across threads. The
// calling goroutine is one of the threads; Threads()-1 goroutines are owned
// by the pool and stopped by Close. Calls are serialized: one Pool serves one
// executor. A MatMul allocates nothing once the pool's scratch has grown to
// the largest shape seen.
type Pool struct {
	threads int
	call    sync.Mutex // serializes MatMul calls
	scratch []workerScratch
	xpad    []float32 // x padded to whole blocks, shared by all threads
	xsum    []float32 // per-block sums of xpad (or of xq8)
	xq8     []byte    // x quantized to int8 blocks for the VNNI kernels
	dx      []float32 // scales of the xq8 blocks

	// The current job, written by the caller before gen is bumped.
	job    matmulJob
	gen    atomic.Uint64 // bumped once per job; workers run a job when it changes
	active atomic.Int32  // pool workers still running the current job

	mu            sync.Mutex // guards parking
	wake          *sync.Cond // workers park here
	done          *sync.Cond // the caller parks here
	sleepers      int        // workers parked on wake, guarded by mu
	callerWaiting atomic.Bool
	closed        atomic.Bool
	exited        sync.WaitGroup
}

// workerScratch is per-thread scratch memory, padded to keep threads off
// each other's cache lines.
type workerScratch struct {
	buf  []float32
	gemm *gemmScratch
	_    [64 - 32]byte
}

// NewPool starts a pool of threads threads (the caller counts as one);
// threads < 1 is treated as 1.
func NewPool(threads int) *Pool {
	threads = max(threads, 1)
	p := &Pool{threads: threads, scratch: make([]workerScratch, threads)}
	p.wake = sync.NewCond(&p.mu)
	p.done = sync.NewCond(&p.mu)
	p.exited.Add(threads - 1)
	for id := 1; id < threads; id++ {
		go p.worker(id)
	}
	return p
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
	var seen uint64 // gen starts at 0 and only the caller bumps it
	for {
		if !p.waitJob(seen) {
			return
		}
		seen = p.gen.Load()
		p.job.run(p, id)
		if p.active.Add(-1) == 0 && p.callerWaiting.Load() {
			p.mu.Lock()
			p.done.Signal()
			p.mu.Unlock()
		}
	}
}

// waitJob spins, then parks, until gen moves past seen. It reports false
// when the pool is closed.
func (p *Pool) waitJob(seen uint64) bool {
	start := time.Now()
	for i := 1; ; i++ {
		if p.closed.Load() {
			return false
		}
		if p.gen.Load() != seen {
			return true
		}
		if i%256 == 0 && time.Since(start) > spinTime {
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sleepers++
	for p.gen.Load() == seen && !p.closed.Load() {
		p.wake.Wait()
	}
	p.sleepers--
	return !p.closed.Load()
}

// runJob runs p.job on every thread and returns when all are done.
func (p *Pool) runJob() {
	workers := p.threads - 1
	if p.closed.Load() {
		workers = 0
	}
	if workers > 0 {
		p.active.Store(int32(workers))
		p.gen.Add(1)
		p.mu.Lock()
		if p.sleepers > 0 {
			p.wake.Broadcast()
		}
		p.mu.Unlock()
	}
	p.job.run(p, 0)
	if workers == 0 {
		return
	}
	start := time.Now()
	for i := 1; p.active.Load() != 0; i++ {
		if i%256 == 0 && time.Since(start) > spinTime {
			p.mu.Lock()
			p.callerWaiting.Store(true)
			for p.active.Load() != 0 {
				p.done.Wait()
			}
			p.callerWaiting.Store(false)
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
