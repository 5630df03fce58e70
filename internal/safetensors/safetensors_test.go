package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fileWithHeader builds a file from a JSON header and dataLen bytes of data.
func fileWithHeader(header string, dataLen int) []byte {
	b := make([]byte, 8, 8+len(header)+dataLen)
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, dataLen)...)
}

func f32Bytes(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func TestWriteThenReadRoundTrips(t *testing.T) {
	in := []WriteTensor{
		{Name: "b.weight", DType: F32, Shape: []int{2, 3}, Data: f32Bytes(1, 2, 3, 4, 5, 6)},
		{Name: "a.bias", DType: BF16, Shape: []int{2}, Data: []byte{0x80, 0x3f, 0x00, 0xc0}}, // 1, -2
		{Name: "c.scalar", DType: I64, Shape: []int{}, Data: make([]byte, 8)},
		{Name: "d.empty", DType: F16, Shape: []int{0, 4}, Data: []byte{}},
		{Name: "e.streamed", DType: U8, Shape: []int{3}, WriteData: func(w io.Writer) error {
			_, err := w.Write([]byte{7, 8, 9})
			return err
		}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, in, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	hs, err := HeaderSize(in, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	if hs%8 != 0 || hs+24+4+8+3 != int64(buf.Len()) {
		t.Errorf("HeaderSize = %d for a %d-byte file; want a multiple of 8 followed by 39 data bytes", hs, buf.Len())
	}
	f, err := FromBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tt := range f.Tensors() {
		names = append(names, tt.Name)
	}
	if diff := cmp.Diff([]string{"a.bias", "b.weight", "c.scalar", "d.empty", "e.streamed"}, names); diff != "" {
		t.Errorf("Tensors() names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"format": "pt"}, f.Metadata); diff != "" {
		t.Errorf("Metadata (-want +got):\n%s", diff)
	}
	w, _ := f.Lookup("b.weight")
	got, err := f.Float32(w)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float32{1, 2, 3, 4, 5, 6}, got); diff != "" {
		t.Errorf("Float32(b.weight) (-want +got):\n%s", diff)
	}
	bias, _ := f.Lookup("a.bias")
	if got, _ := f.Float32(bias); !cmp.Equal(got, []float32{1, -2}) {
		t.Errorf("Float32(a.bias BF16) = %v, want [1 -2]", got)
	}
	s, _ := f.Lookup("e.streamed")
	if raw, _ := f.Raw(s); !bytes.Equal(raw, []byte{7, 8, 9}) {
		t.Errorf("Raw(e.streamed) = %v, want [7 8 9]", raw)
	}
	if c, _ := f.Lookup("c.scalar"); c.NumElements() != 1 || c.Length != 8 {
		t.Errorf("scalar tensor: %d elements, %d bytes; want 1, 8", c.NumElements(), c.Length)
	}
	if _, err := f.Float32(Tensor{Name: "c.scalar", DType: I64, Offset: 1 << 40, Length: 8}); err == nil {
		t.Errorf("Float32 of a tensor not from this file succeeded")
	}
	c, _ := f.Lookup("c.scalar")
	if _, err := f.Float32(c); !errors.Is(err, ErrUnsupportedDType) {
		t.Errorf("Float32(I64 tensor) err = %v, want ErrUnsupportedDType", err)
	}
}

func TestWriteMatchesHuggingFaceHeaderBytes(t *testing.T) {
	var buf bytes.Buffer
	err := Write(&buf, []WriteTensor{{Name: "x", DType: F32, Shape: []int{1}, Data: f32Bytes(1)}}, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	// What safetensors.torch.save_file writes for {"x": torch.ones(1)} with metadata {"format": "pt"}.
	wantHeader := `{"__metadata__":{"format":"pt"},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}` + "   "
	want := append(fileWithHeader(wantHeader, 0), f32Bytes(1)...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("Write output:\n%q\nwant:\n%q", buf.Bytes(), want)
	}
}

func TestWriteRejectsBadTensors(t *testing.T) {
	tests := []struct {
		name    string
		tensors []WriteTensor
	}{
		{"duplicate name", []WriteTensor{{Name: "a", DType: U8, Shape: []int{1}, Data: []byte{1}}, {Name: "a", DType: U8, Shape: []int{1}, Data: []byte{1}}}},
		{"wrong data size", []WriteTensor{{Name: "a", DType: F32, Shape: []int{2}, Data: []byte{1}}}},
		{"empty name", []WriteTensor{{Name: "", DType: U8, Shape: []int{1}, Data: []byte{1}}}},
		{"invalid dtype", []WriteTensor{{Name: "a", Shape: []int{1}, Data: []byte{1}}}},
		{"negative dim", []WriteTensor{{Name: "a", DType: U8, Shape: []int{-1}, Data: []byte{}}}},
		{"no data", []WriteTensor{{Name: "a", DType: U8, Shape: []int{1}}}},
		{"stream writes too little", []WriteTensor{{Name: "a", DType: U8, Shape: []int{2}, WriteData: func(w io.Writer) error {
			_, err := w.Write([]byte{1})
			return err
		}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Write(io.Discard, tt.tensors, nil); err == nil {
				t.Errorf("Write succeeded, want an error")
			}
		})
	}
}

func TestReadRejectsBadHeaders(t *testing.T) {
	const ok = `"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`
	tests := []struct {
		name       string
		file       []byte
		tensor     string // the tensor the *FormatError must name
		truncated  bool
		problemHas string
	}{
		{"shorter than length prefix", []byte{1, 2, 3}, "", true, "shorter"},
		{"header length beyond file", fileWithHeader("{}", 0)[:9], "", true, "header length"},
		{"huge header length", append(binary.LittleEndian.AppendUint64(nil, 1<<40), '{', '}'), "", false, "exceeds the limit"},
		{"not json", fileWithHeader("hello!!!", 0), "", false, "not a JSON object"},
		{"json array", fileWithHeader("[1,2]   ", 0), "", false, "not a JSON object"},
		{"unclosed object", fileWithHeader(`{"__metadata__":{}`, 0), "", false, ""},
		{"trailing garbage", fileWithHeader(`{}{}`, 0), "", false, "after the header"},
		{"duplicate tensor", fileWithHeader(`{`+ok+`,`+ok+`}`, 16), "a", false, "twice"},
		{"duplicate metadata", fileWithHeader(`{"__metadata__":{},"__metadata__":{}}`, 0), "", false, "twice"},
		{"metadata not strings", fileWithHeader(`{"__metadata__":{"n":1}}`, 0), "", false, "strings"},
		{"unknown dtype", fileWithHeader(`{"a":{"dtype":"F128","shape":[2],"data_offsets":[0,8]}}`, 8), "a", false, "F128"},
		{"missing dtype", fileWithHeader(`{"a":{"shape":[2],"data_offsets":[0,8]}}`, 8), "a", false, "dtype"},
		{"missing shape", fileWithHeader(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, 8), "a", false, "shape"},
		{"missing offsets", fileWithHeader(`{"a":{"dtype":"F32","shape":[2]}}`, 8), "a", false, "data_offsets"},
		{"negative dim", fileWithHeader(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, 8), "a", false, ""},
		{"fractional dim", fileWithHeader(`{"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}}`, 8), "a", false, ""},
		{"negative offset", fileWithHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`, 8), "a", false, ""},
		{"three offsets", fileWithHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,9]}}`, 8), "a", false, "3 entries"},
		{"reversed offsets", fileWithHeader(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, 8), "a", false, "end before"},
		{"size mismatch", fileWithHeader(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 12), "a", false, "needs 12"},
		{"element count overflow", fileWithHeader(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, 8), "a", false, "too many"},
		{"offset overflow", fileWithHeader(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}}`, 8), "a", true, ""},
		{"data past end of file", fileWithHeader(`{`+ok+`}`, 4), "a", true, "file has"},
		{"overlapping tensors", fileWithHeader(`{`+ok+`,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "b", false, "overlaps"},
		{"empty name", fileWithHeader(`{"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8), "", false, "empty name"},
		{"entry not object", fileWithHeader(`{"a":5}`, 0), "a", false, "invalid entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromBytes(tt.file)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *FormatError", err)
			}
			if fe.Tensor != tt.tensor {
				t.Errorf("FormatError.Tensor = %q, want %q (err: %v)", fe.Tensor, tt.tensor, err)
			}
			if errors.Is(err, ErrTruncated) != tt.truncated {
				t.Errorf("errors.Is(err, ErrTruncated) = %v, want %v (err: %v)", !tt.truncated, tt.truncated, err)
			}
			if !strings.Contains(fe.Problem, tt.problemHas) {
				t.Errorf("problem %q does not mention %q", fe.Problem, tt.problemHas)
			}
		})
	}
}

func TestReadAcceptsValidEdgeCases(t *testing.T) {
	tests := []struct {
		name  string
		file  []byte
		count int
	}{
		{"empty header", fileWithHeader("{}", 0), 0},
		{"padding spaces", fileWithHeader("{}      ", 0), 0},
		{"gap between tensors", fileWithHeader(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[4,5]}}`, 5), 2},
		{"zero-size tensors share an offset", fileWithHeader(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), 2},
		{"unknown entry fields ignored", fileWithHeader(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":true}}`, 1), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := FromBytes(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Tensors()) != tt.count {
				t.Errorf("%d tensors, want %d", len(f.Tensors()), tt.count)
			}
		})
	}
}

// realFile rebuilds stories260K's model.safetensors with zero data from its stored header.
func realFile(t testing.TB) []byte {
	t.Helper()
	h, err := os.ReadFile("testdata/stories260K.header")
	if err != nil {
		t.Fatal(err)
	}
	return append(h, make([]byte, 1044992-len(h))...)
}

func TestReadRealHeader(t *testing.T) {
	b := realFile(t)
	f, err := FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Tensors()); n != 47 {
		t.Errorf("%d tensors, want 47 (5 layers × 9, embeddings, final norm)", n)
	}
	emb, ok := f.Lookup("model.embed_tokens.weight")
	if !ok || emb.DType != F32 || !cmp.Equal(emb.Shape, []int{512, 64}) || emb.Offset != 8+4856 {
		t.Errorf("embed_tokens = %+v, %v", emb, ok)
	}
	raw, err := f.Raw(emb)
	if err != nil || len(raw) != 512*64*4 || &raw[0] != &b[emb.Offset] {
		t.Errorf("Raw(embed) is not a zero-copy view of the file (err %v)", err)
	}
	// Through a reader without Bytes(), Raw copies.
	g, err := Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if g.ZeroCopy() {
		t.Errorf("ZeroCopy() = true for a bytes.Reader")
	}
	if raw2, err := g.Raw(emb); err != nil || !bytes.Equal(raw, raw2) {
		t.Errorf("copied Raw differs (err %v)", err)
	}
	if _, err := FromBytes(b[:len(b)-1]); !errors.Is(err, ErrTruncated) {
		t.Errorf("file one byte short: err = %v, want ErrTruncated", err)
	}
}

func TestBFloat16RoundsToNearestEven(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want uint16
	}{
		{"exact", 0x3f800000, 0x3f80},
		{"below half rounds down", 0x3f807fff, 0x3f80},
		{"above half rounds up", 0x3f808001, 0x3f81},
		{"tie to even stays", 0x3f808000, 0x3f80},
		{"tie to even goes up", 0x3f818000, 0x3f82},
		{"negative tie", 0xbf818000, 0xbf82},
		{"overflow to inf", 0x7f7fffff, 0x7f80},
		{"inf", 0x7f800000, 0x7f80},
		{"nan stays nan", 0x7f800001, 0x7fc0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BFloat16(math.Float32frombits(tt.in)); got != tt.want {
				t.Errorf("BFloat16(%#08x) = %#04x, want %#04x", tt.in, got, tt.want)
			}
		})
	}
}

func TestDecodeFloat16(t *testing.T) {
	raw := []byte{0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c} // 1, -2, smallest subnormal, +inf
	dst := make([]float32, 4)
	if err := DecodeFloat32(dst, raw, F16); err != nil {
		t.Fatal(err)
	}
	want := []float32{1, -2, float32(math.Ldexp(1, -24)), float32(math.Inf(1))}
	if diff := cmp.Diff(want, dst); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if Float16(1) != 0x3c00 {
		t.Errorf("Float16(1) = %#x", Float16(1))
	}
}
