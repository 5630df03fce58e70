package program

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A program whose file and one session's buffers exceed the address space is refused with a
// *FitError (errors.Is ErrTooLarge) naming what it needs; at the limit it is accepted.
func TestFitBoundsTheFootprint(t *testing.T) {
	data := tinyProgram(t)
	f, err := Decode(data, DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := int64(len(data)) + 3*8 // x, y and h: [1, 2] f32 each
	if got := f.Manifest.footprint(int64(len(data))); got != want {
		t.Fatalf("footprint = %d, want %d", got, want)
	}
	if err := f.Manifest.fit(int64(len(data)), want); err != nil {
		t.Errorf("fit at the limit: %v", err)
	}
	err = f.Manifest.fit(int64(len(data)), want-1)
	var fe *FitError
	if !errors.As(err, &fe) || !errors.Is(err, ErrTooLarge) || fe.Need != want || fe.Limit != want-1 {
		t.Fatalf("fit one byte short: %v, want a *FitError for %d bytes", err, want)
	}
	if !strings.Contains(err.Error(), "64-bit build") {
		t.Errorf("message %q does not say what to do", err)
	}
	// A tensor's elements count on their own (a quantized tensor has fewer bytes than elements).
	if err := f.Manifest.fit(0, 3); !errors.As(err, &fe) || fe.Item != `tensor "w"` || !fe.Elements || fe.Need != 4 {
		t.Errorf("fit of a 4-element tensor in 3: %v, want a *FitError naming tensor w", err)
	}
}

// A program with a 4 GiB cache decodes on a 64-bit platform and is refused on a 32-bit one
// (GOARCH=386 go test ./program runs this on an amd64 Linux host).
func TestDecodeRefusesWhatTheAddressSpaceCannotHold(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensor("w", F32, Shape{2, 2}, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	cache := IO{Name: "cache", DType: F32, Shape: Shape{1 << 16, 1 << 14}} // 4 GiB
	m := Method{Name: "decode", Step: 1, Logits: LogitsLast,
		Inputs:  []IO{{Name: "x", DType: F32, Shape: Shape{1, 2}}, cache},
		Outputs: []IO{{Name: "y", DType: F32, Shape: Shape{1, 2}}, cache},
		Ops:     []Op{{Kind: OpLinear, In: []string{"x", "w"}, Out: []string{"y"}}}}
	if _, err := w.Finish(Metadata{Contract: "hf_static", Version: 1}, []Method{m}); err != nil {
		t.Fatal(err)
	}
	_, err = Decode(buf.Bytes(), DecodeOptions{})
	need := int64(buf.Len()) + 4<<30 + 2*8
	var fe *FitError
	switch {
	case need <= AddressLimit && err != nil:
		t.Fatalf("Decode on a 64-bit platform: %v", err)
	case need > AddressLimit && (!errors.As(err, &fe) || fe.Need != need || fe.Limit != AddressLimit):
		t.Fatalf("Decode with AddressLimit %d: %v, want a *FitError for %d bytes", AddressLimit, err, need)
	}
	if err != nil {
		t.Log(err) // the message, for -v
	}
}
