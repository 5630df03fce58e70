package align

import (
	"testing"
	"unsafe"
)

func TestBytesAreAlignedZeroedAndExactlySized(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 4097} {
		b := Bytes(n)
		if len(b) != n || cap(b) != n || b == nil {
			t.Fatalf("Bytes(%d): len %d cap %d nil %v", n, len(b), cap(b), b == nil)
		}
		if n > 0 && uintptr(unsafe.Pointer(&b[0]))%Boundary != 0 {
			t.Errorf("Bytes(%d) is not %d-byte aligned", n, Boundary)
		}
		for _, x := range b {
			if x != 0 {
				t.Fatalf("Bytes(%d) is not zeroed", n)
			}
		}
	}
}
