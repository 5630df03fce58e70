package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// Quantize stores src ([rows][cols] float32, row-major) into dst in format t.
// dst must be exactly rows*t.RowBytes(cols) bytes. F32 copies, F16 and BF16
// round to nearest even, Q8 and Q4 quantize each block of 32 columns with a
// binary16 scale (see the package comment) chosen to minimise the block's
// squared error (see QuantizeCalibrated). NaN or infinite inputs, and blocks
// whose scale would overflow binary16 (|x| > 8.3e6 for Q8), are rejected
// with ErrNotFinite.
func Quantize(t WeightType, dst []byte, src []float32, rows, cols int) error {
	return QuantizeCalibrated(t, dst, src, rows, cols, Calibration{})
}

// Calibration describes the inputs a matrix will multiply, for quantizing it
// to Q8 or Q4 with less error where the inputs make it count. The zero value
// is plain squared error.
type Calibration struct {
	// Importance [cols], each >= 0 (nil: all ones): each block's scale and
	// values minimise sum over the block of Importance[c] * (x[c] -
	// stored[c])^2, the error a layer's output gets from the block when
	// Importance[c] is the mean square of input channel c.
	Importance []float32
	// Gram [cols][cols] (optional): the mean of x xᵀ over the inputs. When
	// set, each row minimises the mean squared error of its output, (w -
	// ŵ)ᵀ Gram (w - ŵ): columns are quantized in order and each rounding error
	// is compensated by the columns after it (GPTQ), block scales weighted by
	// Gram's diagonal; then codes are moved by ±1 and block scales re-fitted
	// while that lowers the error. Importance is not used.
	Gram []float32
}

// QuantizeCalibrated is Quantize for inputs described by cal. Each Q8/Q4
// block's scale is searched among those that map the block's largest
// magnitude to levels around each end of the integer range ([-128, 127]
// for Q8, [-8, 7] for Q4, so either sign of scale): the least-squares scale
// of each rounding, rounded to binary16, every value rounded to nearest for
// it. The symmetric max|x|/127 (Q8) or max|x|/7 (Q4) scale is a candidate,
// so without Gram no block is worse than plain rounding with it. The result
// is deterministic. Float types ignore cal.
func QuantizeCalibrated(t WeightType, dst []byte, src []float32, rows, cols int, cal Calibration) error {
	importance := cal.Importance
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
	if importance != nil {
		if len(importance) != cols {
			return fmt.Errorf("quantize %s [%d][%d]: %w: %d importance values, want one per column", t, rows, cols, ErrShape, len(importance))
		}
		for c, v := range importance {
			if !(v >= 0) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("quantize %s: importance of column %d is %v, want finite and >= 0: %w", t, c, v, ErrNotFinite)
			}
		}
	}
	for i, v := range src {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("quantize %s: row %d col %d is %v: %w", t, i/cols, i%cols, v, ErrNotFinite)
		}
	}
	row := func(r int) error {
		x := src[r*cols : (r+1)*cols]
		d := dst[r*rb : (r+1)*rb]
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
			if err := quantizeBlocks(d, x, importance, q8Levels, putQ8); err != nil {
				return fmt.Errorf("quantize %s: row %d: %w", t, r, err)
			}
		case Q4:
			if err := quantizeBlocks(d, x, importance, q4Levels, putQ4); err != nil {
				return fmt.Errorf("quantize %s: row %d: %w", t, r, err)
			}
		}
		return nil
	}
	if cal.Gram != nil && (t == Q8 || t == Q4) {
		return quantizeGPTQ(t, dst, src, rows, cols, cal.Gram)
	}
	if t != Q8 && t != Q4 {
		for r := range rows {
			if err := row(r); err != nil {
				return err
			}
		}
		return nil
	}
	return forRows(rows, cols, row)
}

// forRows calls row(r) for every r, on up to GOMAXPROCS goroutines when the
// matrix is large enough to pay for them, and returns the error of the
// lowest failing row (the same error whatever the scheduling). Every
// goroutine has returned when it returns.
func forRows(rows, cols int, row func(r int) error) error {
	workers := min(runtime.GOMAXPROCS(0), rows, rows*cols/(1<<16)+1)
	if workers <= 1 {
		for r := range rows {
			if err := row(r); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, rows)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r := int(next.Add(1)) - 1
				if r >= rows {
					return
				}
				errs[r] = row(r)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
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
