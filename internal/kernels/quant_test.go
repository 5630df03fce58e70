package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

var allTypes = []WeightType{F32, F16, BF16, Q8, Q4}

func TestWeightTypeNamesRoundTrip(t *testing.T) {
	for _, typ := range allTypes {
		got, err := ParseWeightType(typ.String())
		if err != nil || got != typ {
			t.Errorf("ParseWeightType(%q) = %v, %v; want %v", typ.String(), got, err, typ)
		}
	}
	if _, err := ParseWeightType("q5"); !errors.Is(err, ErrUnknownType) {
		t.Errorf("ParseWeightType(q5) error = %v, want ErrUnknownType", err)
	}
	if s := WeightType(9).String(); s != "WeightType(9)" {
		t.Errorf("WeightType(9).String() = %q", s)
	}
}

func TestRowBytes(t *testing.T) {
	cases := []struct {
		typ  WeightType
		cols int
		want int
	}{
		{F32, 172, 688}, {F16, 172, 344}, {BF16, 3, 6},
		{Q8, 32, 34}, {Q8, 172, 6 * 34}, {Q8, 1, 34},
		{Q4, 32, 18}, {Q4, 172, 6 * 18}, {Q4, 4096, 128 * 18},
		{WeightType(0), 32, 0}, {F32, -1, 0},
	}
	for _, c := range cases {
		if got := c.typ.RowBytes(c.cols); got != c.want {
			t.Errorf("%v.RowBytes(%d) = %d, want %d", c.typ, c.cols, got, c.want)
		}
	}
}

func TestValidateRejectsBadMatrices(t *testing.T) {
	cases := []struct {
		name string
		m    Matrix
		want error
	}{
		{"unknown type", Matrix{Type: 7, Rows: 1, Cols: 1, Data: make([]byte, 4)}, ErrUnknownType},
		{"zero rows", Matrix{Type: F32, Rows: 0, Cols: 1}, ErrShape},
		{"short data", Matrix{Type: Q8, Rows: 2, Cols: 40, Data: make([]byte, 2*68-1)}, ErrShape},
		{"long data", Matrix{Type: F16, Rows: 2, Cols: 3, Data: make([]byte, 13)}, ErrShape},
	}
	for _, c := range cases {
		if err := c.m.Validate(); !errors.Is(err, c.want) {
			t.Errorf("%s: Validate() = %v, want %v", c.name, err, c.want)
		}
	}
	if err := (Matrix{Type: Q4, Rows: 2, Cols: 40, Data: make([]byte, 72)}).Validate(); err != nil {
		t.Errorf("valid q4 matrix: Validate() = %v", err)
	}
}

func TestQuantizeRejectsBadInput(t *testing.T) {
	nan := []float32{1, float32(math.NaN())}
	if err := Quantize(Q8, make([]byte, 34), nan, 1, 2); !errors.Is(err, ErrNotFinite) {
		t.Errorf("NaN: err = %v, want ErrNotFinite", err)
	}
	if err := Quantize(F16, make([]byte, 4), []float32{1, 1e6}, 1, 2); !errors.Is(err, ErrNotFinite) {
		t.Errorf("f16 overflow: err = %v, want ErrNotFinite", err)
	}
	if err := Quantize(Q8, make([]byte, 34), []float32{1e9}, 1, 1); !errors.Is(err, ErrNotFinite) {
		t.Errorf("q8 scale overflow: err = %v, want ErrNotFinite", err)
	}
	if err := Quantize(Q8, make([]byte, 33), []float32{1, 2}, 1, 2); !errors.Is(err, ErrShape) {
		t.Errorf("short dst: err = %v, want ErrShape", err)
	}
	if err := Quantize(F32, make([]byte, 8), []float32{1, 2, 3}, 1, 2); !errors.Is(err, ErrShape) {
		t.Errorf("long src: err = %v, want ErrShape", err)
	}
}

// randMatrix quantizes random values (with a spread of magnitudes per row and
// some exact zeros) and returns the source values too.
func randMatrix(tb testing.TB, rng *rand.Rand, typ WeightType, rows, cols int) (Matrix, []float32) {
	tb.Helper()
	src := make([]float32, rows*cols)
	for r := range rows {
		mag := float32(math.Pow(10, rng.Float64()*4-3))
		for c := range cols {
			if rng.IntN(17) == 0 {
				continue
			}
			src[r*cols+c] = float32(rng.NormFloat64()) * mag
		}
	}
	m := Matrix{Type: typ, Rows: rows, Cols: cols, Data: make([]byte, rows*typ.RowBytes(cols))}
	if err := Quantize(typ, m.Data, src, rows, cols); err != nil {
		tb.Fatal(err)
	}
	return m, src
}

// Every element of a quantize→dequantize round trip is within the format's
// bound: exact for f32, half an ulp for f16/bf16, half the block scale for q8/q4
// values not clamped at an end of the range; and no q8/q4 block has a larger
// squared error than rounding with the symmetric max-based scale.
func TestQuantizeDequantizeErrorWithinFormatBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range allTypes {
		for _, cols := range []int{1, 5, 31, 32, 33, 64, 172, 1000} {
			rows := 3
			m, src := randMatrix(t, rng, typ, rows, cols)
			got := make([]float32, cols)
			for r := range rows {
				DequantizeRow(m, r, got)
				want := make([]float32, cols)
				dequantizeRowGeneric(typ, m.row(r), want)
				for c := range cols {
					if math.Float32bits(got[c]) != math.Float32bits(want[c]) {
						t.Fatalf("%v cols=%d row %d col %d: DequantizeRow = %v, generic = %v", typ, cols, r, c, got[c], want[c])
					}
					x := src[r*cols+c]
					bound := elementBound(typ, m.row(r), cols, c, x, got[c])
					if e := math.Abs(float64(got[c] - x)); e > bound {
						t.Fatalf("%v cols=%d row %d col %d: |%v - %v| = %g > bound %g", typ, cols, r, c, got[c], x, e, bound)
					}
				}
				checkNoWorseThanSymmetric(t, typ, src[r*cols:(r+1)*cols], got)
			}
		}
	}
}

// elementBound is the largest error of x stored as got; clamped q8/q4 values
// (at an end of the range) have none of their own (see checkNoWorseThanSymmetric).
func elementBound(typ WeightType, row []byte, cols, c int, x, got float32) float64 {
	ax := math.Abs(float64(x))
	switch typ {
	case F16:
		return max(ax*math.Pow(2, -11), math.Pow(2, -25))
	case BF16:
		return max(ax*math.Pow(2, -8), math.Pow(2, -134)) // subnormals: half an ulp of 2^-133
	case Q8, Q4:
		d := float64(f16ToF32(binary.LittleEndian.Uint16(row[2*(c/BlockSize):])))
		lv := q8Levels
		if typ == Q4 {
			lv = q4Levels
		}
		if q := float64(got) / d; d != 0 && (q == float64(lv.lo) || q == float64(lv.hi)) {
			return math.Inf(1)
		}
		return math.Abs(d) / 2 * (1 + 1e-6)
	}
	return 0
}

// checkNoWorseThanSymmetric fails if a q8/q4 block of x stored as got has a
// larger squared error than round to nearest with the scale max|x|/127 (q8) or
// max|x|/7 (q4), rounded up to binary16: the quantizer's first candidate.
func checkNoWorseThanSymmetric(tb testing.TB, typ WeightType, x, got []float32) {
	tb.Helper()
	qmax := map[WeightType]float64{Q8: 127, Q4: 7}[typ]
	if qmax == 0 {
		return
	}
	for lo := 0; lo < len(x); lo += BlockSize {
		blk := x[lo:min(len(x), lo+BlockSize)]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		h, err := blockScale(amax, int(qmax))
		if err != nil {
			tb.Fatal(err)
		}
		d := float64(f16ToF32(h))
		var eSym, eGot float64
		for i, v := range blk {
			var r float64
			if d != 0 {
				r = d * max(-qmax, min(qmax, math.Round(float64(v)/d)))
			}
			eSym += (float64(v) - r) * (float64(v) - r)
			eGot += (float64(v) - float64(got[lo+i])) * (float64(v) - float64(got[lo+i]))
		}
		if eGot > eSym*(1+1e-9) {
			tb.Fatalf("%v block at column %d: squared error %g, symmetric rounding gives %g", typ, lo, eGot, eSym)
		}
	}
}

func TestQ8PadsPartialBlockWithZeros(t *testing.T) {
	src := make([]float32, 2*40)
	for i := range src {
		src[i] = float32(i%7) - 3
	}
	data := make([]byte, 2*Q8.RowBytes(40))
	if err := Quantize(Q8, data, src, 2, 40); err != nil {
		t.Fatal(err)
	}
	rb := Q8.RowBytes(40)
	for r := range 2 {
		for i := 40; i < 64; i++ {
			if q := data[r*rb+4+i]; q != 0 {
				t.Fatalf("row %d padding column %d = %d, want 0", r, i, q)
			}
		}
	}
}

func TestGatherRowsScalesSelectedRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range allTypes {
		m, _ := randMatrix(t, rng, typ, 10, 37)
		ids := []int64{3, 0, 9, 3}
		got := make([]float32, len(ids)*37)
		GatherRows(got, m, ids, 2.5)
		want := make([]float32, 37)
		for i, id := range ids {
			dequantizeRowGeneric(typ, m.row(int(id)), want)
			for c := range want {
				if g, w := got[i*37+c], want[c]*2.5; g != w {
					t.Fatalf("%v id %d col %d = %v, want %v", typ, id, c, g, w)
				}
			}
		}
	}
}

// quantizeXI8 (the AVX2 int8 route's input quantization): every value within
// half a step, |q| <= 127, zero blocks exact, tiny blocks finite, NaN and Inf
// blocks flagged in the scale.
func TestQuantizeXI8(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	x := randVec(rng, 4*BlockSize)
	for i := range BlockSize {
		x[BlockSize+i] = 0                       // block 1: zeros
		x[2*BlockSize+i] = float32(i-16) * 1e-40 // block 2: subnormals
	}
	x[3*BlockSize+5] = float32(math.NaN()) // block 3: a NaN
	q, d := make([]byte, len(x)), make([]float32, 4)
	quantizeXI8(q, d, x)
	for b := range 3 {
		for i := range BlockSize {
			c := b*BlockSize + i
			v := int8(q[c])
			if v < -127 {
				t.Fatalf("block %d value %d: q = %d", b, i, v)
			}
			if err := math.Abs(float64(x[c]) - float64(v)*float64(d[b])); err > float64(d[b])/2*(1+1e-6)+1e-45 {
				t.Fatalf("block %d value %d: x %g, q %d, d %g: error %g > d/2", b, i, x[c], v, d[b], err)
			}
		}
	}
	if d[1] != 0 || d[2] == 0 || math.IsInf(float64(d[2]), 0) || !math.IsNaN(float64(d[3])) {
		t.Fatalf("scales %v: want 0 for zeros, finite nonzero for subnormals, NaN for a NaN", d)
	}
	x[3*BlockSize+5] = float32(math.Inf(-1))
	quantizeXI8(q, d, x)
	if !math.IsInf(float64(d[3]), 1) {
		t.Fatalf("scale of a block with -Inf: %g, want +Inf", d[3])
	}
}

// The quantizer uses the whole integer range (-128 for q8, -8 for q4) and
// both signs of scale, so the kernel tests above multiply such weights too.
func TestQuantizeUsesWholeRangeAndBothSigns(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, c := range []struct {
		typ    WeightType
		lowest int8
	}{{Q8, -128}, {Q4, -8}} {
		m, _ := randMatrix(t, rng, c.typ, 64, 64)
		got := make([]float32, 64)
		var lowest, negScale bool
		for r := range 64 {
			DequantizeRow(m, r, got)
			for b := range 2 {
				d := f16ToF32(binary.LittleEndian.Uint16(m.row(r)[2*b:]))
				negScale = negScale || d < 0
				for _, v := range got[b*BlockSize : (b+1)*BlockSize] {
					lowest = lowest || (d != 0 && v/d == float32(c.lowest))
				}
			}
		}
		if !lowest || !negScale {
			t.Errorf("%v: level %d used: %v, a negative scale used: %v; want both", c.typ, c.lowest, lowest, negScale)
		}
	}
}

// QuantizeCalibrated puts the error where the importance is: a block whose
// second half matters 100 times more has less error there than plain
// Quantize leaves, and validates its importance.
func TestQuantizeCalibratedFollowsImportance(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	const rows, cols = 200, 32
	src := randVec(rng, rows*cols)
	imp := make([]float32, cols)
	for c := range imp {
		imp[c] = 1
		if c >= 16 {
			imp[c] = 100
		}
	}
	weightedErr := func(data []byte) float64 {
		m := Matrix{Type: Q4, Rows: rows, Cols: cols, Data: data}
		got := make([]float32, cols)
		var e float64
		for r := range rows {
			DequantizeRow(m, r, got)
			for c, v := range got {
				d := float64(v - src[r*cols+c])
				e += float64(imp[c]) * d * d
			}
		}
		return e
	}
	plain, weighted := make([]byte, rows*Q4.RowBytes(cols)), make([]byte, rows*Q4.RowBytes(cols))
	if err := Quantize(Q4, plain, src, rows, cols); err != nil {
		t.Fatal(err)
	}
	if err := QuantizeCalibrated(Q4, weighted, src, rows, cols, Calibration{Importance: imp}); err != nil {
		t.Fatal(err)
	}
	if p, w := weightedErr(plain), weightedErr(weighted); !(w < 0.9*p) {
		t.Errorf("weighted error %g with importance, %g without: want at least 10%% less", w, p)
	}
	for _, bad := range [][]float32{imp[:3], append(make([]float32, cols-1), -1), append(make([]float32, cols-1), float32(math.NaN()))} {
		if err := QuantizeCalibrated(Q4, weighted, src, rows, cols, Calibration{Importance: bad}); err == nil {
			t.Errorf("importance %v: no error", bad[len(bad)-1])
		}
	}
}

// BenchmarkQuantize/type=q4/576x1536 is one SmolLM2-135M FFN matrix (export time).
func BenchmarkQuantize(b *testing.B) {
	rng := rand.New(rand.NewPCG(51, 52))
	const rows, cols = 576, 1536
	src := randVec(rng, rows*cols)
	for _, typ := range []WeightType{Q8, Q4} {
		b.Run(fmt.Sprintf("type=%v/%dx%d", typ, rows, cols), func(b *testing.B) {
			dst := make([]byte, rows*typ.RowBytes(cols))
			b.ReportAllocs()
			b.SetBytes(int64(4 * rows * cols))
			for b.Loop() {
				if err := Quantize(typ, dst, src, rows, cols); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
