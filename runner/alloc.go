package runner

import (
	"fmt"

	"github.com/hfstatic/hfstatic/internal/align"
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
