package onnx

import (
	"encoding/binary"
	"testing"
)

// TestTranspose32 checks the tiled transpose on shapes that are and are not multiples of
// its tile.
func TestTranspose32(t *testing.T) {
	for _, sh := range [][2]int{{1, 1}, {3, 130}, {64, 64}, {129, 65}, {200, 7}} {
		rows, cols := sh[0], sh[1]
		data := make([]byte, 4*rows*cols)
		for i := range rows * cols {
			binary.LittleEndian.PutUint32(data[4*i:], uint32(i)*2654435761)
		}
		buf := make([]byte, 4*rows*cols+1) // a reused buffer holds old bytes
		for i := range buf {
			buf[i] = 0xff
		}
		out := transpose32(data, rows, cols, buf[:3])
		if len(out) != len(data) || &out[0] != &buf[0] {
			t.Fatalf("%dx%d: %d bytes, not in the buffer given", rows, cols, len(out))
		}
		for r := range rows {
			for c := range cols {
				if got, want := binary.LittleEndian.Uint32(out[4*(c*rows+r):]), binary.LittleEndian.Uint32(data[4*(r*cols+c):]); got != want {
					t.Fatalf("%dx%d: [%d,%d] = %#x, want %#x", rows, cols, c, r, got, want)
				}
			}
		}
	}
}

func BenchmarkTranspose32(b *testing.B) {
	rows, cols := 3072, 1024
	data := make([]byte, 4*rows*cols)
	buf := make([]byte, len(data)) // reused, as the executor's loader reuses one
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		buf = transpose32(data, rows, cols, buf)
	}
}
