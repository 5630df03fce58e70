package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPackedMatMul checks the packed product against float64 sums, and each
// row of a batch bit for bit against the row computed alone.
func TestPackedMatMul(t *testing.T) {
	w0 := PackF32(Matrix{Type: F32, Rows: 1, Cols: 1, Data: make([]byte, 4)}, nil)
	if !packedSupported() {
		if w0 != nil {
			t.Fatal("PackF32 packed without a packed product")
		}
		return
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for _, threads := range []int{1, 3} {
		p := NewPool(threads)
		for _, s := range []struct{ n, k int }{{40, 17}, {384, 384}, {64, 600}, {33, 1536}} {
			w := randVec(rng, s.n*s.k)
			mat := Matrix{Type: F32, Rows: s.n, Cols: s.k, Data: make([]byte, 4*s.n*s.k)}
			Quantize(F32, mat.Data, w, s.n, s.k)
			pw := PackF32(mat, nil)
			j := NewPackedMatMul(pw)
			for _, m := range []int{1, 5, 12, 13, 300, 600} {
				for _, withBias := range []bool{false, true} {
					x := randVec(rng, m*s.k)
					var bias []float32
					if withBias {
						bias = randVec(rng, s.n)
					}
					y := make([]float32, m*s.n)
					j.Run(p, y, x, m, bias)
					// An epilogue applies to every output once: y2 = 2·y exactly.
					y2 := make([]float32, m*s.n)
					j.Epilogue = func(dst, x []float32) {
						for i, v := range x {
							dst[i] = 2 * v
						}
					}
					j.Run(p, y2, x, m, bias)
					j.Epilogue = nil
					for i := range y {
						if y2[i] != 2*y[i] {
							t.Fatalf("threads %d n %d k %d m %d: epilogue gives %v at %d, want 2 × %v", threads, s.n, s.k, m, y2[i], i, y[i])
						}
					}
					one := make([]float32, s.n)
					for i := range m {
						for r := range s.n {
							var want float64
							if bias != nil {
								want = float64(bias[r])
							}
							for k := range s.k {
								want += float64(x[i*s.k+k]) * float64(w[r*s.k+k])
							}
							if d := math.Abs(float64(y[i*s.n+r]) - want); d > 1e-4*math.Sqrt(float64(s.k)) {
								t.Fatalf("threads %d n %d k %d m %d row %d col %d: %v, want %v", threads, s.n, s.k, m, i, r, y[i*s.n+r], want)
							}
						}
						if i%37 == 0 || i == m-1 {
							j.Run(p, one, x[i*s.k:(i+1)*s.k], 1, bias)
							for r := range s.n {
								if one[r] != y[i*s.n+r] {
									t.Fatalf("threads %d n %d k %d m %d row %d col %d: %v in the batch, %v alone", threads, s.n, s.k, m, i, r, y[i*s.n+r], one[r])
								}
							}
						}
					}
				}
			}
		}
		p.Close()
	}
}

// TestPanelMulAdd checks one panel's product against float64 sums, for strided rows
// and fewer than 32 columns.
func TestPanelMulAdd(t *testing.T) {
	if !HasPacked() {
		return
	}
	rng := rand.New(rand.NewPCG(7, 9))
	for _, c := range []struct{ m, kc, n, ldx, ldy int }{{1, 1, 1, 1, 1}, {13, 32, 32, 40, 70}, {64, 128, 17, 130, 33}, {25, 64, 32, 64, 32}} {
		x, p := randVec(rng, c.m*c.ldx), randVec(rng, c.kc*PanelWidth)
		y := randVec(rng, c.m*c.ldy)
		y0 := append([]float32(nil), y...)
		PanelMulAdd(y, c.ldy, x, c.ldx, c.m, p, c.kc, c.n)
		for i := range c.m {
			for col := range c.ldy {
				want := float64(y0[i*c.ldy+col])
				if col < c.n {
					for k := range c.kc {
						want += float64(x[i*c.ldx+k]) * float64(p[k*PanelWidth+col])
					}
				}
				if d := math.Abs(float64(y[i*c.ldy+col]) - want); d > 1e-4 {
					t.Fatalf("%+v: y[%d][%d] = %v, want %v", c, i, col, y[i*c.ldy+col], want)
				}
			}
		}
	}
}

// TestPackPanel checks PackPanel's layout for fewer rows than a panel and columns
// not a multiple of 16.
func TestPackPanel(t *testing.T) {
	if !HasPacked() {
		return
	}
	rng := rand.New(rand.NewPCG(2, 4))
	for _, c := range []struct{ rows, cols, ld int }{{32, 32, 40}, {5, 17, 20}, {1, 64, 64}} {
		src := randVec(rng, c.rows*c.ld)
		dst := make([]float32, (c.cols+15)/16*16*PanelWidth)
		PackPanel(dst, src, c.ld, c.rows, c.cols)
		for k := range c.cols {
			for r := range c.rows {
				if dst[k*PanelWidth+r] != src[r*c.ld+k] {
					t.Fatalf("%+v: dst[%d][%d] = %v, want %v", c, k, r, dst[k*PanelWidth+r], src[r*c.ld+k])
				}
			}
		}
	}
}
