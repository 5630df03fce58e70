//go:build unix

package mmap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Open maps the file at path read-only.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("mmap: %s is not a regular file", path)
	}
	size := st.Size()
	if size == 0 {
		return &File{}, nil // mmap of length 0 fails; an empty file needs no mapping.
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("mmap: %s is too large (%d bytes) for this platform", path, size)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap: map %s: %w", path, err)
	}
	return &File{data: data, unmap: unix.Munmap}, nil
}

// Load reads the file at path into private anonymous memory advised for transparent huge
// pages, then makes it read-only. It costs a copy at load time, but the large pages spare
// the TLB misses that 4 KiB file-mapping pages cost a memory-bound decode.
func Load(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("mmap: %s is not a regular file", path)
	}
	size := st.Size()
	if size == 0 {
		return &File{}, nil
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("mmap: %s is too large (%d bytes) for this platform", path, size)
	}
	data, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap: allocate %d bytes for %s: %w", size, path, err)
	}
	_ = unix.Madvise(data, unix.MADV_HUGEPAGE) // advisory: without THP this is plain memory
	if err := readParallel(fd, data); err != nil {
		unix.Munmap(data)
		return nil, fmt.Errorf("mmap: read %s: %w", path, err)
	}
	if err := unix.Mprotect(data, unix.PROT_READ); err != nil {
		unix.Munmap(data)
		return nil, fmt.Errorf("mmap: protect %s: %w", path, err)
	}
	return &File{data: data, unmap: unix.Munmap}, nil
}

// readParallel fills data from f with positioned reads of 32 MiB chunks on two goroutines
// (faulting in fresh huge pages is a good part of the cost, and it parallelizes).
func readParallel(f *os.File, data []byte) error {
	const chunk = 32 << 20
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs [2]error
	)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				off := next.Add(chunk) - chunk
				if off >= int64(len(data)) {
					return
				}
				end := min(off+chunk, int64(len(data)))
				if _, err := f.ReadAt(data[off:end], off); err != nil && !(err == io.EOF && end == int64(len(data))) {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs[:]...)
}
