package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/program"
)

// Layout says how an initializer's bytes derive from its program tensor's.
type Layout string

// Layouts. Raw initializers are the program tensor's bytes; the others are converted
// from a q4 or q8 tensor into the two inputs of com.microsoft MatMulNBits.
const (
	// LayoutRaw: the program tensor's bytes as they are (f32, f16, bf16).
	LayoutRaw Layout = "raw"
	// LayoutQ4Blocks: u8 [N, nb, 16]; byte i of a block holds column 2i in its low nibble
	// and column 2i+1 in its high nibble, each as q+8 (MatMulNBits bits=4, zero point 8).
	LayoutQ4Blocks Layout = "q4.blocks"
	// LayoutQ8Blocks: u8 [N, nb, 32], each value q+128 (MatMulNBits bits=8, zero point 128).
	LayoutQ8Blocks Layout = "q8.blocks"
	// LayoutQ4Scales and LayoutQ8Scales: f32 [N, nb], the block scales.
	LayoutQ4Scales Layout = "q4.scales"
	LayoutQ8Scales Layout = "q8.scales"
	// LayoutF32T: f32 [K, N], the transpose of an f32 tensor [N, K]: the right operand of
	// MatMul, which ORT 1.30 multiplies by one row faster than Gemm(transB=1) over [N, K]
	// when the weights come from memory (graph version 3; docs/delegate.md).
	LayoutF32T Layout = "f32.t"
)

// Initializer is one external initializer of the graphs: its name in them, the file name
// its external data names (location), its type and shape, and where its bytes come from.
type Initializer struct {
	Name     string   `json:"name"`
	Location string   `json:"location"`
	DType    ElemType `json:"dtype"`
	Dims     []int64  `json:"dims"`
	Tensor   string   `json:"tensor"`
	Layout   Layout   `json:"layout"`
}

// Bytes is the size of the initializer's data.
func (in *Initializer) Bytes() int64 {
	n := int64(in.DType.Size())
	for _, d := range in.Dims {
		n *= d
	}
	return n
}

// Data returns the initializer's bytes: for LayoutRaw the program tensor's own bytes (a
// view of f's data, no copy), for the others a new buffer converted from them.
func (in *Initializer) Data(f *program.File) ([]byte, error) {
	return in.DataInto(f, nil)
}

// DataInto is Data converting into buf when it has the capacity (a new buffer otherwise):
// a caller that writes each converted initializer away can reuse one buffer for all.
func (in *Initializer) DataInto(f *program.File, buf []byte) ([]byte, error) {
	t, data, ok := f.TensorData(in.Tensor)
	if !ok {
		return nil, fmt.Errorf("onnx initializer %q: program has no tensor %q", in.Name, in.Tensor)
	}
	return in.convertInto(t, data, buf)
}

// convertInto derives the initializer's bytes from its tensor t's bytes, writing them
// into buf when it has the capacity (a new buffer otherwise).
func (in *Initializer) convertInto(t program.Tensor, data, buf []byte) ([]byte, error) {
	want := in.Bytes()
	if in.Layout == LayoutRaw {
		if int64(len(data)) != want {
			return nil, fmt.Errorf("onnx initializer %q: tensor %q has %d bytes, want %d", in.Name, in.Tensor, len(data), want)
		}
		return data, nil
	}
	if len(t.Shape) != 2 {
		return nil, fmt.Errorf("onnx initializer %q: tensor %q %v is not 2-D", in.Name, in.Tensor, t.Shape)
	}
	rows, cols := t.Shape[0], t.Shape[1]
	if in.Layout == LayoutF32T {
		if t.DType != program.F32 || int64(len(data)) != want || want != int64(rows*cols*4) {
			return nil, fmt.Errorf("onnx initializer %q: layout %q of a %s tensor %q %v (%d bytes)", in.Name, in.Layout, t.DType, in.Tensor, t.Shape, len(data))
		}
		return transpose32(data, rows, cols, buf), nil
	}
	nb := (cols + kernels.BlockSize - 1) / kernels.BlockSize
	var rowBytes int
	switch {
	case t.DType == program.Q4 && (in.Layout == LayoutQ4Blocks || in.Layout == LayoutQ4Scales):
		rowBytes = nb * (2 + 16)
	case t.DType == program.Q8 && (in.Layout == LayoutQ8Blocks || in.Layout == LayoutQ8Scales):
		rowBytes = nb * (2 + 32)
	default:
		return nil, fmt.Errorf("onnx initializer %q: layout %q of a %s tensor %q", in.Name, in.Layout, t.DType, in.Tensor)
	}
	if len(data) != rows*rowBytes {
		return nil, fmt.Errorf("onnx initializer %q: tensor %q has %d bytes, want %d", in.Name, in.Tensor, len(data), rows*rowBytes)
	}
	out := buf[:0]
	if int64(cap(out)) < want {
		out = make([]byte, want)
	}
	out = out[:want] // every byte is written below
	for r := range rows {
		row := data[r*rowBytes : (r+1)*rowBytes]
		switch in.Layout {
		case LayoutQ4Scales, LayoutQ8Scales:
			scales := out[r*nb*4 : (r+1)*nb*4]
			for b := range nb {
				h := binary.LittleEndian.Uint16(row[2*b:])
				binary.LittleEndian.PutUint32(scales[4*b:], math.Float32bits(f16(h)))
			}
		case LayoutQ8Blocks:
			q := out[r*nb*32 : (r+1)*nb*32]
			for i, v := range row[2*nb:] {
				q[i] = v ^ 0x80 // int8 q → q+128
			}
		case LayoutQ4Blocks:
			q, src := out[r*nb*16:(r+1)*nb*16], row[2*nb:]
			for b := range nb {
				blk, dst := src[16*b:16*b+16], q[16*b:16*b+16]
				// column c of the block: c < 16 in the low nibble of byte c, else the high
				// nibble of byte c-16; MatMulNBits wants it in byte c/2, low if c is even
				nib := func(c int) byte {
					if c < 16 {
						return blk[c] & 0xF
					}
					return blk[c-16] >> 4
				}
				for i := range 16 {
					dst[i] = nib(2*i) | nib(2*i+1)<<4
				}
			}
		}
	}
	return out, nil
}

// transpose32 returns (in buf, when it has the capacity) the [cols, rows] transpose of a
// row-major [rows, cols] matrix of little-endian 4-byte elements (every host hfstatic
// builds for is little-endian, so they are copied as uint32s), in tiles of 32×32 so that
// the reads and the writes both stay in the caches.
func transpose32(data []byte, rows, cols int, buf []byte) []byte {
	const tile = 32
	out := buf[:0]
	if cap(out) < len(data) {
		out = make([]byte, len(data))
	}
	out = out[:len(data)]
	if len(data) == 0 {
		return out
	}
	src := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(data))), rows*cols)
	dst := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(out))), rows*cols)
	for r0 := 0; r0 < rows; r0 += tile {
		r1 := min(r0+tile, rows)
		for c0 := 0; c0 < cols; c0 += tile {
			c1 := min(c0+tile, cols)
			for c := c0; c < c1; c++ {
				d := dst[c*rows+r0 : c*rows+r1]
				s := src[r0*cols+c:]
				for i := range d {
					d[i] = s[i*cols]
				}
			}
		}
	}
	return out
}

// f16 converts a binary16 value to float32.
func f16(h uint16) float32 {
	var out [1]float32
	kernels.F16ToF32(out[:], []uint16{h})
	return out[0]
}

// weights collects the external initializers of the graphs of one program, each once.
type weights struct {
	tensors map[string]program.Tensor
	list    []Initializer
	byName  map[string]int
	files   map[string]bool // locations used
}

func newWeights(tensors []program.Tensor) *weights {
	w := &weights{tensors: map[string]program.Tensor{}, byName: map[string]int{}, files: map[string]bool{}}
	for _, t := range tensors {
		w.tensors[t.Name] = t
	}
	return w
}

// add registers an initializer (once) and declares it in g.
func (w *weights) add(g *graph, in Initializer) string {
	i, ok := w.byName[in.Name]
	if !ok {
		in.Location = w.location(in.Name)
		i = len(w.list)
		w.list = append(w.list, in)
		w.byName[in.Name] = i
	}
	in = w.list[i]
	g.external(in.Name, in.DType, in.Dims, in.Location, in.Bytes())
	return in.Name
}

// location turns an initializer name into a unique plain file name: characters other than
// letters, digits, '.', '_' and '-' become '_' (HF tensor names need no change).
func (w *weights) location(name string) string {
	loc := strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, name)
	if loc == "" || loc[0] == '.' {
		loc = "w" + loc
	}
	base := loc
	for k := 2; w.files[loc]; k++ {
		loc = fmt.Sprintf("%s_%d", base, k)
	}
	w.files[loc] = true
	return loc
}

// elemType maps a plain program dtype to ONNX.
func elemType(d program.DType) (ElemType, bool) {
	switch d {
	case program.F32:
		return Float, true
	case program.F16:
		return Float16, true
	case program.BF16:
		return BFloat16, true
	case program.I64:
		return Int64, true
	case program.Bool:
		return Bool, true
	}
	return 0, false
}

// raw declares a plain tensor as a raw initializer of g.
func (w *weights) raw(g *graph, name string) (string, ElemType, error) {
	t, ok := w.tensors[name]
	if !ok {
		return "", 0, fmt.Errorf("no constant tensor %q", name)
	}
	typ, ok := elemType(t.DType)
	if !ok {
		return "", 0, fmt.Errorf("tensor %q has dtype %s, not a plain float type", name, t.DType)
	}
	dims := make([]int64, len(t.Shape))
	for i, d := range t.Shape {
		dims[i] = int64(d)
	}
	return w.add(g, Initializer{Name: name, DType: typ, Dims: dims, Tensor: name, Layout: LayoutRaw}), typ, nil
}

// transposed declares the [K, N] transpose of an f32 tensor [N, K] in g (LayoutF32T).
func (w *weights) transposed(g *graph, t program.Tensor) string {
	n, k := int64(t.Shape[0]), int64(t.Shape[1])
	return w.add(g, Initializer{Name: t.Name + "." + string(LayoutF32T), DType: Float, Dims: []int64{k, n}, Tensor: t.Name, Layout: LayoutF32T})
}

// quantized declares the MatMulNBits blocks and scales of a q4 or q8 tensor [N, K] in g.
func (w *weights) quantized(g *graph, t program.Tensor) (blocks, scales string, bits int) {
	n, k := int64(t.Shape[0]), int64(t.Shape[1])
	nb := (k + kernels.BlockSize - 1) / kernels.BlockSize
	blob, bl, sl := int64(16), LayoutQ4Blocks, LayoutQ4Scales
	bits = 4
	if t.DType == program.Q8 {
		blob, bl, sl, bits = 32, LayoutQ8Blocks, LayoutQ8Scales, 8
	}
	blocks = w.add(g, Initializer{Name: t.Name + "." + string(bl), DType: Uint8, Dims: []int64{n, nb, blob}, Tensor: t.Name, Layout: bl})
	scales = w.add(g, Initializer{Name: t.Name + "." + string(sl), DType: Float, Dims: []int64{n, nb}, Tensor: t.Name, Layout: sl})
	return blocks, scales, bits
}
