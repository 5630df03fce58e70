package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/x448/float16"
)

// Float32 returns t's values converted to float32 in a new slice.
// F32, F16 and BF16 tensors are supported; others give ErrUnsupportedDType.
func (f *File) Float32(t Tensor) ([]float32, error) {
	dst := make([]float32, t.NumElements())
	if err := f.Float32Into(dst, t); err != nil {
		return nil, err
	}
	return dst, nil
}

// Float32Into converts t's values into dst, which must hold exactly
// t.NumElements() values.
func (f *File) Float32Into(dst []float32, t Tensor) error {
	if int64(len(dst)) != t.NumElements() {
		return fmt.Errorf("safetensors: tensor %q has %d elements, destination holds %d", t.Name, t.NumElements(), len(dst))
	}
	raw, err := f.Raw(t)
	if err != nil {
		return err
	}
	return DecodeFloat32(dst, raw, t.DType)
}

// DecodeFloat32 converts little-endian raw data of dtype dt into dst;
// len(raw) must be len(dst)*dt.Size(). bf16 → f32 is exact (a shift),
// f16 → f32 is exact.
func DecodeFloat32(dst []float32, raw []byte, dt DType) error {
	if dt.Size() == 0 || len(raw) != len(dst)*dt.Size() {
		return fmt.Errorf("safetensors: %d bytes of %s do not hold %d values", len(raw), dt, len(dst))
	}
	switch dt {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
	case F16:
		for i := range dst {
			dst[i] = float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
		}
	default:
		return fmt.Errorf("%w: %s (want F32, F16 or BF16)", ErrUnsupportedDType, dt)
	}
	return nil
}

// BFloat16 rounds v to the nearest bfloat16 (ties to even) and returns its bits.
// NaNs stay NaN (quiet).
func BFloat16(v float32) uint16 {
	b := math.Float32bits(v)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep the sign, force a quiet mantissa bit
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// Float16 rounds v to the nearest IEEE half (ties to even) and returns its bits.
func Float16(v float32) uint16 { return float16.Fromfloat32(v).Bits() }
