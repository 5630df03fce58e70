//go:build unix

package mmap

import (
	"fmt"
	"os"

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
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: map %s: %w", path, err)
	}
	return &File{data: data, unmap: unix.Munmap}, nil
}
