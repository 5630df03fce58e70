//go:build unix

package mmap

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// noBlock keeps opening a FIFO from waiting for a writer (see OpenRegular).
const noBlock = unix.O_NONBLOCK

// Open maps the file at path read-only, in huge pages where the kernel can (see OpenWith).
func Open(path string) (*File, error) { return OpenWith(path, Options{HugePages: true}) }

// Options tune how OpenWith maps a file.
type Options struct {
	// HugePages maps the file's page cache with 2 MiB pages where the kernel can:
	// the mapping is advised for huge pages before it is populated, so pages read
	// from disk come in 2 MiB folios, and when less than half of a large file
	// (at least RecacheMin bytes) is cached in such folios, its cached pages are
	// dropped and read again (once per Open; only where /proc shows page sizes
	// and the page cache holds some 2 MiB file folios). One 2 MiB page spares a memory-bound
	// pass over the weights 511 TLB misses, and populating a mapping of 2 MiB
	// pages takes a millisecond where 4 KiB pages take a good part of a second
	// per GB on the first pass. Without support (other systems, other file
	// systems) the mapping is the plain one.
	HugePages bool
}

// RecacheMin is the smallest file OpenWith re-reads into huge pages.
const RecacheMin = 64 << 20

// OpenWith maps the file at path read-only.
func OpenWith(path string, opts Options) (*File, error) {
	fd, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	if size == 0 {
		return &File{}, nil // mmap of length 0 fails; an empty file needs no mapping.
	}
	defer fd.Close()
	data, err := mapFile(fd, int(size), opts.HugePages)
	if err != nil {
		return nil, fmt.Errorf("mmap: map %s: %w", path, err)
	}
	f := &File{data: data, unmap: unix.Munmap}
	var known bool
	f.huge, known = hugeMapped(data)
	// Re-read only when the page sizes are known (/proc/self/smaps) and the page
	// cache is seen to hold huge file folios at all: never blindly.
	if !opts.HugePages || !known || size < RecacheMin || 2*f.huge >= size || !hugeAligned(data) || !fileHugeInUse() {
		return f, nil
	}
	// Most of the file is cached in small pages: drop them (the kernel keeps
	// pages that are dirty or mapped elsewhere) and map it again, read afresh.
	unix.Munmap(data)
	f.data = nil
	dropCache(fd, size) // advice: where it fails, the file is mapped again as it is
	if f.data, err = mapFile(fd, int(size), true); err != nil {
		return nil, fmt.Errorf("mmap: map %s: %w", path, err)
	}
	f.huge, _ = hugeMapped(f.data)
	f.recached = true
	return f, nil
}

// Load reads the file at path into private anonymous memory advised for transparent huge
// pages, then makes it read-only. It costs a copy at load time, but the large pages spare
// the TLB misses that 4 KiB file-mapping pages cost a memory-bound decode.
func Load(path string) (*File, error) {
	fd, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	if size == 0 {
		return &File{}, nil
	}
	defer fd.Close()
	data, err := Anon(int(size)) // 2 MiB aligned and advised for huge pages
	if err != nil {
		return nil, fmt.Errorf("%w (for %s)", err, path)
	}
	if err := readParallel(fd, data); err != nil {
		FreeAnon(data)
		return nil, fmt.Errorf("mmap: read %s: %w", path, err)
	}
	if err := unix.Mprotect(data, unix.PROT_READ); err != nil {
		FreeAnon(data)
		return nil, fmt.Errorf("mmap: protect %s: %w", path, err)
	}
	huge, _ := hugeMapped(data)
	return &File{data: data, unmap: FreeAnon, huge: huge}, nil
}
