// Package programtest helps tests build damaged or altered program files.
package programtest

import (
	"bytes"
	"encoding/binary"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/program"
)

// Manifest returns the manifest JSON of a program file (which must have a valid trailer).
func Manifest(data []byte) []byte {
	tr := data[len(data)-64:]
	moff := binary.LittleEndian.Uint64(tr[8:])
	mlen := binary.LittleEndian.Uint64(tr[16:])
	return data[moff : moff+mlen]
}

// ReplaceManifest rebuilds a program file around another manifest with valid checksums,
// so that a test reaches manifest validation and the contract check. The result is
// 64-byte aligned.
func ReplaceManifest(data, manifest []byte) []byte {
	tr := data[len(data)-64:]
	moff := binary.LittleEndian.Uint64(tr[8:])
	out := append(bytes.Clone(data[:moff]), manifest...)
	t := make([]byte, 64)
	copy(t, tr[:8])
	binary.LittleEndian.PutUint64(t[8:], moff)
	binary.LittleEndian.PutUint64(t[16:], uint64(len(manifest)))
	binary.LittleEndian.PutUint32(t[24:], program.Checksum(manifest))
	binary.LittleEndian.PutUint64(t[28:], uint64(len(out)+64))
	return Aligned(append(out, t...))
}

// Aligned copies b into 64-byte aligned memory.
func Aligned(b []byte) []byte {
	out := align.Bytes(len(b))
	copy(out, b)
	return out
}
