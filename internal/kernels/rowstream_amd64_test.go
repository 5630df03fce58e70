//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// hasAVX2 reports whether this CPU runs the AVX2 kernels (selected only where
// AVX-512 is missing, but callable on any CPU with these features).
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// The rowStream kernels compute a matrix-vector product with the arithmetic of
// the 1×nr float tiles: bit-identical outputs, for every float weight type, row
// widths with and without a tail, and any number of rows; AVX-512 and AVX2.
func TestRowStreamEqualsTilesBitForBit(t *testing.T) {
	var sets []tileSet
	if useAVX512 {
		sets = append(sets, tilesAVX512)
	}
	if hasAVX2 {
		sets = append(sets, tilesAVX2)
	}
	if len(sets) == 0 {
		t.Skip("rowStream kernels need AVX-512 or AVX2")
	}
	for _, ts := range sets {
		testRowStream(t, ts)
	}
}

func testRowStream(t *testing.T, ts tileSet) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []WeightType{F32, F16, BF16} {
		for _, s := range []struct{ rows, cols int }{{1, 16}, {7, 48}, {13, 64}, {5, 70}, {41, 1024}, {3, 257}, {9, 8}} {
			w, _ := randMatrix(t, rng, typ, s.rows, s.cols)
			x := randVec(rng, s.cols)
			rb := typ.RowBytes(s.cols)
			run := func(stream bool) []float32 {
				defer func(old bool) { useRowStream = old }(useRowStream)
				useRowStream = stream
				y := randVec(rand.New(rand.NewPCG(7, 8)), s.rows) // accumulates into y
				floatTiles(ts, typ, y, s.rows, x, 1, s.cols, w.Data, rb, s.rows, nil)
				return y
			}
			got, want := run(true), run(false)
			for r := range want {
				if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
					t.Errorf("%d lanes %v %dx%d row %d: rowStream %g, tiles %g", ts.lanes, typ, s.rows, s.cols, r, got[r], want[r])
					break
				}
			}
		}
	}
}

// rope<suffix> rounds like ropeGeneric: bit-identical rotations, tails
// included, on every route.
func TestRoPEEqualsGenericBitForBitOnEveryRoute(t *testing.T) {
	for _, r := range Routes() {
		onRoute(t, r, func() {
			rng := rand.New(rand.NewPCG(11, 12))
			for _, h := range []int{8, 16, 32, 40, 64, 100} {
				x1, x2, c, s := randVec(rng, h), randVec(rng, h), randVec(rng, h), randVec(rng, h)
				a1, a2 := append([]float32(nil), x1...), append([]float32(nil), x2...)
				rope(x1, x2, c, s)
				ropeGeneric(a1, a2, c, s)
				for i := range h {
					if math.Float32bits(x1[i]) != math.Float32bits(a1[i]) || math.Float32bits(x2[i]) != math.Float32bits(a2[i]) {
						t.Fatalf("%s h %d [%d]: (%g, %g), generic (%g, %g)", r, h, i, x1[i], x2[i], a1[i], a2[i])
					}
				}
			}
		})
	}
}

// The AVX2 exp (VROUNDPS, and 2^n built in two halves) equals the AVX-512
// one (VRNDSCALEPS, VSCALEFPS) bit for bit over the whole clamped range,
// subnormal results included: softmax and the gated activations agree
// between the routes.
func TestExpAVX2EqualsAVX512BitForBit(t *testing.T) {
	if !slicesContainsPrefix(Routes(), "avx512") || !hasAVX2 {
		t.Log("needs a CPU with both AVX-512 and AVX2")
		return
	}
	rng := rand.New(rand.NewPCG(13, 14))
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(-110 + 200*rng.Float64())
	}
	x[0], x[1], x[2], x[3] = -104, 88.7, -87.5, 0
	for i := 4; i < 64; i++ {
		x[i] = float32(-103 + 0.25*float64(i)) // exp near and below the smallest normal
	}
	a, b := slices.Clone(x), slices.Clone(x)
	expSumAVX512(&a[0], len(a), 0) // (the sums add in different orders)
	expSumAVX2(&b[0], len(b), 0)
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("exp(%g): AVX2 %g, AVX-512 %g", x[i], b[i], a[i])
		}
	}
}

// On CPUs with AVX2 but not AVX-512, q4 matrix-vector products of whole
// blocks (and q8 ones in ExactQuantized pools) stream rows through
// rowStreamQ4AVX2 / rowStreamQ8AVX2, which must equal the dequantize-then-dot
// path bit for bit (with and without bias, on 1 and 2 threads; the two
// largest shapes are split into several row chunks).
func TestQuantStreamAVX2EqualsRowsBitForBit(t *testing.T) {
	if !hasAVX2 {
		t.Skip("needs AVX2")
	}
	onRoute(t, "avx2", func() { testQuantStreamAVX2(t) })
}

func testQuantStreamAVX2(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, typ := range []WeightType{Q8, Q4} {
		for _, s := range []struct{ rows, cols int }{{1, 32}, {7, 64}, {5, 96}, {3, 576}, {41, 1024}, {300, 128}, {2000, 1024}, {3001, 576}} {
			w, _ := randMatrix(t, rng, typ, s.rows, s.cols)
			x, bias := randVec(rng, s.cols), randVec(rng, s.rows)
			for _, threads := range []int{1, 2} {
				for _, b := range [][]float32{nil, bias} {
					run := func(stream bool) []float32 {
						defer func(old bool) { useRowStream = old }(useRowStream)
						useRowStream = stream
						p, err := NewPoolWith(PoolOptions{Threads: threads, ExactQuantized: true})
						if err != nil {
							t.Fatal(err)
						}
						defer p.Close()
						y := make([]float32, s.rows)
						p.MatMul(y, x, 1, w, b)
						return y
					}
					got, want := run(true), run(false)
					for r := range want {
						if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
							t.Fatalf("%v %dx%d threads %d bias %v row %d: stream %g, rows %g", typ, s.rows, s.cols, threads, b != nil, r, got[r], want[r])
						}
					}
				}
			}
		}
	}
}

func slicesContainsPrefix(s []string, prefix string) bool {
	return slices.ContainsFunc(s, func(e string) bool { return strings.HasPrefix(e, prefix) })
}

// Every row of a float matrix product (tiles, carried over column blocks
// when the rows are long) equals the matrix-vector product of that row
// alone (the row stream), bit for bit, on every route, with and without
// bias, on 1 and 2 threads.
func TestFloatRowsEqualAloneBitForBitOnEveryRoute(t *testing.T) {
	for _, r := range Routes() {
		onRoute(t, r, func() {
			rng := rand.New(rand.NewPCG(61, 62))
			for _, typ := range []WeightType{F32, F16, BF16} {
				for _, s := range []struct{ m, rows, cols int }{{2, 7, 64}, {5, 45, 1024}, {4, 41, 1030}, {7, 50, 2048}, {9, 43, 3072}, {3, 5, 2100}, {13, 90, 1500}} {
					w, _ := randMatrix(t, rng, typ, s.rows, s.cols)
					x := randVec(rng, s.m*s.cols)
					var bias []float32
					if rng.IntN(2) == 0 {
						bias = randVec(rng, s.rows)
					}
					for _, threads := range []int{1, 2} {
						p := NewPool(threads)
						y := make([]float32, s.m*s.rows)
						p.MatMul(y, x, s.m, w, bias)
						y1 := make([]float32, s.rows)
						for i := range s.m {
							p.MatMul(y1, x[i*s.cols:(i+1)*s.cols], 1, w, bias)
							for k := range y1 {
								if math.Float32bits(y[i*s.rows+k]) != math.Float32bits(y1[k]) {
									t.Fatalf("%s %v %v threads=%d: y[%d][%d] = %v, alone %v", r, typ, s, threads, i, k, y[i*s.rows+k], y1[k])
								}
							}
						}
						p.Close()
					}
				}
			}
		})
	}
}
