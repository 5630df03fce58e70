package mmap

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Lock keeps the whole mapping resident (VirtualLock): its pages are read in now and stay
// in the process's working set while the file is open. Windows locks no more than the
// working set's minimum, so Lock raises the minimum (and maximum) by the file's size first;
// on failure nothing is locked and the mapping works as before. Close (unmapping) unlocks;
// the raised working-set minimum stays for the life of the process.
func (f *File) Lock() error {
	if f.closed {
		return ErrClosed
	}
	if len(f.data) == 0 || f.unmap == nil {
		return nil // empty, or not a mapping
	}
	n := uintptr(len(f.data))
	proc := windows.CurrentProcess()
	var lo, hi uintptr
	var flags uint32
	windows.GetProcessWorkingSetSizeEx(proc, &lo, &hi, &flags)
	if err := windows.SetProcessWorkingSetSizeEx(proc, lo+n, hi+n, flags); err != nil {
		return fmt.Errorf("mmap: lock %d bytes in memory: raise the working set: %w", n, err)
	}
	if err := windows.VirtualLock(uintptr(unsafe.Pointer(&f.data[0])), n); err != nil {
		_ = windows.SetProcessWorkingSetSizeEx(proc, lo, hi, flags)
		return fmt.Errorf("mmap: lock %d bytes in memory: %w", n, err)
	}
	return nil
}
