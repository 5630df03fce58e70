//go:build !linux

package ort

// pageOut is a no-op where MADV_PAGEOUT does not exist.
func pageOut([]byte) {}

// spill keeps converted initializers in a file on Linux only; elsewhere they stay in memory.
type spill struct{}

func newSpill() *spill                     { return nil }
func (s *spill) add([]byte) (int64, error) { panic("unreachable") }
func (s *spill) mapped() ([]byte, error)   { panic("unreachable") }
func (s *spill) discard()                  {}
func dropPages([]byte)                     {}
func unmap([]byte)                         {}

func onDisk(string) bool { return false }
