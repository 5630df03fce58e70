//go:build !linux

package ort

// pageOut is a no-op where MADV_PAGEOUT does not exist.
func pageOut([]byte) {}
