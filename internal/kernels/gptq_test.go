package kernels

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// With correlated inputs, compensating each rounding error in the columns after it
// (Calibration.Gram) leaves less output error, (w-ŵ)ᵀ G (w-ŵ), than quantizing each
// block for G's diagonal alone; and a row's result is still a valid block row.
func TestGPTQReducesOutputErrorOnCorrelatedInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	const rows, cols, samples = 24, 80, 400
	// Inputs x = A z: channels mixed, so G = mean x xᵀ is far from diagonal.
	mix := randVec(rng, cols*cols)
	gram := make([]float32, cols*cols)
	x := make([]float64, cols)
	for range samples {
		z := randVec(rng, cols)
		for i := range cols {
			x[i] = 0
			for k := range cols {
				x[i] += float64(mix[i*cols+k]) * float64(z[k])
			}
		}
		for i := range cols {
			for j := range cols {
				gram[i*cols+j] += float32(x[i] * x[j] / samples)
			}
		}
	}
	diag := make([]float32, cols)
	for i := range cols {
		diag[i] = gram[i*cols+i]
	}
	src := randVec(rng, rows*cols)
	outputError := func(typ WeightType, data []byte) float64 {
		m := Matrix{Type: typ, Rows: rows, Cols: cols, Data: data}
		got := make([]float32, cols)
		var e float64
		for r := range rows {
			DequantizeRow(m, r, got)
			for i := range cols {
				for j := range cols {
					e += float64(got[i]-src[r*cols+i]) * float64(gram[i*cols+j]) * float64(got[j]-src[r*cols+j])
				}
			}
		}
		return e
	}
	for _, typ := range []WeightType{Q8, Q4} {
		plain, gptq := make([]byte, rows*typ.RowBytes(cols)), make([]byte, rows*typ.RowBytes(cols))
		if err := QuantizeCalibrated(typ, plain, src, rows, cols, Calibration{Importance: diag}); err != nil {
			t.Fatal(err)
		}
		if err := QuantizeCalibrated(typ, gptq, src, rows, cols, Calibration{Gram: gram}); err != nil {
			t.Fatal(err)
		}
		p, g := outputError(typ, plain), outputError(typ, gptq)
		t.Logf("%v: output error %.4g with the diagonal, %.4g with GPTQ", typ, p, g)
		if !(g < 0.7*p) {
			t.Errorf("%v: GPTQ output error %g, diagonal %g: want at least 30%% less", typ, g, p)
		}
		// Padding columns of the last block are zero, as Quantize leaves them.
		check := make([]byte, rows*typ.RowBytes(cols))
		if err := Quantize(typ, check, src, rows, cols); err != nil {
			t.Fatal(err)
		}
		nb := (cols + BlockSize - 1) / BlockSize
		for r := range rows {
			row := gptq[r*typ.RowBytes(cols):]
			for c := cols; c < nb*BlockSize; c++ {
				b, i := c/BlockSize, c%BlockSize
				var q int
				if typ == Q8 {
					q = int(int8(row[2*nb+c]))
				} else {
					v := row[2*nb+b*BlockSize/2+i%16]
					if i >= 16 {
						v >>= 4
					}
					q = int(v&0xf) - 8
				}
				if q != 0 {
					t.Fatalf("%v row %d padding column %d = %d, want 0", typ, r, c, q)
				}
			}
		}
	}
}

func TestGPTQRejectsBadGram(t *testing.T) {
	src := make([]float32, 2*32)
	dst := make([]byte, 2*Q4.RowBytes(32))
	short := make([]float32, 31*32)
	if err := QuantizeCalibrated(Q4, dst, src, 2, 32, Calibration{Gram: short}); !errors.Is(err, ErrShape) {
		t.Errorf("short Gram: err = %v, want ErrShape", err)
	}
	nan := make([]float32, 32*32)
	nan[5] = float32(math.NaN())
	if err := QuantizeCalibrated(Q4, dst, src, 2, 32, Calibration{Gram: nan}); !errors.Is(err, ErrNotFinite) {
		t.Errorf("NaN in Gram: err = %v, want ErrNotFinite", err)
	}
	neg := make([]float32, 32*32)
	for i := range 32 {
		neg[i*32+i] = -1
	}
	if err := QuantizeCalibrated(Q4, dst, src, 2, 32, Calibration{Gram: neg}); err == nil {
		t.Error("negative definite Gram: no error")
	}
}
