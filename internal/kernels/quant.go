package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Quantize stores src ([rows][cols] float32, row-major) into dst in format t.
// dst must be exactly rows*t.RowBytes(cols) bytes. F32 copies, F16 and BF16
// round to nearest even, Q8 and Q4 quantize each block of 32 columns with a
// binary16 scale (see the package comment). Every element's error is at most
// half the block scale. NaN or infinite inputs, and blocks whose scale would
// overflow binary16 (|x| > 8.3e6 for Q8), are rejected with ErrNotFinite.
func Quantize(t WeightType, dst []byte, src []float32, rows, cols int) error {
	if !t.valid() {
		return fmt.Errorf("quantize: %w %d", ErrUnknownType, uint8(t))
	}
	if rows <= 0 || cols <= 0 || len(src) != rows*cols {
		return fmt.Errorf("quantize %s [%d][%d]: %w: src has %d values", t, rows, cols, ErrShape, len(src))
	}
	rb := t.RowBytes(cols)
	if len(dst) != rows*rb {
		return fmt.Errorf("quantize %s [%d][%d]: %w: dst is %d bytes, want %d", t, rows, cols, ErrShape, len(dst), rows*rb)
	}
	for r := range rows {
		x := src[r*cols : (r+1)*cols]
		for c, v := range x {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("quantize %s: row %d col %d is %v: %w", t, r, c, v, ErrNotFinite)
			}
		}
		d := dst[r*rb : (r+1)*rb]
		var err error
		switch t {
		case F32:
			for c, v := range x {
				binary.LittleEndian.PutUint32(d[4*c:], math.Float32bits(v))
			}
		case F16:
			for c, v := range x {
				h := f32ToF16(v)
				if h&0x7c00 == 0x7c00 {
					return fmt.Errorf("quantize f16: row %d col %d is %v, beyond ±65504: %w", r, c, v, ErrNotFinite)
				}
				binary.LittleEndian.PutUint16(d[2*c:], h)
			}
		case BF16:
			for c, v := range x {
				binary.LittleEndian.PutUint16(d[2*c:], f32ToBF16(v))
			}
		case Q8:
			err = quantizeBlocks(d, x, 127, putQ8)
		case Q4:
			err = quantizeBlocks(d, x, 7, putQ4)
		}
		if err != nil {
			return fmt.Errorf("quantize %s: row %d: %w", t, r, err)
		}
	}
	return nil
}

// blockScale returns the binary16 scale for a block whose largest magnitude
// is amax: the smallest binary16 value >= amax/qmax, so that no quantized
// value needs clamping and every element's error is at most scale/2.
func blockScale(amax float32, qmax int) (uint16, error) {
	if amax == 0 {
		return 0, nil
	}
	d := amax / float32(qmax)
	h := f32ToF16(d)
	if f16ToF32(h) < d || h == 0 { // h == 0: amax/qmax underflowed float32
		h++
	}
	if h >= 0x7c00 {
		return 0, fmt.Errorf("block maximum %v needs a scale beyond binary16: %w", amax, ErrNotFinite)
	}
	return h, nil
}

// quantizeBlocks quantizes one row x into the block layout d (scales first).
func quantizeBlocks(d []byte, x []float32, qmax int, put func(d []byte, nb, b, i int, q int8)) error {
	nb := (len(x) + BlockSize - 1) / BlockSize
	for b := range nb {
		blk := x[b*BlockSize : min(len(x), (b+1)*BlockSize)]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		h, err := blockScale(amax, qmax)
		if err != nil {
			return fmt.Errorf("block %d: %w", b, err)
		}
		binary.LittleEndian.PutUint16(d[2*b:], h)
		scale := float64(f16ToF32(h))
		for i := range BlockSize {
			var q int8
			if i < len(blk) && scale != 0 {
				v := math.Round(float64(blk[i]) / scale)
				q = int8(max(-float64(qmax), min(float64(qmax), v)))
			}
			put(d, nb, b, i, q)
		}
	}
	return nil
}

func putQ8(d []byte, nb, b, i int, q int8) { d[2*nb+b*BlockSize+i] = byte(q) }

func putQ4(d []byte, nb, b, i int, q int8) {
	p := &d[2*nb+b*BlockSize/2+i%16]
	if i < 16 {
		*p = *p&0xf0 | byte(q+8)
	} else {
		*p = *p&0x0f | byte(q+8)<<4
	}
}

// DequantizeRow writes row r of m as float32 into dst[:m.Cols]. It is the
// exact value the storage represents (not the value that was quantized).
// Like slice indexing it panics if r or len(dst) is out of range.
func DequantizeRow(m Matrix, r int, dst []float32) {
	dequantizeRow(m.Type, m.row(r), dst[:m.Cols])
}

// dequantizeRowGeneric is the plain implementation of dequantizing one row.
func dequantizeRowGeneric(t WeightType, row []byte, dst []float32) {
	cols := len(dst)
	nb := (cols + BlockSize - 1) / BlockSize
	switch t {
	case F32:
		for c := range dst {
			dst[c] = math.Float32frombits(binary.LittleEndian.Uint32(row[4*c:]))
		}
	case F16:
		for c := range dst {
			dst[c] = f16ToF32(binary.LittleEndian.Uint16(row[2*c:]))
		}
	case BF16:
		for c := range dst {
			dst[c] = bf16ToF32(binary.LittleEndian.Uint16(row[2*c:]))
		}
	case Q8:
		q := row[2*nb:]
		for c := range dst {
			d := f16ToF32(binary.LittleEndian.Uint16(row[2*(c/BlockSize):]))
			dst[c] = d * float32(int8(q[c]))
		}
	case Q4:
		q := row[2*nb:]
		for c := range dst {
			b, i := c/BlockSize, c%BlockSize
			d := f16ToF32(binary.LittleEndian.Uint16(row[2*b:]))
			v := q[b*BlockSize/2+i%16]
			if i >= 16 {
				v >>= 4
			}
			dst[c] = d * float32(int8(v&0xf)-8)
		}
	}
}

// GatherRows is the embedding lookup: for each i, dst[i*Cols:(i+1)*Cols] =
// row(ids[i]) * scale. ids must be in [0, m.Rows) (callers validate token
// ids); dst must hold len(ids)*m.Cols values.
func GatherRows(dst []float32, m Matrix, ids []int64, scale float32) {
	for i, id := range ids {
		out := dst[i*m.Cols : (i+1)*m.Cols]
		DequantizeRow(m, int(id), out)
		if scale != 1 {
			Scale(out, scale)
		}
	}
}

// quantizeXI8 quantizes x (whole blocks of 32) to int8 with one float32
// scale per block: d = max|x| / 127 and q = round(x * 127 / max|x|) (in
// float64, so tiny blocks do not overflow), so |q| <= 127 and each value's
// error is at most d/2. A block of zeros gets d = 0, q = 0; a block holding
// NaN or ±Inf gets d = NaN or +Inf and q = 0, so its products are NaN.
func quantizeXI8(q []byte, d []float32, x []float32) {
	for b := range d {
		blk := x[b*BlockSize : (b+1)*BlockSize]
		qb := q[b*BlockSize : (b+1)*BlockSize]
		amax := 0.0
		for _, v := range blk {
			a := math.Abs(float64(v))
			if math.IsNaN(a) {
				amax = a
				break
			}
			amax = max(amax, a)
		}
		d[b] = float32(amax) / 127
		if amax == 0 || math.IsInf(amax, 0) || math.IsNaN(amax) {
			clear(qb)
			continue
		}
		inv := 127 / amax
		for i, v := range blk {
			qb[i] = byte(int8(max(-127, min(127, math.Round(float64(v)*inv)))))
		}
	}
}
