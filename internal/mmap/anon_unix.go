//go:build unix

package mmap

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Anon returns size bytes of zeroed anonymous memory outside the Go heap,
// starting on a 2 MiB boundary and advised for huge pages (Linux transparent
// huge pages in "madvise" mode leave the Go heap in 4 KiB pages): attention
// over a long cache reads its keys and values faster from such memory
// (docs/performance.md). Release it with FreeAnon.
func Anon(size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("mmap: anonymous mapping of %d bytes", size)
	}
	n := (size + unix.Getpagesize() - 1) &^ (unix.Getpagesize() - 1)
	// (the pointer forms: unix.Munmap only takes whole mappings made by unix.Mmap)
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n+hugeSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("mmap: allocate %d bytes: %w", size, err)
	}
	// keep the 2 MiB-aligned n bytes, give the slack on both sides back
	off := (hugeSize - uintptr(p)%hugeSize) % hugeSize
	if off > 0 {
		_ = unix.MunmapPtr(p, off)
	}
	if tail := uintptr(hugeSize) - off; tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(p, off+uintptr(n)), tail)
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, off)), n)
	adviseHuge(b)
	return b[:size], nil
}

// FreeAnon releases memory returned by Anon. b must be that slice (any length,
// the same start and capacity); it must not be used afterwards.
func FreeAnon(b []byte) error {
	if cap(b) == 0 {
		return nil
	}
	if err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(cap(b))); err != nil {
		return fmt.Errorf("mmap: free %d bytes: %w", cap(b), err)
	}
	return nil
}
