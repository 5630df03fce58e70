//go:build asmgen

package main

import (
	"bytes"
	"testing"
)

// The encodings GNU as (binutils 2.40) gives for `{vex} vpdpbusd %ymmS, %ymmU,
// %ymmACC` (AT&T order, the same as Go's), covering each register field with
// low and high (REX-extended) registers.
func TestVEXVPDPBUSDMatchesBinutils(t *testing.T) {
	for _, c := range []struct {
		s, u, acc int
		want      []byte
	}{
		{1, 2, 3, []byte{0xc4, 0xe2, 0x6d, 0x50, 0xd9}},
		{15, 0, 0, []byte{0xc4, 0xc2, 0x7d, 0x50, 0xc7}},
		{0, 15, 0, []byte{0xc4, 0xe2, 0x05, 0x50, 0xc0}},
		{0, 0, 15, []byte{0xc4, 0x62, 0x7d, 0x50, 0xf8}},
		{9, 12, 7, []byte{0xc4, 0xc2, 0x1d, 0x50, 0xf9}},
		{6, 5, 14, []byte{0xc4, 0x62, 0x55, 0x50, 0xf6}},
	} {
		if got := vexVPDPBUSDBytes(c.s, c.u, c.acc); !bytes.Equal(got, c.want) {
			t.Errorf("VPDPBUSD Y%d, Y%d, Y%d: % x, want % x", c.s, c.u, c.acc, got, c.want)
		}
	}
}
