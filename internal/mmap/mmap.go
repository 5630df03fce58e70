// Package mmap maps files read-only into memory so that checkpoint and
// program readers get zero-copy access to tensor data.
//
// It owns opening, mapping and unmapping files and an fs.FS over a
// directory whose regular files are mapped. It does not know about file
// formats. On platforms without mmap support the file is read into memory.
// Anon hands out anonymous memory in huge pages for large buffers.
package mmap

import (
	"errors"
	"fmt"
	"io"
)

// hugeSize is the size of a huge page (x86-64 and arm64 with 4 KiB base pages).
const hugeSize = 2 << 20

// ErrClosed is returned by reads on a File after Close.
var ErrClosed = errors.New("mmap: file already closed")

// File is a read-only view of a whole file.
// Bytes returns the mapped memory; it is valid until Close.
type File struct {
	data   []byte // mapped (or, without mmap, read) contents; nil for an empty file
	unmap  func([]byte) error
	closed bool

	huge     int64 // bytes mapped with huge pages
	recached bool  // Open dropped the file's small cached pages and read it again
}

// HugeBytes returns how many bytes of the file are mapped with huge (2 MiB)
// pages, as the kernel reported right after mapping (0 where unknown).
func (f *File) HugeBytes() int64 { return f.huge }

// Recached reports whether opening the file dropped its page cache and read it
// again to get huge pages (see Options.HugePages).
func (f *File) Recached() bool { return f.recached }

// Bytes returns the file contents. The slice must not be written to and must
// not be used after Close.
func (f *File) Bytes() []byte { return f.data }

// Size returns the file size in bytes.
func (f *File) Size() int64 { return int64(len(f.data)) }

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, ErrClosed
	}
	if off < 0 {
		return 0, fmt.Errorf("mmap: negative offset %d", off)
	}
	if off >= int64(len(f.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Close releases the mapping. It is safe to call more than once.
func (f *File) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	data := f.data
	f.data = nil
	if f.unmap != nil && data != nil {
		if err := f.unmap(data); err != nil {
			return fmt.Errorf("mmap: unmap: %w", err)
		}
	}
	return nil
}
