package ort

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pageOut asks the kernel to reclaim the whole pages of b now (MADV_PAGEOUT): mapped file
// pages that no other process maps leave this process's resident set and are read back
// from the file if touched again; anonymous memory (a program read into memory) is left as
// it is without swap. The contents never change. Used on program tensors the executor
// read once to convert.
func pageOut(b []byte) {
	page := uintptr(unix.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo, hi := (start+page-1)&^(page-1), (start+uintptr(len(b)))&^(page-1)
	if hi <= lo {
		return
	}
	inner := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), lo-start)), hi-lo)
	_ = unix.Madvise(inner, unix.MADV_PAGEOUT)
}
