// Package align allocates byte buffers aligned for SIMD loads and gives zero-copy typed
// views of them (AsF32, AsU16, AsI64).
package align

import "unsafe"

// Boundary is the alignment of every buffer Bytes returns.
const Boundary = 64

// Bytes returns a zeroed Go-heap buffer of n bytes starting on a 64-byte boundary
// (an empty, non-nil slice for n == 0).
func Bytes(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	raw := make([]byte, n+Boundary-1)
	off := (Boundary - int(uintptr(unsafe.Pointer(&raw[0]))%Boundary)) % Boundary
	return raw[off : off+n : off+n]
}
