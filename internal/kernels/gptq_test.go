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

// refineRow starts from any rounding (here nearest, at each block's max-based scale)
// and never raises the row's error eᵀHe; on correlated inputs it lowers it, and its
// codes stay in the format's range.
func TestRefineRowLowersOutputError(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const cols = 96
	gram := make([]float32, cols*cols)
	mix := randVec(rng, cols*cols)
	for i := range cols { // G = M Mᵀ / cols
		for j := range cols {
			var s float64
			for k := range cols {
				s += float64(mix[i*cols+k]) * float64(mix[j*cols+k])
			}
			gram[i*cols+j] = float32(s / cols)
		}
	}
	h := dampedGram(gram, cols)
	errorOf := func(src []float32, q []float64, scale []uint16) float64 {
		var e float64
		for i := range cols {
			for j := range cols {
				ei := float64(f16ToF32(scale[i/BlockSize]))*q[i] - float64(src[i])
				ej := float64(f16ToF32(scale[j/BlockSize]))*q[j] - float64(src[j])
				e += ei * h[i*cols+j] * ej
			}
		}
		return e
	}
	for _, lv := range []levels{q8Levels, q4Levels} {
		var before, after float64
		for range 20 {
			src := randVec(rng, cols)
			q := make([]float64, cols)
			scale := make([]uint16, cols/BlockSize)
			for b := range scale {
				var amax float32
				for _, v := range src[b*BlockSize : (b+1)*BlockSize] {
					amax = max(amax, float32(math.Abs(float64(v))))
				}
				s, err := blockScale(amax, lv.hi)
				if err != nil {
					t.Fatal(err)
				}
				scale[b] = s
				for c := b * BlockSize; c < (b+1)*BlockSize; c++ {
					q[c] = lv.round(float64(src[c]) / float64(f16ToF32(s)))
				}
			}
			e0 := errorOf(src, q, scale)
			refineRow(src, q, scale, h, lv)
			e1 := errorOf(src, q, scale)
			if e1 > e0*(1+1e-12) {
				t.Fatalf("hi=%d: error rose from %g to %g", lv.hi, e0, e1)
			}
			for c, v := range q {
				if v < float64(lv.lo) || v > float64(lv.hi) || v != math.Trunc(v) {
					t.Fatalf("hi=%d: code %d is %v, outside [%d, %d]", lv.hi, c, v, lv.lo, lv.hi)
				}
			}
			before, after = before+e0, after+e1
		}
		t.Logf("hi=%d: error %.4g → %.4g", lv.hi, before, after)
		if !(after < 0.8*before) {
			t.Errorf("hi=%d: error %g after refining, %g before: want at least 20%% less", lv.hi, after, before)
		}
	}
}

func TestSolveLinear(t *testing.T) {
	a := []float64{0, 2, 1, 1} // needs a pivot
	x, ok := solveLinear(a, []float64{4, 3}, 2)
	if !ok || math.Abs(x[0]-1) > 1e-12 || math.Abs(x[1]-2) > 1e-12 {
		t.Errorf("solveLinear = %v, %v; want [1 2], true", x, ok)
	}
	if _, ok := solveLinear([]float64{1, 2, 2, 4}, []float64{1, 2}, 2); ok {
		t.Error("singular matrix: ok = true")
	}
}
