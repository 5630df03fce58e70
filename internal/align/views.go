package align

import "unsafe"

// The typed views below reinterpret a byte buffer in place (no copy) as the
// little-endian elements a program's tensors hold. The buffer must be aligned
// to the element size (every buffer Bytes returns is); trailing bytes that do
// not fill an element are left out. An empty buffer gives a nil view.

// AsF32 views b as float32 values (len(b)/4 of them).
func AsF32(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// AsU16 views b as uint16 values (len(b)/2 of them): the bits of f16 and bf16 elements.
func AsU16(b []byte) []uint16 {
	if len(b) < 2 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

// AsI64 views b as int64 values (len(b)/8 of them).
func AsI64(b []byte) []int64 {
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(&b[0])), len(b)/8)
}
