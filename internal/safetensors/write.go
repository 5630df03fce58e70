package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// WriteTensor is a tensor to be written by Write.
type WriteTensor struct {
	Name  string
	DType DType
	Shape []int
	// Data holds the little-endian bytes, exactly NumElements × DType.Size().
	Data []byte
	// WriteData, used when Data is nil, streams exactly that many bytes to w
	// (so large files need not be held in memory).
	WriteData func(w io.Writer) error
}

func (t WriteTensor) length() (int64, error) {
	if t.Name == "" || t.Name == "__metadata__" {
		return 0, fmt.Errorf("safetensors: write: invalid tensor name %q", t.Name)
	}
	if t.DType.Size() == 0 {
		return 0, fmt.Errorf("safetensors: write tensor %q: invalid dtype", t.Name)
	}
	n := int64(t.DType.Size())
	for _, d := range t.Shape {
		if d < 0 {
			return 0, fmt.Errorf("safetensors: write tensor %q: negative dimension in shape %v", t.Name, t.Shape)
		}
		n *= int64(d)
	}
	if t.Data == nil && t.WriteData == nil && n > 0 {
		return 0, fmt.Errorf("safetensors: write tensor %q: neither Data nor WriteData is set", t.Name)
	}
	if t.Data != nil && int64(len(t.Data)) != n {
		return 0, fmt.Errorf("safetensors: write tensor %q: %s%v needs %d bytes, Data has %d", t.Name, t.DType, t.Shape, n, len(t.Data))
	}
	return n, nil
}

// Write writes a safetensors file the way Hugging Face's implementation does:
// "__metadata__" first (omitted when empty), then the tensors sorted by name,
// their data laid out contiguously in that order, the header padded with
// spaces so that data starts at a multiple of 8 bytes.
func Write(w io.Writer, tensors []WriteTensor, metadata map[string]string) error {
	sorted := append([]WriteTensor(nil), tensors...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].Name < sorted[b].Name })
	lengths := make([]int64, len(sorted))
	for i, t := range sorted {
		if i > 0 && sorted[i-1].Name == t.Name {
			return fmt.Errorf("safetensors: write: tensor %q given twice", t.Name)
		}
		n, err := t.length()
		if err != nil {
			return err
		}
		lengths[i] = n
	}
	header, err := encodeHeader(sorted, lengths, metadata)
	if err != nil {
		return err
	}
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(header)))
	if _, err := w.Write(prefix[:]); err != nil {
		return err
	}
	if _, err := w.Write(header); err != nil {
		return err
	}
	for i, t := range sorted {
		if t.Data != nil || t.WriteData == nil {
			if _, err := w.Write(t.Data); err != nil {
				return err
			}
			continue
		}
		cw := &countingWriter{w: w}
		if err := t.WriteData(cw); err != nil {
			return fmt.Errorf("safetensors: write tensor %q: %w", t.Name, err)
		}
		if cw.n != lengths[i] {
			return fmt.Errorf("safetensors: write tensor %q: WriteData wrote %d bytes, want %d", t.Name, cw.n, lengths[i])
		}
	}
	return nil
}

// HeaderSize returns the number of bytes Write puts before the tensor data
// (the 8-byte prefix plus the padded header).
func HeaderSize(tensors []WriteTensor, metadata map[string]string) (int64, error) {
	sorted := append([]WriteTensor(nil), tensors...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].Name < sorted[b].Name })
	lengths := make([]int64, len(sorted))
	for i, t := range sorted {
		n, err := t.length()
		if err != nil {
			return 0, err
		}
		lengths[i] = n
	}
	h, err := encodeHeader(sorted, lengths, metadata)
	return 8 + int64(len(h)), err
}

func encodeHeader(sorted []WriteTensor, lengths []int64, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(&b, k)
			b.WriteByte(':')
			writeJSONString(&b, metadata[k])
		}
		b.WriteByte('}')
	}
	var off int64
	for i, t := range sorted {
		if i > 0 || len(metadata) > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, t.Name)
		b.WriteString(`:{"dtype":"`)
		b.WriteString(t.DType.String())
		b.WriteString(`","shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		b.WriteString(`],"data_offsets":[`)
		b.WriteString(strconv.FormatInt(off, 10))
		b.WriteByte(',')
		off += lengths[i]
		b.WriteString(strconv.FormatInt(off, 10))
		b.WriteString("]}")
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	return b.Bytes(), nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // encoding a string cannot fail
	b.Truncate(b.Len() - 1) // drop Encode's newline
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
