package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzRowKernels compares the row kernels with the reference on fuzzed
// lengths and values.
func FuzzRowKernels(f *testing.F) {
	f.Add(uint64(1), uint16(17), float32(1))
	f.Add(uint64(2), uint16(4099), float32(30))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, mag float32) {
		if math.IsNaN(float64(mag)) || math.Abs(float64(mag)) > 50 {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		a, b := randVec(rng, int(n)), randVec(rng, int(n))
		for i := range a {
			a[i] *= mag
		}
		tol := 4e-6*math.Sqrt(float64(n)+1)*sumAbsProd(a, b) + 1e-30
		if got, want := Dot(a, b), refDot(a, b); !near(got, want, 1, tol, 0) {
			t.Fatalf("Dot n=%d = %v, want %v", n, got, want)
		}
		m := int(n) % 300
		checkBatched(t, rng, m, int(seed%9), m+int(seed/9%3)*16)
		checkMultiQuery(t, rng, m, int(seed%5)+1, int(seed/5%7))
		if n == 0 {
			return
		}
		got, want := append([]float32(nil), a...), append([]float32(nil), a...)
		Softmax(got)
		refSoftmax(want)
		for i := range got {
			if !near(got[i], want[i], 4e-6, float64(want[i]), 1e-9) {
				t.Fatalf("Softmax n=%d [%d] = %v, want %v", n, i, got[i], want[i])
			}
		}
		SiLUMul(got, a, b)
		for i := range got {
			w := refSiLU(float64(a[i])) * float64(b[i])
			if !near(got[i], float32(w), 2e-6, math.Abs(w), 1e-7*math.Abs(float64(a[i]*b[i]))+1e-7) {
				t.Fatalf("SiLUMul n=%d [%d] = %v, want %v", n, i, got[i], w)
			}
		}
	})
}

// FuzzQuantizeRoundTrip checks that every quantized element is within the
// format's bound of its source, for fuzzed values.
func FuzzQuantizeRoundTrip(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 192}, uint8(4))
	f.Add(make([]byte, 4*70), uint8(5))
	f.Fuzz(func(t *testing.T, raw []byte, typ uint8) {
		tp := WeightType(typ%5 + 1)
		cols := len(raw) / 4
		if cols == 0 {
			return
		}
		src := make([]float32, cols)
		for i := range src {
			v := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || math.Abs(float64(v)) > 60000 {
				v = 0
			}
			src[i] = v
		}
		m := Matrix{Type: tp, Rows: 1, Cols: cols, Data: make([]byte, tp.RowBytes(cols))}
		if err := Quantize(tp, m.Data, src, 1, cols); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, cols)
		DequantizeRow(m, 0, got)
		for c, x := range src {
			bound := elementBound(tp, m.Data, cols, c, x, got[c])
			if e := math.Abs(float64(got[c] - x)); e > bound {
				t.Fatalf("%v col %d: |%v - %v| = %g > %g", tp, c, got[c], x, e, bound)
			}
		}
		checkNoWorseThanSymmetric(t, tp, src, got)
	})
}
