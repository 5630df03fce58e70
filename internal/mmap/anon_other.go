//go:build !unix && !windows

package mmap

import (
	"fmt"

	"github.com/hfstatic/hfstatic/internal/align"
)

// Anon returns size bytes of zeroed memory (the Go heap on this platform).
func Anon(size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("mmap: anonymous mapping of %d bytes", size)
	}
	return align.Bytes(size), nil
}

// FreeAnon releases memory returned by Anon (here: leaves it to the garbage collector).
func FreeAnon([]byte) error { return nil }
