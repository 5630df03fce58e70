// Package safetensors reads and writes the safetensors tensor file format
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and data offsets,
// then the raw little-endian tensor data.
//
// It owns header parsing and validation, zero-copy access to tensor bytes
// (when the reader exposes Bytes(), as mmap.File does), conversion of float
// tensors to float32, and writing files the way Hugging Face does. It knows
// nothing about models, checkpoint folders or tensor naming conventions.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
)

// MaxHeaderSize is the largest JSON header accepted, in bytes (the limit of
// the reference implementation).
const MaxHeaderSize = 100_000_000

// Tensor describes one tensor of a File.
type Tensor struct {
	Name   string
	DType  DType
	Shape  []int // row-major; empty for a scalar
	Offset int64 // absolute byte offset of the tensor's data in the file
	Length int64 // data size in bytes = NumElements() * DType.Size()
}

// NumElements returns the product of the shape (1 for a scalar).
func (t Tensor) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// File is a parsed safetensors file. Its methods read tensor data through
// the io.ReaderAt it was opened with, which must stay open while in use.
type File struct {
	Metadata map[string]string // the "__metadata__" entries; nil when absent

	r       io.ReaderAt
	size    int64
	mem     []byte // the whole file when r exposes it (zero-copy); else nil
	tensors []Tensor
	byName  map[string]int // name → index in tensors
}

// Read parses and validates the header of the safetensors file of the given
// size readable through r. If r implements Bytes() []byte (as mmap.File
// does), Raw returns slices of that memory without copying.
//
// Errors are *FormatError; a file shorter than its header says also
// matches errors.Is(err, ErrTruncated).
func Read(r io.ReaderAt, size int64) (*File, error) {
	if size < 8 {
		return nil, truncatedErr("", "file is %d bytes, shorter than the 8-byte header length", size)
	}
	var prefix [8]byte
	if err := readFull(r, prefix[:], 0); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(prefix[:])
	if n > MaxHeaderSize {
		return nil, formatErr("", "header length %d exceeds the limit of %d bytes (is this a safetensors file?)", n, MaxHeaderSize)
	}
	if int64(n) > size-8 {
		return nil, truncatedErr("", "header length %d exceeds the %d bytes after the length prefix", n, size-8)
	}
	header := make([]byte, n)
	if err := readFull(r, header, 8); err != nil {
		return nil, err
	}
	f := &File{r: r, size: size}
	if m, ok := r.(interface{ Bytes() []byte }); ok {
		if b := m.Bytes(); int64(len(b)) >= size {
			f.mem = b[:size:size]
		}
	}
	if err := f.parseHeader(header, 8+int64(n)); err != nil {
		return nil, err
	}
	return f, nil
}

// FromBytes parses a safetensors file held in memory. Raw returns slices of b.
func FromBytes(b []byte) (*File, error) {
	return Read(byteReader(b), int64(len(b)))
}

// byteReader is an io.ReaderAt over a byte slice that exposes the slice.
type byteReader []byte

func (b byteReader) Bytes() []byte { return b }

func (b byteReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return truncatedErr("", "read %d of %d bytes at offset %d", n, len(p), off)
	}
	return fmt.Errorf("safetensors: read %d bytes at offset %d: %w", len(p), off, err)
}

// headerEntry is one tensor entry of the JSON header, before validation.
type headerEntry struct {
	DType       *string   `json:"dtype"`
	Shape       *[]int64  `json:"shape"`
	DataOffsets *[]uint64 `json:"data_offsets"`
}

func (f *File) parseHeader(header []byte, dataStart int64) error {
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return formatErr("", "header is not a JSON object")
	}
	f.byName = make(map[string]int)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return formatErr("", "malformed JSON: %v", err)
		}
		name, ok := tok.(string)
		if !ok {
			return formatErr("", "malformed JSON: expected a key, got %v", tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return formatErr(name, "malformed JSON value: %v", err)
		}
		if name == "__metadata__" {
			if f.Metadata != nil {
				return formatErr("", "__metadata__ appears twice")
			}
			if err := json.Unmarshal(raw, &f.Metadata); err != nil || f.Metadata == nil {
				return formatErr("", "__metadata__ must be an object mapping strings to strings")
			}
			continue
		}
		if _, dup := f.byName[name]; dup {
			return formatErr(name, "appears twice in the header")
		}
		t, err := parseEntry(name, raw, dataStart)
		if err != nil {
			return err
		}
		f.byName[name] = len(f.tensors)
		f.tensors = append(f.tensors, t)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return formatErr("", "malformed JSON: header object is not closed")
	}
	if _, err := dec.Token(); err != io.EOF {
		return formatErr("", "unexpected data after the header object")
	}
	return f.checkLayout(dataStart)
}

func parseEntry(name string, raw json.RawMessage, dataStart int64) (Tensor, error) {
	if name == "" {
		return Tensor{}, formatErr("", "a tensor has an empty name")
	}
	var e headerEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return Tensor{}, formatErr(name, "invalid entry: %v", err)
	}
	switch {
	case e.DType == nil:
		return Tensor{}, formatErr(name, "missing dtype")
	case e.Shape == nil:
		return Tensor{}, formatErr(name, "missing shape")
	case e.DataOffsets == nil:
		return Tensor{}, formatErr(name, "missing data_offsets")
	}
	dt, ok := ParseDType(*e.DType)
	if !ok {
		return Tensor{}, formatErr(name, "unknown dtype %q", *e.DType)
	}
	t := Tensor{Name: name, DType: dt, Shape: make([]int, len(*e.Shape))}
	elems := uint64(1)
	for i, d := range *e.Shape {
		if d < 0 || int64(int(d)) != d {
			return Tensor{}, formatErr(name, "shape dimension %d is %d", i, d)
		}
		t.Shape[i] = int(d)
		hi, lo := bits.Mul64(elems, uint64(d))
		if hi != 0 || lo > math.MaxInt64/8 {
			return Tensor{}, formatErr(name, "shape %v has too many elements", *e.Shape)
		}
		elems = lo
	}
	offs := *e.DataOffsets
	if len(offs) != 2 {
		return Tensor{}, formatErr(name, "data_offsets has %d entries, want [begin, end]", len(offs))
	}
	begin, end := offs[0], offs[1]
	if begin > end {
		return Tensor{}, formatErr(name, "data_offsets [%d, %d] end before they begin", begin, end)
	}
	want := elems * uint64(dt.Size())
	if end-begin != want {
		return Tensor{}, formatErr(name, "data_offsets [%d, %d] span %d bytes, but %s%v needs %d", begin, end, end-begin, dt, t.Shape, want)
	}
	if end > math.MaxInt64-uint64(dataStart) {
		return Tensor{}, truncatedErr(name, "data_offsets [%d, %d] lie beyond any file", begin, end)
	}
	t.Offset = dataStart + int64(begin)
	t.Length = int64(want)
	return t, nil
}

// checkLayout verifies that tensor data lies inside the file and that no two
// tensors share bytes, then sorts the tensors by name.
func (f *File) checkLayout(dataStart int64) error {
	byOffset := make([]int, len(f.tensors))
	for i := range byOffset {
		byOffset[i] = i
	}
	sort.Slice(byOffset, func(a, b int) bool {
		ta, tb := f.tensors[byOffset[a]], f.tensors[byOffset[b]]
		if ta.Offset != tb.Offset {
			return ta.Offset < tb.Offset
		}
		return ta.Length < tb.Length
	})
	prevEnd, prevName := dataStart, ""
	for _, i := range byOffset {
		t := f.tensors[i]
		if t.Offset < prevEnd {
			return formatErr(t.Name, "data [%d, %d) overlaps tensor %q", t.Offset-dataStart, t.Offset-dataStart+t.Length, prevName)
		}
		if t.Offset+t.Length > f.size {
			return truncatedErr(t.Name, "data ends at byte %d but the file has %d bytes", t.Offset+t.Length, f.size)
		}
		if t.Length > 0 {
			prevEnd, prevName = t.Offset+t.Length, t.Name
		}
	}
	sort.Slice(f.tensors, func(a, b int) bool { return f.tensors[a].Name < f.tensors[b].Name })
	for i, t := range f.tensors {
		f.byName[t.Name] = i
	}
	return nil
}

// Tensors returns the tensors sorted by name. The slice must not be modified.
func (f *File) Tensors() []Tensor { return f.tensors }

// Lookup returns the tensor called name.
func (f *File) Lookup(name string) (Tensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return Tensor{}, false
	}
	return f.tensors[i], true
}

// Size returns the file size given to Read.
func (f *File) Size() int64 { return f.size }

// Raw returns the little-endian bytes of t, which must come from f. When the
// file's reader exposes its memory the result aliases it and must not be
// modified; otherwise it is a fresh copy.
func (f *File) Raw(t Tensor) ([]byte, error) {
	if err := f.owns(t); err != nil {
		return nil, err
	}
	if f.mem != nil {
		return f.mem[t.Offset : t.Offset+t.Length : t.Offset+t.Length], nil
	}
	buf := make([]byte, t.Length)
	if err := readFull(f.r, buf, t.Offset); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return buf, nil
}

// ZeroCopy reports whether Raw returns slices of the underlying memory.
func (f *File) ZeroCopy() bool { return f.mem != nil }

func (f *File) owns(t Tensor) error {
	got, ok := f.Lookup(t.Name)
	if !ok || got.Offset != t.Offset || got.Length != t.Length {
		return fmt.Errorf("safetensors: tensor %q does not belong to this file", t.Name)
	}
	return nil
}
