package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// checkMatMul compares a Pool.MatMul against ReferenceMatMul. The tolerance
// is relative to sum |x||w| of each output: float32 accumulation in any order
// stays far inside it, an indexing error does not.
func checkMatMul(tb testing.TB, p *Pool, rng *rand.Rand, typ WeightType, m, rows, cols int, withBias bool) {
	tb.Helper()
	checkMatMulTol(tb, p, rng, typ, m, rows, cols, withBias, true)
}

// checkMatMulTol is checkMatMul; allowActQuant adds the bound of the int8
// activation quantization for q8/q4 (the VNNI path, any m).
func checkMatMulTol(tb testing.TB, p *Pool, rng *rand.Rand, typ WeightType, m, rows, cols int, withBias, allowActQuant bool) {
	tb.Helper()
	w, _ := randMatrix(tb, rng, typ, rows, cols)
	x := randVec(rng, m*cols)
	var bias []float32
	if withBias {
		bias = randVec(rng, rows)
	}
	got := make([]float32, m*rows+3)
	for i := range got {
		got[i] = float32(math.NaN())
	}
	want := make([]float32, m*rows)
	p.MatMul(got, x, m, w, bias)
	ReferenceMatMul(want, x, m, w, bias)
	row := make([]float32, cols)
	for r := range rows {
		dequantizeRowGeneric(typ, w.row(r), row)
		for i := range m {
			var abs float64
			for c, v := range row {
				abs += math.Abs(float64(v) * float64(x[i*cols+c]))
			}
			if bias != nil {
				abs += math.Abs(float64(bias[r]))
			}
			tol := 4e-6*math.Sqrt(float64(cols))*abs + 1e-30
			if allowActQuant && (typ == Q8 || typ == Q4) {
				tol += activationQuantBound(x[i*cols:(i+1)*cols], row)
			}
			g, w := got[i*rows+r], want[i*rows+r]
			if e := math.Abs(float64(g - w)); !(e <= tol) {
				tb.Fatalf("%v m=%d rows=%d cols=%d bias=%v threads=%d: y[%d][%d] = %v, want %v (tol %g)",
					typ, m, rows, cols, withBias, p.Threads(), i, r, g, w, tol)
			}
		}
	}
	for i := m * rows; i < len(got); i++ {
		if !math.IsNaN(float64(got[i])) {
			tb.Fatalf("%v m=%d rows=%d cols=%d: wrote past y at %d", typ, m, rows, cols, i)
		}
	}
}

// activationQuantBound is the error the q8/q4 matrix-vector path may add
// by quantizing x to int8 per block of 32 (each element off by at most
// max|x_b|/254): sum over blocks of that times sum |w| over the block.
func activationQuantBound(x, w []float32) float64 {
	var bound float64
	for b := 0; b < len(x); b += BlockSize {
		var amax, wabs float64
		for c := b; c < min(b+BlockSize, len(x)); c++ {
			amax = max(amax, math.Abs(float64(x[c])))
			wabs += math.Abs(float64(w[c]))
		}
		bound += amax / 254 * wabs * 1.01
	}
	return bound
}

func TestMatMulMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	shapes := []struct{ rows, cols int }{
		{1, 1}, {1, 32}, {3, 17}, {5, 64}, {16, 172}, {17, 33}, {33, 100}, {64, 256}, {70, 513}, {129, 96},
	}
	for _, threads := range []int{1, 2, 3} {
		p := NewPool(threads)
		for _, typ := range allTypes {
			for _, s := range shapes {
				for _, m := range []int{1, 2, 3, 4, 5, 7, 8, 13, 16, 17} {
					checkMatMul(t, p, rng, typ, m, s.rows, s.cols, m%2 == 1)
				}
			}
		}
		p.Close()
	}
}

// With ExactQuantized, q8/q4 decode is float32 arithmetic on the stored
// weights: the tight tolerance holds for every m.
func TestExactQuantizedPoolMatchesReferenceTightly(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	p, err := NewPoolWith(PoolOptions{Threads: 2, ExactQuantized: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, typ := range []WeightType{Q8, Q4} {
		for _, m := range []int{1, 2, 3, 4, 6} {
			checkMatMulTol(t, p, rng, typ, m, 70, 545, true, false)
			checkMatMulTol(t, p, rng, typ, m, 70, 544, true, false) // whole blocks (the AVX2 int8 route)
		}
	}
	if _, err := NewPoolWith(PoolOptions{Threads: 0}); err == nil {
		t.Error("NewPoolWith(Threads: 0) succeeded, want an error")
	}
}

func TestMatMulLargeShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	p := NewPool(2)
	defer p.Close()
	for _, typ := range allTypes {
		for _, m := range []int{1, 6, 33} {
			checkMatMul(t, p, rng, typ, m, 300, 1100, false)
		}
	}
}

func TestMatMulDoesNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	p := NewPool(2)
	defer p.Close()
	for _, typ := range allTypes {
		for _, m := range []int{1, 9} {
			w, _ := randMatrix(t, rng, typ, 256, 320)
			x, y := randVec(rng, m*320), make([]float32, m*256)
			if n := testing.AllocsPerRun(20, func() { p.MatMul(y, x, m, w, nil) }); n != 0 {
				t.Errorf("%v m=%d: %v allocations per MatMul, want 0", typ, m, n)
			}
		}
	}
}

func TestMatMulAfterCloseRunsOnCaller(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	p := NewPool(2)
	p.Close()
	p.Close()
	checkMatMul(t, p, rng, Q8, 3, 40, 70, true)
}

func TestCheckMatMulNamesTheBadArgument(t *testing.T) {
	w := Matrix{Type: F32, Rows: 4, Cols: 3, Data: make([]byte, 48)}
	cases := []struct {
		name    string
		y, x    int
		m, bias int
		ok      bool
	}{
		{"fits", 8, 6, 2, 4, true},
		{"short x", 8, 5, 2, 0, false},
		{"short y", 7, 6, 2, 0, false},
		{"zero m", 8, 6, 0, 0, false},
		{"short bias", 8, 6, 2, 3, false},
	}
	for _, c := range cases {
		var bias []float32
		if c.bias > 0 {
			bias = make([]float32, c.bias)
		}
		err := w.CheckMatMul(make([]float32, c.y), make([]float32, c.x), c.m, bias)
		if (err == nil) != c.ok {
			t.Errorf("%s: CheckMatMul = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

func FuzzMatMul(f *testing.F) {
	f.Add(uint64(1), uint8(1), uint16(5), uint16(33), uint8(1), uint8(4))
	f.Add(uint64(2), uint8(4), uint16(17), uint16(172), uint8(2), uint8(5))
	f.Add(uint64(3), uint8(2), uint16(1), uint16(64), uint8(17), uint8(2))
	p := NewPool(2)
	f.Cleanup(p.Close)
	f.Fuzz(func(t *testing.T, seed uint64, typ uint8, rows, cols uint16, m uint8, bias uint8) {
		tp := WeightType(typ%5 + 1)
		r, c, mm := int(rows%300)+1, int(cols%700)+1, int(m%20)+1
		rng := rand.New(rand.NewPCG(seed, 0))
		checkMatMul(t, p, rng, tp, mm, r, c, bias%2 == 1)
	})
}

func BenchmarkMatMul(b *testing.B) {
	type shape struct{ m, rows, cols int }
	shapes := []shape{{1, 4096, 4096}, {1, 1024, 1024}, {1, 576, 1536}, {128, 1024, 1024}, {128, 2048, 2048}}
	for _, typ := range allTypes {
		for _, s := range shapes {
			for _, threads := range []int{1, 2} {
				name := fmt.Sprintf("type=%v/m=%d/rows=%d/cols=%d/threads=%d", typ, s.m, s.rows, s.cols, threads)
				b.Run(name, func(b *testing.B) {
					rng := rand.New(rand.NewPCG(1, 1))
					w := Matrix{Type: typ, Rows: s.rows, Cols: s.cols, Data: make([]byte, s.rows*typ.RowBytes(s.cols))}
					src := randVec(rng, s.rows*s.cols)
					if err := Quantize(typ, w.Data, src, s.rows, s.cols); err != nil {
						b.Fatal(err)
					}
					x, y := randVec(rng, s.m*s.cols), make([]float32, s.m*s.rows)
					p := NewPool(threads)
					defer p.Close()
					b.SetBytes(int64(len(w.Data)))
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						p.MatMul(y, x, s.m, w, nil)
					}
					flops := 2 * float64(s.m) * float64(s.rows) * float64(s.cols) * float64(b.N)
					b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkPoolOverhead measures the fixed cost of one MatMul dispatch: a
// tiny matrix so the time is the pool's wake-up and join.
func BenchmarkPoolOverhead(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			w, _ := randMatrix(b, rng, F32, 64, 64)
			x, y := randVec(rng, 64), make([]float32, 64)
			p := NewPool(threads)
			defer p.Close()
			b.ReportAllocs()
			for b.Loop() {
				p.MatMul(y, x, 1, w, nil)
			}
		})
	}
}

// TestGuidedChunks checks the matrix-vector split: chunks cover the rows in
// order, start on 16-row boundaries, never shrink below guidedMin bytes except
// the last, shrink as the work runs out, and fit the starts array.
func TestGuidedChunks(t *testing.T) {
	var starts [maxGuided + 1]int
	for _, threads := range []int{1, 2, 3, 8} {
		for _, rowBytes := range []int{34, 612, 1088, 4096, 12288} {
			for rows := 1; rows <= 200000; rows = rows*3/2 + 1 {
				n := guidedChunks(starts[:], rows, threads, rowBytes)
				if n < 1 || n > maxGuided || starts[0] != 0 || starts[n] != rows {
					t.Fatalf("rows %d threads %d rowBytes %d: %d chunks, starts %v", rows, threads, rowBytes, n, starts[:n+1])
				}
				if threads == 1 && n != 1 {
					t.Fatalf("rows %d: %d chunks on one thread", rows, n)
				}
				minRows := max((guidedMin/rowBytes+15)&^15, 16)
				for c := range n {
					size := starts[c+1] - starts[c]
					switch {
					case size <= 0:
						t.Fatalf("rows %d threads %d: empty chunk %d in %v", rows, threads, c, starts[:n+1])
					case starts[c]%16 != 0:
						t.Fatalf("rows %d threads %d: chunk %d starts at %d", rows, threads, c, starts[c])
					case c+1 < n && size < minRows:
						t.Fatalf("rows %d threads %d rowBytes %d: chunk %d has %d rows, want ≥ %d", rows, threads, rowBytes, c, size, minRows)
					case c > 0 && c+1 < n && size > starts[c]-starts[c-1]:
						t.Fatalf("rows %d threads %d: chunk %d grows: %v", rows, threads, c, starts[:n+1])
					}
				}
				if threads > 1 && rows*rowBytes >= 4*threads*guidedMin && n < threads {
					t.Fatalf("rows %d threads %d rowBytes %d: only %d chunks", rows, threads, rowBytes, n)
				}
			}
		}
	}
}

// TestRowChunk checks the matrix-product split: chunks are whole multiples
// of the alignment (so the AVX2 float tiles, 3 weight rows, are never cut to
// 1-row tiles inside a chunk), fit the pool's claim word, and give every
// thread several chunks of a large product.
func TestRowChunk(t *testing.T) {
	for _, align := range []int{16, 48} {
		for _, threads := range []int{2, 3, 8} {
			for rows := 1; rows <= 200000; rows = rows*3/2 + 1 {
				for _, work := range []int{1, 1 << 20, 1 << 30} {
					c := rowChunk(rows, threads, work, align)
					chunks := (rows + c - 1) / c
					switch {
					case c < align || c%align != 0:
						t.Fatalf("rows %d threads %d align %d: chunk %d", rows, threads, align, c)
					case chunks >= maxChunks:
						t.Fatalf("rows %d threads %d align %d: %d chunks", rows, threads, align, chunks)
					case work == 1<<30 && rows >= 64*align*threads && chunks < 4*threads:
						t.Fatalf("rows %d threads %d align %d: only %d chunks of %d rows", rows, threads, align, chunks, c)
					}
				}
			}
		}
	}
	if c := rowChunk(1024, 1, 1<<30, 48); c != 1024 {
		t.Fatalf("one thread: chunk %d, want all 1024 rows", c)
	}
}
