package exec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// geluErf (a table of cubics; its SIMD kernel where there is one) and geluErfGo against
// the float64 GELU on a grid of steps of 1e-5 over [-8, 8], its step ends and their
// neighbours included; the limits, infinities and NaN; every length of a SIMD tail.
func TestGELUIsWithin2e7OfFloat64OnAFineGrid(t *testing.T) {
	var x []float32
	for i := -800000; i <= 800000; i++ {
		x = append(x, float32(i)*1e-5)
	}
	for k := -geluSpan * geluSteps; k <= geluSpan*geluSteps; k++ {
		e := float32(k) / geluSteps
		x = append(x, e, math.Nextafter32(e, -10), math.Nextafter32(e, 10))
	}
	for _, f := range []struct {
		name string
		fn   func(dst, x []float32)
	}{{"geluErf", geluErf}, {"geluErfGo", geluErfGo}} {
		y := make([]float32, len(x))
		f.fn(y, x)
		worst, at := 0.0, float32(0)
		for i, v := range x {
			want := 0.5 * float64(v) * (1 + math.Erf(float64(v)/math.Sqrt2))
			if d := math.Abs(float64(y[i])-want) / max(1, math.Abs(want)); d > worst {
				worst, at = d, v
			}
		}
		if worst > 2e-7 {
			t.Errorf("%s is %.3g off the float64 GELU at %g, want ≤ 2e-7", f.name, worst, at)
		}
		inf := float32(math.Inf(1))
		lim := []float32{-inf, -1e30, -6, 6, 1e30, inf, float32(math.NaN())}
		want := []float32{0, 0, 0, 6, 1e30, inf}
		got := make([]float32, len(lim))
		f.fn(got, lim)
		for i, w := range want {
			if got[i] != w {
				t.Errorf("%s(%g) = %g, want %g", f.name, lim[i], got[i], w)
			}
		}
		if nan := got[len(lim)-1]; nan == nan {
			t.Errorf("%s(NaN) = %g", f.name, nan)
		}
		// Every tail length, in place, against the whole slice's values.
		for n := 1; n <= 40; n++ {
			z := append([]float32(nil), x[1000:1000+n]...)
			f.fn(z, z)
			for i := range z {
				if z[i] != y[1000+i] {
					t.Fatalf("%s of %d values in place: [%d] = %g, want %g", f.name, n, i, z[i], y[1000+i])
				}
			}
		}
	}
}

// Every row kernel against its float64 definition.
func TestRowKernelsMatchFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 997)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	x[0], x[1], x[2] = 0, 40, -40
	ref := map[string]func(float64) float64{
		"gelu":      func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) },
		"gelu_tanh": func(v float64) float64 { return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v))) },
		"silu":      func(v float64) float64 { return v / (1 + math.Exp(-v)) },
		"tanh":      math.Tanh,
		"relu":      func(v float64) float64 { return max(v, 0) },
	}
	kernel := map[string]func(dst, x []float32){"gelu": geluErf, "gelu_tanh": geluTanh, "silu": silu, "tanh": tanh32, "relu": relu}
	for name, f := range kernel {
		y := make([]float32, len(x))
		f(y, x)
		for i, v := range x {
			want := ref[name](float64(v))
			if d := math.Abs(float64(y[i]) - want); d > 2e-7*max(1, math.Abs(want)) {
				t.Errorf("%s(%g) = %g, float64 %g", name, v, y[i], want)
			}
		}
	}
	// layerNorm (kernels.LayerNorm at widths of multiples of 16) and layerNormGo, at
	// widths with and without a SIMD kernel, into y and in place.
	for _, n := range []int{997, 384, 16} {
		x := x[:n]
		w, b := make([]float32, n), make([]float32, n)
		for i := range w {
			w[i], b[i] = float32(r.Float64()+0.5), float32(r.Float64()-0.5)
		}
		var mean, v float64
		for _, a := range x {
			mean += float64(a)
		}
		mean /= float64(n)
		for _, a := range x {
			v += (float64(a) - mean) * (float64(a) - mean)
		}
		v /= float64(n)
		for _, f := range []struct {
			name string
			fn   func(dst, x, w, b []float32, eps float32)
		}{{"layerNorm", layerNorm}, {"layerNormGo", layerNormGo}} {
			y := make([]float32, n)
			f.fn(y, x, w, b, 1e-5)
			z := append([]float32(nil), x...)
			f.fn(z, z, w, b, 1e-5)
			for i, a := range x {
				want := (float64(a)-mean)/math.Sqrt(v+1e-5)*float64(w[i]) + float64(b[i])
				if d := math.Abs(float64(y[i]) - want); d > 1e-6*max(1, math.Abs(want)) {
					t.Fatalf("%s of %d [%d] = %g, float64 %g", f.name, n, i, y[i], want)
				}
				if z[i] != y[i] {
					t.Fatalf("%s of %d [%d] in place = %g, not %g", f.name, n, i, z[i], y[i])
				}
			}
		}
	}
	y := make([]float32, len(x))
	l2Normalize(y, x, 1e-12)
	var n float64
	for _, a := range x {
		n += float64(a) * float64(a)
	}
	for i, a := range x {
		if d := math.Abs(float64(y[i]) - float64(a)/math.Sqrt(n)); d > 1e-7 {
			t.Fatalf("l2Normalize[%d] = %g, float64 %g", i, y[i], float64(a)/math.Sqrt(n))
		}
	}
	zero := make([]float32, 4)
	l2Normalize(zero, zero, 1e-12)
	if zero[0] != 0 {
		t.Errorf("l2Normalize of zeros = %v", zero)
	}
}

func BenchmarkGELU(b *testing.B) {
	x := make([]float32, 1536*128)
	for i := range x {
		x[i] = float32(i%1000)/100 - 5
	}
	y := make([]float32, len(x))
	b.ReportAllocs()
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		geluErf(y, x)
	}
}

func BenchmarkLayerNorm(b *testing.B) {
	const rows, width = 128, 384
	x := make([]float32, rows*width)
	for i := range x {
		x[i] = float32(i%1000)/100 - 5
	}
	w, bias := make([]float32, width), make([]float32, width)
	for i := range w {
		w[i], bias[i] = 1, 0.5
	}
	y := make([]float32, len(x))
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		for r := range rows {
			layerNorm(y[r*width:(r+1)*width], x[r*width:(r+1)*width], w, bias, 1e-12)
		}
	}
}
