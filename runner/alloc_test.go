package runner

import (
	"testing"
	"unsafe"
)

// TestPageAllocatorMapsLargeBuffers: large buffers are mapped (2 MiB aligned)
// and unmapped on Free, small ones come from the heap; all are zeroed, exactly
// sized and 64-byte aligned.
func TestPageAllocatorMapsLargeBuffers(t *testing.T) {
	var a PageAllocator
	var bufs [][]byte
	for _, n := range []int{0, 1, 4096, pageAllocMin - 1, pageAllocMin, 3*pageAllocMin + 100} {
		b, err := a.Alloc(n)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		if len(b) != n {
			t.Fatalf("Alloc(%d): %d bytes", n, len(b))
		}
		if n == 0 {
			continue
		}
		p := uintptr(unsafe.Pointer(&b[0]))
		if p%64 != 0 {
			t.Fatalf("Alloc(%d) at %#x: not 64-byte aligned", n, p)
		}
		if _, mapped := a.mapped[&b[0]]; mapped != (n >= pageAllocMin) {
			t.Fatalf("Alloc(%d): mapped %v", n, mapped)
		}
		if n >= pageAllocMin && p%(2<<20) != 0 {
			t.Fatalf("Alloc(%d) at %#x: not 2 MiB aligned", n, p)
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("Alloc(%d): byte %d is %d", n, i, b[i])
			}
		}
		b[0], b[n-1] = 1, 2
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		a.Free(b)
	}
	if len(a.mapped) != 0 {
		t.Fatalf("%d mapped buffers left after Free", len(a.mapped))
	}
	a.Free(nil)
}
