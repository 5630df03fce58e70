package mmap

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// noBlock: Windows has no FIFOs in the file system to wait on.
const noBlock = 0

// Open maps the file at path read-only (see OpenWith).
func Open(path string) (*File, error) { return OpenWith(path, Options{HugePages: true}) }

// Options tune how OpenWith maps a file. HugePages has no effect on Windows: file mappings
// there are made of small pages (large pages need SeLockMemoryPrivilege and do not back
// file views).
type Options struct{ HugePages bool }

// RecacheMin is the smallest file OpenWith would re-read into huge pages (Linux only).
const RecacheMin = 64 << 20

// OpenWith maps the file at path read-only: a file mapping object over the whole file
// (CreateFileMapping) and one view of it (MapViewOfFile). The view keeps the mapping object
// and the file open after their handles are closed, until Close unmaps it; while it is
// mapped, Windows refuses to delete or truncate the file.
func OpenWith(path string, _ Options) (*File, error) {
	fd, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	if size == 0 {
		return &File{}, nil // a mapping of length 0 fails; an empty file needs none.
	}
	defer fd.Close()
	h, err := windows.CreateFileMapping(windows.Handle(fd.Fd()), nil, windows.PAGE_READONLY, uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, fmt.Errorf("mmap: map %s: CreateFileMapping: %w", path, err)
	}
	defer windows.CloseHandle(h)
	addr, err := windows.MapViewOfFile(h, windows.FILE_MAP_READ, 0, 0, uintptr(size))
	if err != nil {
		return nil, fmt.Errorf("mmap: map %s: MapViewOfFile: %w", path, err)
	}
	return &File{data: unsafe.Slice((*byte)(ptr(addr)), size), unmap: unmapView}, nil
}

func unmapView(b []byte) error {
	return windows.UnmapViewOfFile(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// ptr turns an address the system returned (memory Go does not manage) into a pointer.
func ptr(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }

// Load reads the file at path into memory outside the Go heap (see Anon). It costs a copy at
// load time; the memory is then the process's own, not the page cache's.
func Load(path string) (*File, error) {
	fd, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	if size == 0 {
		return &File{}, nil
	}
	defer fd.Close()
	data, err := Anon(int(size))
	if err != nil {
		return nil, fmt.Errorf("%w (for %s)", err, path)
	}
	if err := readParallel(fd, data); err != nil {
		FreeAnon(data)
		return nil, fmt.Errorf("mmap: read %s: %w", path, err)
	}
	var old uint32
	if err := windows.VirtualProtect(uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), windows.PAGE_READONLY, &old); err != nil {
		FreeAnon(data)
		return nil, fmt.Errorf("mmap: protect %s: %w", path, err)
	}
	return &File{data: data, unmap: FreeAnon}, nil
}

func hugeMapped([]byte) (int64, bool) { return 0, false }
