package program

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// tinyProgram writes a small valid program and returns its bytes.
func tinyProgram(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensor("w", F32, Shape{2, 2}, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteAsset("tokenizer.json", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	m := Method{Name: "decode", Step: 1, Logits: LogitsLast,
		Inputs:      []IO{{Name: "x", DType: F32, Shape: Shape{1, 2}}},
		Outputs:     []IO{{Name: "y", DType: F32, Shape: Shape{1, 2}}},
		Activations: []IO{{Name: "h", DType: F32, Shape: Shape{1, 2}}},
		Ops: []Op{{Kind: OpLinear, In: []string{"x", "w"}, Out: []string{"h"}},
			{Kind: OpAdd, In: []string{"h", "x"}, Out: []string{"y"}}}}
	if _, err := w.Finish(Metadata{Contract: "hf_static", Version: 1}, []Method{m}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeRoundTrip(t *testing.T) {
	data := tinyProgram(t)
	f, err := Decode(data, DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tt, b, ok := f.TensorData("w")
	if !ok || len(b) != 16 || tt.Offset%Alignment != 0 {
		t.Errorf("tensor w: ok %v, %d bytes at offset %d", ok, len(b), tt.Offset)
	}
	if a, ok := f.Asset("tokenizer.json"); !ok || string(a) != "{}" {
		t.Errorf("asset = %q, %v", a, ok)
	}
	if len(f.Fingerprint) != 32 {
		t.Errorf("fingerprint %q", f.Fingerprint)
	}
}

func TestDecodeRejectsDamagedFiles(t *testing.T) {
	good := tinyProgram(t)
	flip := func(at int) []byte {
		b := bytes.Clone(good)
		b[at] ^= 0x40
		return b
	}
	version := bytes.Clone(good)
	binary.LittleEndian.PutUint32(version[8:], 7)
	var ve *VersionError
	var fe *FormatError
	cases := []struct {
		name string
		data []byte
		is   func(error) bool
	}{
		{"empty", nil, func(err error) bool { return errors.Is(err, ErrNotProgram) }},
		{"foreign", []byte("PK\x03\x04 this is a zip file, not a program........................................................................"), func(err error) bool { return errors.Is(err, ErrNotProgram) }},
		{"truncated header", good[:20], func(err error) bool { return errors.Is(err, ErrTruncated) }},
		{"truncated", good[:len(good)-100], func(err error) bool { return errors.Is(err, ErrTruncated) }},
		{"one byte short", good[:len(good)-1], func(err error) bool { return errors.Is(err, ErrTruncated) }},
		{"tensor byte flipped", flip(64 + 3), func(err error) bool { return errors.Is(err, ErrChecksum) }},
		{"manifest byte flipped", flip(len(good) - 64 - 10), func(err error) bool { return errors.Is(err, ErrChecksum) }},
		{"unknown format version", version, func(err error) bool { return errors.As(err, &ve) && ve.Got == 7 }},
		{"trailer offset flipped", flip(len(good) - 64 + 12), func(err error) bool { return errors.As(err, &fe) || errors.Is(err, ErrChecksum) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.data, DecodeOptions{})
			if err == nil || !c.is(err) {
				t.Fatalf("Decode = %v, want the typed error for %s", err, c.name)
			}
			if err.Error() == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestWriterRejectsInvalidMethods(t *testing.T) {
	cases := []struct {
		name string
		m    Method
	}{
		{"unknown op", Method{Name: "decode", Step: 1, Logits: LogitsLast, Ops: []Op{{Kind: "conv", In: []string{"w"}, Out: []string{"w"}}}}},
		{"unknown input", Method{Name: "decode", Step: 1, Logits: LogitsLast,
			Activations: []IO{{Name: "h", DType: F32, Shape: Shape{1, 2}}},
			Ops:         []Op{{Kind: OpAdd, In: []string{"nope", "w"}, Out: []string{"h"}}}}},
		{"write to constant", Method{Name: "decode", Step: 1, Logits: LogitsLast,
			Ops: []Op{{Kind: OpSoftCap, In: []string{"w"}, Out: []string{"w"}, Attr: Attr{SoftCap: 1}}}}},
		{"zero step", Method{Name: "decode", Step: 0, Logits: LogitsLast}},
		{"bad logits rows", Method{Name: "decode", Step: 1, Logits: "some"}},
		{"bad arity", Method{Name: "decode", Step: 1, Logits: LogitsLast,
			Activations: []IO{{Name: "h", DType: F32, Shape: Shape{1, 2}}},
			Ops:         []Op{{Kind: OpAdd, In: []string{"w"}, Out: []string{"h"}}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, _ := NewWriter(&bytes.Buffer{})
			w.WriteTensor("w", F32, Shape{2, 2}, make([]byte, 16))
			_, err := w.Finish(Metadata{}, []Method{c.m})
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("Finish = %v, want *FormatError", err)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	good := tinyProgram(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(data, DecodeOptions{})
		if err != nil {
			return
		}
		for _, tt := range file.Manifest.Tensors {
			if _, b, ok := file.TensorData(tt.Name); !ok || int64(len(b)) != tt.Size {
				t.Fatalf("tensor %q not readable after a successful decode", tt.Name)
			}
		}
	})
}

func TestWriterRefusesReadBeforeWrite(t *testing.T) {
	m := Method{Name: "decode", Step: 1, Logits: LogitsLast,
		Inputs:      []IO{{Name: "x", DType: F32, Shape: Shape{1, 2}}},
		Outputs:     []IO{{Name: "y", DType: F32, Shape: Shape{1, 2}}},
		Activations: []IO{{Name: "h", DType: F32, Shape: Shape{1, 2}}, {Name: "g", DType: F32, Shape: Shape{1, 2}}},
		Ops: []Op{{Kind: OpLinear, In: []string{"x", "w"}, Out: []string{"h"}},
			{Kind: OpAdd, In: []string{"h", "g"}, Out: []string{"y"}}}}
	w, _ := NewWriter(&bytes.Buffer{})
	w.WriteTensor("w", F32, Shape{2, 2}, make([]byte, 16))
	_, err := w.Finish(Metadata{}, []Method{m})
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(fe.Item, "op 1 (add)") || !strings.Contains(fe.Problem, `activation "g" before any op writes it`) {
		t.Fatalf("Finish = %v, want a *FormatError naming op 1 and activation g", err)
	}
}

// TestDecodeChecksReservedBytes flips each reserved header and trailer byte:
// every one is refused as a *FormatError naming the byte.
func TestDecodeChecksReservedBytes(t *testing.T) {
	good := tinyProgram(t)
	var offsets []int
	for i := 12; i < headerSize; i++ {
		offsets = append(offsets, i)
	}
	for i := 36; i < trailerSize; i++ {
		offsets = append(offsets, len(good)-trailerSize+i)
	}
	for _, at := range offsets {
		b := bytes.Clone(good)
		b[at] = 1
		_, err := Decode(b, DecodeOptions{})
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.Contains(fe.Problem, "reserved byte") {
			t.Errorf("byte %d set: Decode = %v, want a *FormatError about a reserved byte", at, err)
		}
	}
}

// A scale op (op set 2) needs a finite, non-zero factor.
func TestWriterRejectsScaleWithoutFactor(t *testing.T) {
	for _, s := range []float32{0, float32(math.Inf(1)), float32(math.NaN())} {
		m := Method{Name: "decode", Step: 1, Logits: LogitsLast,
			Inputs:      []IO{{Name: "x", DType: F32, Shape: Shape{1, 2}}},
			Outputs:     []IO{{Name: "y", DType: F32, Shape: Shape{1, 2}}},
			Activations: []IO{{Name: "h", DType: F32, Shape: Shape{1, 2}}},
			Ops: []Op{{Kind: OpLinear, In: []string{"x", "w"}, Out: []string{"h"}},
				{Kind: OpScale, In: []string{"h"}, Out: []string{"h"}, Attr: Attr{Scale: s}},
				{Kind: OpAdd, In: []string{"h", "x"}, Out: []string{"y"}}}}
		w, _ := NewWriter(&bytes.Buffer{})
		w.WriteTensor("w", F32, Shape{2, 2}, make([]byte, 16))
		_, err := w.Finish(Metadata{}, []Method{m})
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.Contains(fe.Problem, "scale needs a finite, non-zero scale") {
			t.Errorf("scale %g: Finish = %v, want a *FormatError about the scale", s, err)
		}
	}
}

// A big-endian machine refuses every program with ErrBigEndian instead of
// reading its little-endian tensors as garbage (qemu-s390x runs the real
// case: GOARCH=s390x go test -exec qemu-s390x -run BigEndian ./program).
func TestDecodeRefusesBigEndianMachines(t *testing.T) {
	if big := slices.Contains([]string{"ppc64", "mips", "mips64", "s390x"}, runtime.GOARCH); littleEndian == big {
		t.Fatalf("%s: littleEndian = %v", runtime.GOARCH, littleEndian)
	}
	defer func(le bool) { littleEndian = le }(littleEndian)
	littleEndian = false
	if _, err := Decode([]byte(Magic), DecodeOptions{}); !errors.Is(err, ErrBigEndian) {
		t.Fatalf("Decode on a big-endian machine = %v, want ErrBigEndian", err)
	}
}
