package runner

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/mmap"
)

// Allocator provides every I/O buffer of a session (ids, mask, positions, caches,
// counters, logits). Buffers are requested once per session and released on Close.
// Sessions may be created and closed from several goroutines, so implementations must be
// safe for concurrent use.
type Allocator interface {
	// Alloc returns a zeroed buffer of exactly size bytes, aligned to at least 64 bytes.
	Alloc(size int) ([]byte, error)
	// Free releases a buffer obtained from Alloc.
	Free(buf []byte)
}

// HeapAllocator allocates 64-byte aligned buffers on the Go heap; Free is a no-op.
type HeapAllocator struct{}

// Alloc implements Allocator.
func (HeapAllocator) Alloc(size int) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("alloc: negative size %d", size)
	}
	return align.Bytes(size), nil
}

// Free implements Allocator.
func (HeapAllocator) Free([]byte) {}

// PageAllocator is the default allocator: buffers of 2 MiB or more (the K/V caches
// of longer contexts, all-rows logits) are mapped outside the Go heap in huge pages
// where the OS provides them (Linux transparent huge pages; the Go heap stays in
// 4 KiB pages when they are in "madvise" mode), and unmapped by Free; smaller ones
// come from the Go heap. Attention over long caches reads them faster from huge pages
// (docs/performance.md). The zero value is ready to use.
type PageAllocator struct {
	mu     sync.Mutex
	mapped map[*byte]int // start → capacity of the buffers it mapped
}

// pageAllocMin is the size from which PageAllocator maps buffers.
const pageAllocMin = 2 << 20

// Alloc implements Allocator.
func (a *PageAllocator) Alloc(size int) ([]byte, error) {
	if size < pageAllocMin {
		return HeapAllocator{}.Alloc(size)
	}
	b, err := mmap.Anon(size)
	if err != nil {
		return HeapAllocator{}.Alloc(size) // no mapping to be had: heap memory works too
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mapped == nil {
		a.mapped = make(map[*byte]int)
	}
	a.mapped[unsafe.SliceData(b)] = cap(b)
	return b, nil
}

// Free implements Allocator: it unmaps buffers it mapped and leaves the others to
// the garbage collector.
func (a *PageAllocator) Free(buf []byte) {
	if cap(buf) == 0 {
		return
	}
	p := unsafe.SliceData(buf)
	a.mu.Lock()
	n, mapped := a.mapped[p]
	delete(a.mapped, p)
	a.mu.Unlock()
	if mapped {
		_ = mmap.FreeAnon(unsafe.Slice(p, n)) // the whole mapping, whatever buf's capacity
	}
}
