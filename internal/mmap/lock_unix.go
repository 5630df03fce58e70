//go:build unix

package mmap

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Lock keeps the whole mapping resident (mlock): its pages are read in now and
// the kernel will not reclaim them while the file is open, however long they
// sit idle (some kernels page out page cache left untouched for a minute; see
// docs/performance.md).
// It needs RLIMIT_MEMLOCK room for the file or CAP_IPC_LOCK; on failure nothing
// is locked and the mapping works as before. Close unlocks.
func (f *File) Lock() error {
	if f.closed {
		return ErrClosed
	}
	if len(f.data) == 0 || f.unmap == nil {
		return nil // empty, or not a mapping
	}
	if err := unix.Mlock(f.data); err != nil {
		_ = unix.Munlock(f.data) // a failure part way may have locked a prefix
		return fmt.Errorf("mmap: lock %d bytes in memory: %w", len(f.data), err)
	}
	return nil
}
