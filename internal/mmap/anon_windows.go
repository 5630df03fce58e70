package mmap

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Anon returns size bytes of zeroed memory outside the Go heap (VirtualAlloc), starting on
// a 2 MiB boundary as on Unix: size + 2 MiB of address space is reserved and the aligned
// size bytes of it committed. Release it with FreeAnon.
func Anon(size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("mmap: anonymous mapping of %d bytes", size)
	}
	base, err := windows.VirtualAlloc(0, uintptr(size)+hugeSize, windows.MEM_RESERVE, windows.PAGE_NOACCESS)
	if err != nil {
		return nil, fmt.Errorf("mmap: reserve %d bytes: %w", size, err)
	}
	start := (base + hugeSize - 1) &^ (hugeSize - 1)
	if _, err := windows.VirtualAlloc(start, uintptr(size), windows.MEM_COMMIT, windows.PAGE_READWRITE); err != nil {
		windows.VirtualFree(base, 0, windows.MEM_RELEASE)
		return nil, fmt.Errorf("mmap: allocate %d bytes: %w", size, err)
	}
	return unsafe.Slice((*byte)(ptr(start)), size), nil
}

// FreeAnon releases memory returned by Anon (the whole reservation it lies in). b must be
// that slice (any length, the same start); it must not be used afterwards.
func FreeAnon(b []byte) error {
	if cap(b) == 0 {
		return nil
	}
	var mbi windows.MemoryBasicInformation
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if err := windows.VirtualQuery(addr, &mbi, unsafe.Sizeof(mbi)); err != nil {
		return fmt.Errorf("mmap: free %d bytes: %w", cap(b), err)
	}
	if err := windows.VirtualFree(mbi.AllocationBase, 0, windows.MEM_RELEASE); err != nil {
		return fmt.Errorf("mmap: free %d bytes: %w", cap(b), err)
	}
	return nil
}
