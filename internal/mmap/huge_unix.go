//go:build unix && !linux

package mmap

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of fd read-only (huge pages are Linux-only here).
func mapFile(fd *os.File, size int, huge bool) ([]byte, error) {
	return unix.Mmap(int(fd.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
}

func adviseHuge([]byte) {}

func hugeAligned([]byte) bool { return false }

func dropCache(*os.File, int64) {}

func hugeMapped([]byte) (int64, bool) { return 0, false }

func fileHugeInUse() bool { return false }
