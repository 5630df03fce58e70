//go:build linux || darwin || freebsd || dragonfly

package hub

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openNonblock keeps an open of a FIFO planted in the cache from blocking; the file is
// then refused as not regular. It changes nothing for regular files.
const openNonblock = syscall.O_NONBLOCK

// linkCount is the number of hard links to the open file.
func linkCount(f *os.File) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	return uint64(st.Nlink), nil
}

// tryLock takes an exclusive flock on f without waiting, as huggingface_hub's filelock
// does on the same lock files; it reports false while another holder has it.
func tryLock(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func unlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// freeSpace is the space on dir's file system available to this user; ok is false where
// it cannot be known.
func freeSpace(dir string) (free int64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)), true
}
