package safetensors

import (
	"bytes"
	"errors"
	"testing"
)

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	_ = Write(&buf, []WriteTensor{
		{Name: "a", DType: F32, Shape: []int{2, 2}, Data: f32Bytes(1, 2, 3, 4)},
		{Name: "b", DType: BF16, Shape: []int{1}, Data: []byte{0x80, 0x3f}},
	}, map[string]string{"format": "pt"})
	f.Add(buf.Bytes())
	f.Add(fileWithHeader(`{"a":{"dtype":"F16","shape":[],"data_offsets":[0,2]}}`, 2))
	f.Add(fileWithHeader("{}", 0))
	h := realFile(f)
	f.Add(h[:8+4856]) // real header without its data: truncated
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := FromBytes(data)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a *FormatError: %v", err)
			}
			return
		}
		for _, tt := range file.Tensors() {
			if tt.Offset < 8 || tt.Offset+tt.Length > int64(len(data)) {
				t.Fatalf("tensor %q [%d,+%d) outside a %d-byte file", tt.Name, tt.Offset, tt.Length, len(data))
			}
			if tt.Length != tt.NumElements()*int64(tt.DType.Size()) {
				t.Fatalf("tensor %q: length %d ≠ elements × size", tt.Name, tt.Length)
			}
			raw, err := file.Raw(tt)
			if err != nil || int64(len(raw)) != tt.Length {
				t.Fatalf("Raw(%q): %d bytes, err %v", tt.Name, len(raw), err)
			}
			if tt.DType == F32 || tt.DType == F16 || tt.DType == BF16 {
				if _, err := file.Float32(tt); err != nil {
					t.Fatalf("Float32(%q): %v", tt.Name, err)
				}
			}
		}
	})
}
