//go:build !unix

package mmap

import (
	"fmt"
	"os"
)

// Open reads the file at path into memory (this platform has no mmap support here).
func Open(path string) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("mmap: %s is not a regular file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return &File{data: data}, nil
}

// Options tune OpenWith (no effect on this platform).
type Options struct{ HugePages bool }

// OpenWith is Open on this platform.
func OpenWith(path string, _ Options) (*File, error) { return Open(path) }

// Load reads the file at path into memory, like Open on this platform.
func Load(path string) (*File, error) { return Open(path) }
