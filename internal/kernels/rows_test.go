package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

var rowLengths = []int{0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 576, 1000, 4099}

// near reports |got-want| <= rel*scale + abs.
func near(got, want float32, rel, scale, abs float64) bool {
	return math.Abs(float64(got)-float64(want)) <= rel*scale+abs
}

func sumAbsProd(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += math.Abs(float64(a[i]) * float64(b[i]))
	}
	return s
}

func TestDotAndAxpyMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, n := range rowLengths {
		a, b := randVec(rng, n), randVec(rng, n+5)
		tol := 4e-6 * math.Sqrt(float64(n)+1) * sumAbsProd(a, b[:n])
		if got, want := Dot(a, b), refDot(a, b[:n]); !near(got, want, 1, tol, 1e-30) {
			t.Errorf("Dot n=%d = %v, want %v", n, got, want)
		}
		h := make([]uint16, n+3)
		F32ToF16(h, b[:n])
		bh := make([]float32, n)
		for i := range bh {
			bh[i] = f16ToF32(h[i])
		}
		if got, want := DotF16(a, h), refDot(a, bh); !near(got, want, 1, 4e-6*math.Sqrt(float64(n)+1)*sumAbsProd(a, bh), 1e-30) {
			t.Errorf("DotF16 n=%d = %v, want %v", n, got, want)
		}
		y := randVec(rng, n+2)
		y2 := append([]float32(nil), y...)
		Axpy(0.75, a, y)
		for i := range y2[:n] {
			want := y2[i] + 0.75*a[i]
			if !near(y[i], want, 1e-6, math.Abs(float64(want)), 1e-6) {
				t.Fatalf("Axpy n=%d y[%d] = %v, want %v", n, i, y[i], want)
			}
		}
		if y[n] != y2[n] || y[n+1] != y2[n+1] {
			t.Fatalf("Axpy n=%d wrote past len(x)", n)
		}
		copy(y, y2)
		AxpyF16(-1.5, h[:n], y)
		for i := range y2[:n] {
			want := y2[i] - 1.5*bh[i]
			if !near(y[i], want, 1e-6, math.Abs(float64(want)), 1e-6) {
				t.Fatalf("AxpyF16 n=%d y[%d] = %v, want %v", n, i, y[i], want)
			}
		}
	}
}

func TestF16SliceConversionsMatchScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, n := range rowLengths {
		src := randVec(rng, n)
		for i := range src {
			src[i] *= float32(math.Pow(2, float64(rng.IntN(40)-25)))
		}
		h := make([]uint16, n)
		F32ToF16(h, src)
		back := make([]float32, n)
		F16ToF32(back, h)
		for i := range src {
			if h[i] != f32ToF16(src[i]) {
				t.Fatalf("F32ToF16 n=%d [%d] = %#04x, want %#04x", n, i, h[i], f32ToF16(src[i]))
			}
			if back[i] != f16ToF32(h[i]) {
				t.Fatalf("F16ToF32 n=%d [%d] = %v, want %v", n, i, back[i], f16ToF32(h[i]))
			}
		}
	}
}

// elementwise checks an in-place-capable kernel against a float64 formula.
func TestElementwiseKernelsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	cases := []struct {
		name string
		run  func(dst, a, b []float32)
		want func(a, b float64) float64
		rel  float64
	}{
		{"SiLUMul", SiLUMul, func(a, b float64) float64 { return refSiLU(a) * b }, 2e-6},
		{"GELUTanhMul", GELUTanhMul, func(a, b float64) float64 { return refGELUTanh(a) * b }, 2e-6},
		{"Add", Add, func(a, b float64) float64 { return a + b }, 1e-7},
		{"Scale", func(dst, a, _ []float32) { copy(dst, a); Scale(dst, 1.7) }, func(a, _ float64) float64 { return a * float64(float32(1.7)) }, 1e-7},
		{"SoftCap", func(dst, a, _ []float32) { copy(dst, a); SoftCap(dst, 2.5) }, func(a, _ float64) float64 { return 2.5 * math.Tanh(a/2.5) }, 2e-6},
	}
	for _, c := range cases {
		for _, n := range rowLengths {
			a, b := randVec(rng, n), randVec(rng, n)
			for i := range a {
				a[i] *= 4
			}
			for _, inPlace := range []bool{false, true} {
				dst := make([]float32, n)
				if inPlace {
					dst = append([]float32(nil), a...)
					c.run(dst, dst, b)
				} else {
					c.run(dst, a, b)
				}
				for i := range dst {
					want := c.want(float64(a[i]), float64(b[i]))
					// 1 + tanh(z) cancels for negative z: allow an error relative to |a*b| too.
					if !near(dst[i], float32(want), c.rel, math.Abs(want), 1e-7*math.Abs(float64(a[i]*b[i]))+1e-7) {
						t.Fatalf("%s n=%d inPlace=%v [%d]: got %v, want %v (a=%v b=%v)", c.name, n, inPlace, i, dst[i], want, a[i], b[i])
					}
				}
			}
		}
	}
}

func TestRMSNormMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, n := range rowLengths[1:] {
		x, w := randVec(rng, n), randVec(rng, n)
		for _, weight := range [][]float32{w, nil} {
			want := make([]float32, n)
			refRMSNorm(want, x, weight, 1e-6)
			got := append([]float32(nil), x...)
			RMSNorm(got, got, weight, 1e-6)
			for i := range got {
				if !near(got[i], want[i], 4e-6, math.Abs(float64(want[i])), 1e-7) {
					t.Fatalf("RMSNorm n=%d weight=%v [%d] = %v, want %v", n, weight != nil, i, got[i], want[i])
				}
			}
		}
	}
}

func TestSoftmaxMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	for _, n := range rowLengths[1:] {
		x := randVec(rng, n)
		for i := range x {
			x[i] *= 8
			if i%5 == 3 {
				x[i] = float32(math.Inf(-1))
			}
		}
		if n > 1 {
			x[0] = 1
		}
		want := append([]float32(nil), x...)
		refSoftmax(want)
		Softmax(x)
		for i := range x {
			if !near(x[i], want[i], 4e-6, float64(want[i]), 1e-9) {
				t.Fatalf("Softmax n=%d [%d] = %v, want %v", n, i, x[i], want[i])
			}
		}
	}
	masked := []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}
	Softmax(masked)
	if masked[0] != 0 || masked[1] != 0 {
		t.Errorf("Softmax(all -Inf) = %v, want zeros", masked)
	}
}

func TestRoPEMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, d := range []int{2, 8, 32, 34, 64, 80, 128, 256} {
		x := randVec(rng, d)
		cos, sin := make([]float32, d/2), make([]float32, d/2)
		for i := range cos {
			a := rng.Float64() * 2 * math.Pi
			cos[i], sin[i] = float32(math.Cos(a)), float32(math.Sin(a))
		}
		want := append([]float32(nil), x...)
		refRoPE(want, cos, sin)
		RoPE(x, cos, sin)
		for i := range x {
			if !near(x[i], want[i], 0, 0, 1e-6) {
				t.Fatalf("RoPE d=%d [%d] = %v, want %v", d, i, x[i], want[i])
			}
		}
	}
}

// TestBatchedRowKernels checks the batched kernels against per-row calls of
// the row kernels: equal bit for bit, on whole-vector and odd lengths.
func TestBatchedRowKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{0, 1, 8, 15, 16, 17, 32, 48, 64, 80, 96, 128, 130, 256} {
		for _, rows := range []int{0, 1, 2, 5, 33} {
			checkBatched(t, rng, n, rows, n+rng.IntN(3)*16)
		}
	}
}

func checkBatched(t *testing.T, rng *rand.Rand, n, rows, ld int) {
	t.Helper()
	q := randVec(rng, n)
	k := randVec(rng, max(rows*ld, 1))
	k16 := make([]uint16, len(k))
	F32ToF16(k16, k)
	p := randVec(rng, rows)
	got, want := make([]float32, rows), make([]float32, rows)
	Dots(got, q, k, ld)
	for r := range want {
		want[r] = Dot(q, k[r*ld:])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Dots n=%d rows=%d ld=%d = %v, want %v", n, rows, ld, got, want)
	}
	DotsF16(got, q, k16, ld)
	for r := range want {
		want[r] = DotF16(q, k16[r*ld:])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("DotsF16 n=%d rows=%d ld=%d = %v, want %v", n, rows, ld, got, want)
	}
	y0 := randVec(rng, n)
	gy, wy := slices.Clone(y0), slices.Clone(y0)
	Axpys(gy, p, k, ld)
	for r, a := range p {
		Axpy(a, k[r*ld:r*ld+n], wy)
	}
	if !slices.Equal(gy, wy) {
		t.Fatalf("Axpys n=%d rows=%d ld=%d = %v, want %v", n, rows, ld, gy, wy)
	}
	gy, wy = slices.Clone(y0), slices.Clone(y0)
	AxpysF16(gy, p, k16, ld)
	for r, a := range p {
		AxpyF16(a, k16[r*ld:r*ld+n], wy)
	}
	if !slices.Equal(gy, wy) {
		t.Fatalf("AxpysF16 n=%d rows=%d ld=%d = %v, want %v", n, rows, ld, gy, wy)
	}
}

// TestMultiQueryKernels checks DotsF16N and AxpysF16N against per-query
// DotsF16 and AxpysF16 calls: equal bit for bit.
func TestMultiQueryKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, d := range []int{0, 8, 16, 32, 48, 64, 128, 130, 256} {
		for _, nq := range []int{1, 2, 3, 4, 5, 8} {
			for _, rows := range []int{0, 1, 3, 40} {
				checkMultiQuery(t, rng, d, nq, rows)
			}
		}
	}
}

func checkMultiQuery(t *testing.T, rng *rand.Rand, d, nq, rows int) {
	t.Helper()
	ld := d + rng.IntN(3)*16
	ldq, ldo := d+rng.IntN(2)*16, rows+rng.IntN(3)
	q := randVec(rng, max(nq*ldq, 1))
	kf := randVec(rng, max(rows*ld, 1))
	k := make([]uint16, len(kf))
	F32ToF16(k, kf)
	got, want := make([]float32, max(nq*ldo, 1)), make([]float32, max(nq*ldo, 1))
	DotsF16N(got, ldo, rows, q, ldq, nq, d, k, ld)
	for qi := range nq {
		DotsF16(want[qi*ldo:qi*ldo+rows], q[qi*ldq:qi*ldq+d], k, ld)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("DotsF16N d=%d nq=%d rows=%d: %v, want %v", d, nq, rows, got, want)
	}
	ldy, ldp := d+rng.IntN(2)*16, rows+rng.IntN(3)
	p := randVec(rng, max(nq*ldp, 1))
	y0 := randVec(rng, max(nq*ldy, 1))
	gy, wy := slices.Clone(y0), slices.Clone(y0)
	AxpysF16N(gy, ldy, d, p, ldp, nq, rows, k, ld)
	for qi := range nq {
		AxpysF16(wy[qi*ldy:qi*ldy+d], p[qi*ldp:qi*ldp+rows], k, ld)
	}
	if !slices.Equal(gy, wy) {
		t.Fatalf("AxpysF16N d=%d nq=%d rows=%d: %v, want %v", d, nq, rows, gy, wy)
	}
}

// Leading -Inf entries (a ring cache's scores row starting at a slot that
// depends on the chunking) do not change the others' probabilities, bit for
// bit, whatever the row's length and alignment against the vector width.
func TestSoftmaxIgnoresLeadingMaskedEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, n := range []int{1, 3, 7, 8, 9, 16, 17, 31, 40, 100} {
		row := randVec(rng, n)
		row[n/2] = float32(math.Inf(-1)) // a masked entry inside the row
		want := slices.Clone(row)
		Softmax(want)
		for pad := range 20 {
			x := make([]float32, pad+n)
			for i := range pad {
				x[i] = float32(math.Inf(-1))
			}
			copy(x[pad:], row)
			Softmax(x)
			for i, v := range x[:pad] {
				if v != 0 {
					t.Fatalf("n %d pad %d: padding [%d] = %v, want 0", n, pad, i, v)
				}
			}
			for i, v := range x[pad:] {
				if math.Float32bits(v) != math.Float32bits(want[i]) {
					t.Fatalf("n %d pad %d: [%d] = %v, unpadded %v", n, pad, i, v, want[i])
				}
			}
		}
	}
}
