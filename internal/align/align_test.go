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

func TestViewsShareTheBuffer(t *testing.T) {
	b := Bytes(20)
	f, h, i := AsF32(b), AsU16(b), AsI64(b)
	if len(f) != 5 || len(h) != 10 || len(i) != 2 {
		t.Fatalf("views of 20 bytes: %d f32, %d u16, %d i64; want 5, 10, 2", len(f), len(h), len(i))
	}
	f[0] = 1 // 0x3f800000, little-endian
	if h[1] != 0x3f80 || i[0] != 0x3f800000 {
		t.Errorf("after f32[0] = 1: u16[1] = %#x, i64[0] = %#x; want 0x3f80, 0x3f800000", h[1], i[0])
	}
	for _, n := range []int{0, 1} {
		if AsF32(Bytes(n)) != nil || AsU16(Bytes(n)) != nil || AsI64(Bytes(n)) != nil {
			t.Errorf("views of %d bytes are not nil", n)
		}
	}
}
