package ort

import (
	"os"
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

// spill is a file the converted initializers are written to, then read through a mapping:
// an unlinked temporary file on a disk-backed file system, so that the copy is page cache
// the kernel may write back and evict rather than anonymous memory, and the process maps
// only the pages ONNX Runtime is reading (dropPages while sessions are created).
type spill struct {
	f   *os.File
	off int64
}

// spillAlign aligns each initializer in the file (and so in the mapping).
const spillAlign = 64

// newSpill creates the file in os.TempDir(), or returns nil where that directory is in
// memory (tmpfs, ramfs: a file there is no more evictable than the heap) or not writable.
func newSpill() *spill {
	dir := os.TempDir()
	if !onDisk(dir) {
		return nil
	}
	f, err := os.CreateTemp(dir, "hfstatic-ort-*")
	if err != nil {
		return nil
	}
	if os.Remove(f.Name()) != nil {
		f.Close()
		return nil
	}
	return &spill{f: f}
}

// add writes b and returns its offset in the file.
func (s *spill) add(b []byte) (int64, error) {
	off := (s.off + spillAlign - 1) &^ (spillAlign - 1)
	if _, err := s.f.WriteAt(b, off); err != nil {
		return 0, err
	}
	s.off = off + int64(len(b))
	return off, nil
}

// mapped maps the whole file read-only and closes it (the mapping keeps it).
func (s *spill) mapped() ([]byte, error) {
	defer s.f.Close()
	if s.off == 0 {
		return nil, nil
	}
	return unix.Mmap(int(s.f.Fd()), 0, int(s.off), unix.PROT_READ, unix.MAP_SHARED)
}

// discard gives the file up (before mapped).
func (s *spill) discard() { s.f.Close() }

// dropPages removes b's pages (a spill mapping) from the process (MADV_DONTNEED): they
// stay in the page cache and come back on the next read.
func dropPages(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_DONTNEED)
	}
}

// unmap releases a spill mapping.
func unmap(b []byte) {
	if len(b) > 0 {
		_ = unix.Munmap(b)
	}
}

// onDisk says whether dir is on a file system whose pages the kernel can write back and
// evict (not tmpfs or ramfs).
func onDisk(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	t := uint32(st.Type) // int32 on 32-bit systems, where RAMFS_MAGIC overflows it
	return t != unix.TMPFS_MAGIC && t != unix.RAMFS_MAGIC
}
