package mmap

import (
	"sync"
	"testing"
	"unsafe"
)

// TestAnonIsZeroedWritableAndAligned allocates buffers small and large from
// several goroutines, writes every byte and frees them.
func TestAnonIsZeroedWritableAndAligned(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range []int{1, 4095, 4096, 5000, hugeSize, 3*hugeSize + 17} {
				b, err := Anon(n + g)
				if err != nil {
					t.Error(err)
					return
				}
				if len(b) != n+g || cap(b) < len(b) {
					t.Errorf("Anon(%d): len %d cap %d", n+g, len(b), cap(b))
				}
				if a := uintptr(unsafe.Pointer(&b[0])); a%64 != 0 || (n >= hugeSize && a%hugeSize != 0) {
					t.Errorf("Anon(%d) at %#x: not aligned", n+g, a)
				}
				for i := range b {
					if b[i] != 0 {
						t.Errorf("Anon(%d): byte %d is %d", n+g, i, b[i])
						break
					}
					b[i] = byte(i)
				}
				if err := FreeAnon(b); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if _, err := Anon(0); err == nil {
		t.Fatal("Anon(0) succeeded")
	}
	if err := FreeAnon(nil); err != nil {
		t.Fatalf("FreeAnon(nil): %v", err)
	}
}
