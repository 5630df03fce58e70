//go:build !unix && !windows

package mmap

// Lock is a no-op here: the file was read into ordinary memory.
func (f *File) Lock() error {
	if f.closed {
		return ErrClosed
	}
	return nil
}
