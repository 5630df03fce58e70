package testckpt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/hfstatic/hfstatic/internal/safetensors"
)

// Generator is the rule every Spec follows (the fixtures' "generator" string).
const Generator = "value[i] = float32(center + scale*(2*u_i - 1)), u_i = (splitmix64(seed + (i+1)*0x9E3779B97F4A7C15) >> 11) * 2^-53, i = 0..n-1 row-major; seed = model_seed XOR fnv1a64(tensor name)"

// Spec describes random weights that regenerate bit-exactly
// (the format of the fixtures' weights_spec.json).
type Spec struct {
	Generator string       `json:"generator"`
	ModelSeed uint64       `json:"model_seed"`
	DType     string       `json:"safetensors_dtype"` // "F32", "BF16" or "F16": the dtype stored (may be empty: Generate's argument decides)
	Tensors   []TensorSpec `json:"tensors"`           // in generation order (the file sorts by name)
}

// TensorSpec is one tensor of a Spec.
type TensorSpec struct {
	Name   string  `json:"name"`
	Shape  []int   `json:"shape"`
	Seed   uint64  `json:"seed"`
	Center float64 `json:"center"`
	Scale  float64 `json:"scale"`
}

// NumElements returns the product of the shape.
func (t TensorSpec) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// Value returns element i (row-major) of the tensor, as float32.
func (t TensorSpec) Value(i int64) float32 {
	z := t.Seed + uint64(i+1)*0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	z ^= z >> 31
	u := float64(z>>11) * 0x1p-53
	// The conversion forces the product to be rounded before the addition
	// (no fused multiply-add), as the fixture generator computed it.
	return float32(t.Center + float64(t.Scale*(2*u-1)))
}

// Fill writes elements start .. start+len(dst)-1 into dst.
func (t TensorSpec) Fill(dst []float32, start int64) {
	for i := range dst {
		dst[i] = t.Value(start + int64(i))
	}
}

// SeedFor returns the seed of the named tensor under the Generator rule:
// modelSeed XOR fnv1a64(name).
func SeedFor(modelSeed uint64, name string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 0x100000001b3
	}
	return modelSeed ^ h
}

// ParseSpec parses and checks a weights_spec.json.
func ParseSpec(data []byte) (Spec, error) {
	var s Spec
	if err := json.Unmarshal(data, &s); err != nil {
		return Spec{}, fmt.Errorf("testckpt: weights spec: %w", err)
	}
	if err := s.validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

func (s Spec) validate() error {
	if s.Generator != "" && s.Generator != Generator {
		return fmt.Errorf("testckpt: weights spec uses generator %q; this package implements only %q", s.Generator, Generator)
	}
	if s.DType != "" {
		if _, err := storedDType(s.DType); err != nil {
			return err
		}
	}
	if len(s.Tensors) == 0 {
		return fmt.Errorf("testckpt: weights spec has no tensors")
	}
	seen := make(map[string]bool, len(s.Tensors))
	for _, t := range s.Tensors {
		if t.Name == "" || seen[t.Name] {
			return fmt.Errorf("testckpt: weights spec: tensor name %q is empty or repeated", t.Name)
		}
		seen[t.Name] = true
		for _, d := range t.Shape {
			if d <= 0 {
				return fmt.Errorf("testckpt: weights spec: tensor %q has shape %v; dimensions must be positive", t.Name, t.Shape)
			}
		}
		if math.IsNaN(t.Center) || math.IsNaN(t.Scale) || math.IsInf(t.Center, 0) || math.IsInf(t.Scale, 0) {
			return fmt.Errorf("testckpt: weights spec: tensor %q has a non-finite center or scale", t.Name)
		}
	}
	return nil
}

func storedDType(name string) (safetensors.DType, error) {
	switch dt, _ := safetensors.ParseDType(name); dt {
	case safetensors.F32, safetensors.BF16, safetensors.F16:
		return dt, nil
	}
	return safetensors.InvalidDType, fmt.Errorf("testckpt: dtype %q not supported; want F32, BF16 or F16", name)
}

// Generate returns the safetensors file for spec with values stored as dtype
// (F32; BF16 or F16 rounded to nearest even), tensors sorted by name and
// metadata {"format":"pt"}, as the fixtures' checkpoints were written.
func Generate(spec Spec, dtype safetensors.DType) ([]byte, error) {
	size, err := FileSize(spec, dtype)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(int(size))
	if err := WriteSafetensors(&buf, spec, dtype); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// FileSize returns the size of the file Generate would produce.
func FileSize(spec Spec, dtype safetensors.DType) (int64, error) {
	tensors, err := writeTensors(spec, dtype)
	if err != nil {
		return 0, err
	}
	n, err := safetensors.HeaderSize(tensors, metadata)
	for _, t := range spec.Tensors {
		n += t.NumElements() * int64(dtype.Size())
	}
	return n, err
}

var metadata = map[string]string{"format": "pt"}

// WriteSafetensors streams the file Generate returns to w, a chunk at a time.
func WriteSafetensors(w io.Writer, spec Spec, dtype safetensors.DType) error {
	tensors, err := writeTensors(spec, dtype)
	if err != nil {
		return err
	}
	return safetensors.Write(w, tensors, metadata)
}

func writeTensors(spec Spec, dtype safetensors.DType) ([]safetensors.WriteTensor, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if _, err := storedDType(dtype.String()); err != nil {
		return nil, err
	}
	out := make([]safetensors.WriteTensor, len(spec.Tensors))
	for i, t := range spec.Tensors {
		out[i] = safetensors.WriteTensor{
			Name:      t.Name,
			DType:     dtype,
			Shape:     t.Shape,
			WriteData: func(w io.Writer) error { return encode(w, t, dtype) },
		}
	}
	return out, nil
}

// block is the number of values generated per write.
const block = 1 << 16

func encode(w io.Writer, t TensorSpec, dtype safetensors.DType) error {
	size := int64(dtype.Size())
	n := t.NumElements()
	buf := make([]byte, min(block, n)*size)
	for start := int64(0); start < n; start += block {
		b := buf[:min(block, n-start)*size]
		encodeRange(b, t, start, dtype)
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// encodeRange stores elements start .. start+len(b)/size-1 of t into b.
func encodeRange(b []byte, t TensorSpec, start int64, dtype safetensors.DType) {
	switch dtype {
	case safetensors.F32:
		for i := 0; i < len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(t.Value(start+int64(i/4))))
		}
	case safetensors.BF16:
		for i := 0; i < len(b); i += 2 {
			binary.LittleEndian.PutUint16(b[i:], safetensors.BFloat16(t.Value(start+int64(i/2))))
		}
	case safetensors.F16:
		for i := 0; i < len(b); i += 2 {
			binary.LittleEndian.PutUint16(b[i:], safetensors.Float16(t.Value(start+int64(i/2))))
		}
	}
}
