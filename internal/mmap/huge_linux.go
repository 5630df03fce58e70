package mmap

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of fd read-only and populates the page tables. With
// huge, the mapping is advised for huge pages first, so that pages read from
// disk on the way come in 2 MiB folios that are mapped whole.
func mapFile(fd *os.File, size int, huge bool) ([]byte, error) {
	if !huge {
		return unix.Mmap(int(fd.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	adviseHuge(data)
	if unix.Madvise(data, unix.MADV_POPULATE_READ) != nil {
		// Before Linux 5.14: map again, populated at mmap time.
		unix.Munmap(data)
		return unix.Mmap(int(fd.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	}
	return data, nil
}

func adviseHuge(data []byte) { _ = unix.Madvise(data, unix.MADV_HUGEPAGE) }

func hugeAligned(data []byte) bool { return uintptr(unsafe.Pointer(&data[0]))%hugeSize == 0 }

// dropCache drops the clean, unmapped page-cache pages of fd's first size
// bytes. It is advice: where it fails, the pages stay.
func dropCache(fd *os.File, size int64) { _ = unix.Fadvise(int(fd.Fd()), 0, size, unix.FADV_DONTNEED) }

// fileHugeInUse reports whether the page cache holds any file folios of 2 MiB
// (/proc/meminfo FileHugePages): evidence that this kernel and a file system
// here cache files in huge folios, without which re-reading a file for them
// would only cost a read from disk.
func fileHugeInUse() bool {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if kb, ok := kbField(sc.Bytes(), "FileHugePages:"); ok {
			return kb > 0
		}
	}
	return false
}

// hugeMapped returns the bytes of data mapped with 2 MiB pages, from
// /proc/self/smaps; known is false when that cannot be read.
func hugeMapped(data []byte) (n int64, known bool) {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, false
	}
	return smapsHuge(b, uint64(uintptr(unsafe.Pointer(&data[0])))), true
}

// smapsHuge sums the FilePmdMapped and AnonHugePages fields of the mapping
// that starts at addr in an smaps listing.
func smapsHuge(smaps []byte, addr uint64) int64 {
	var total int64
	in := false
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Bytes()
		if dash := bytes.IndexByte(line, '-'); dash > 0 && bytes.IndexByte(line[:dash], ' ') < 0 && bytes.IndexByte(line[:dash], ':') < 0 {
			start, err := strconv.ParseUint(string(line[:dash]), 16, 64)
			in = err == nil && start == addr
			continue
		}
		if !in {
			continue
		}
		for _, field := range []string{"FilePmdMapped:", "AnonHugePages:"} {
			if kb, ok := kbField(line, field); ok {
				total += kb << 10
			}
		}
	}
	return total
}

// kbField parses a /proc line "name   N kB" for the given name (with its colon).
func kbField(line []byte, name string) (int64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(name))
	if !ok {
		return 0, false
	}
	kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
	return kb, err == nil
}
