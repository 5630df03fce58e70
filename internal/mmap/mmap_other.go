//go:build !unix && !windows

package mmap

// Open reads the file at path into memory (this platform has no mmap support here).
func Open(path string) (*File, error) {
	data, err := ReadRegular(path)
	if err != nil {
		return nil, err
	}
	return &File{data: data}, nil
}

// noBlock: this platform has no FIFOs to wait on.
const noBlock = 0

// Options tune OpenWith (no effect on this platform).
type Options struct{ HugePages bool }

// OpenWith is Open on this platform.
func OpenWith(path string, _ Options) (*File, error) { return Open(path) }

// Load reads the file at path into memory, like Open on this platform.
func Load(path string) (*File, error) { return Open(path) }
