//go:build arm64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// quantizeBlockGo is the arithmetic quantizeXNEON does for one block of 32,
// in Go: dx = max|x|/127 and q = x·(127/max|x|) rounded to nearest even,
// saturated to ±127 (0 for NaN products), offset = -8·sum(q).
func quantizeBlockGo(x []float32) (q [BlockSize]int8, dx float32, off int32) {
	var amax float32
	for _, v := range x {
		a := float32(math.Abs(float64(v)))
		if a != a || amax != amax {
			amax = float32(math.NaN())
			continue
		}
		amax = max(amax, a)
	}
	dx = amax / 127
	inv := 127 / amax
	var sum int32
	for i, v := range x {
		p := v * inv
		var r float64
		if p == p {
			r = max(-128, min(127, math.RoundToEven(float64(p))))
		}
		q[i] = int8(r)
		sum += int32(q[i])
	}
	return q, dx, -8 * sum
}

func testBlocks(rng *rand.Rand, nb int) []float32 {
	x := randVec(rng, nb*BlockSize)
	for b := range nb {
		blk := x[b*BlockSize : (b+1)*BlockSize]
		switch b % 7 {
		case 1:
			clear(blk) // zeros: dx 0
		case 2:
			blk[5] = float32(math.NaN())
		case 3:
			blk[9] = float32(math.Inf(-1))
		case 4:
			for i := range blk {
				blk[i] *= 1e-30
			}
		case 5:
			for i := range blk {
				blk[i] = float32(i%3) - 1 // ties at ±0.5·dx
			}
		}
	}
	return x
}

// Both quantization layouts hold exactly what quantizeBlockGo computes.
func TestQuantizeXNEONMatchesGo(t *testing.T) {
	if !useNEON {
		t.Skip("needs the neon+dotprod route")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nb := range []int{1, 2, 3, 7, 18} {
		x := testBlocks(rng, nb)
		q := make([]byte, nb*BlockSize)
		dx, off := make([]float32, nb), make([]int32, nb)
		quantizeXNEON(&x[0], nb, &q[0], &dx[0], &off[0])
		rec := make([]byte, nb*qRecBytes)
		for r := range 4 {
			quantizeXTNEON(&x[0], nb, &rec[0], r)
		}
		for b := range nb {
			wq, wdx, woff := quantizeBlockGo(x[b*BlockSize : (b+1)*BlockSize])
			r := rec[b*qRecBytes:]
			for l := range 4 {
				if math.Float32bits(dx[b]) != math.Float32bits(wdx) || math.Float32bits(le32f(r[4*l:])) != math.Float32bits(wdx) {
					t.Fatalf("nb %d block %d: dx %v (transposed lane %d: %v), want %v", nb, b, dx[b], l, le32f(r[4*l:]), wdx)
				}
				if off[b] != woff || int32(le32(r[16+4*l:])) != woff {
					t.Fatalf("nb %d block %d: offset %d (transposed %d), want %d", nb, b, off[b], int32(le32(r[16+4*l:])), woff)
				}
				for i := range BlockSize {
					k := i / 4
					if int8(q[b*BlockSize+i]) != wq[i] || int8(r[32+16*k+4*l+i%4]) != wq[i] {
						t.Fatalf("nb %d block %d value %d: %d (transposed %d), want %d", nb, b, i, int8(q[b*BlockSize+i]), int8(r[32+16*k+4*l+i%4]), wq[i])
					}
				}
			}
		}
	}
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func le32f(b []byte) float32 { return math.Float32frombits(le32(b)) }
func f16At(b []byte) float32 { return f16ToF32(uint16(b[0]) | uint16(b[1])<<8) }
func withRoute(t *testing.T) {
	if !useNEON {
		t.Skip("needs the neon+dotprod route")
	}
}

// The q8/q4 products compute each output as the exact integer block sums
// of the quantized activations and weights, scaled per block: within
// float32 rounding of that sum in float64.
func TestQProductsMatchTheirExactArithmetic(t *testing.T) {
	withRoute(t)
	rng := rand.New(rand.NewPCG(3, 4))
	p := NewPool(2)
	defer p.Close()
	for _, typ := range []WeightType{Q8, Q4} {
		for _, cols := range []int{1, 31, 32, 33, 64, 96, 100, 128, 160, 545, 576, 1000} {
			for _, m := range []int{1, 2, 5, 9} {
				rows := 1 + rng.IntN(13)
				w, _ := randMatrix(t, rng, typ, rows, cols)
				x := randVec(rng, m*cols)
				y := make([]float32, m*rows)
				p.MatMul(y, x, m, w, nil)
				nb := (cols + BlockSize - 1) / BlockSize
				wr := make([]float32, nb*BlockSize)
				for i := range m {
					xp := make([]float32, nb*BlockSize)
					copy(xp, x[i*cols:(i+1)*cols])
					for r := range rows {
						dequantizeRowGeneric(typ, w.row(r), wr[:cols])
						var want, mag float64
						for b := range nb {
							q, dx, _ := quantizeBlockGo(xp[b*BlockSize : (b+1)*BlockSize])
							dw := f16At(w.row(r)[2*b:])
							var s float64
							for k := range BlockSize {
								if dw != 0 {
									s += float64(q[k]) * float64(wr[b*BlockSize+k]/dw)
								}
							}
							want += float64(dw) * float64(dx) * s
							mag += math.Abs(float64(dw) * float64(dx) * s)
						}
						tol := 4e-6*math.Sqrt(float64(cols))*(mag+sumAbsProd(xp[:cols], wr[:cols])) + 1e-30
						if g := y[i*rows+r]; math.Abs(float64(g)-want) > tol {
							t.Fatalf("%v m=%d rows=%d cols=%d: y[%d][%d] = %v, want %v (tol %g)", typ, m, rows, cols, i, r, g, want, tol)
						}
					}
				}
			}
		}
	}
}

// Every row of a product of m rows (the tiles: batched decode and prefill)
// equals the matrix-vector product of that row alone (the streams), bit for
// bit, for every weight type, on 1 and 2 threads, whole and partial panels,
// row widths with and without a tail.
func TestProductRowsEqualMatrixVectorBitForBit(t *testing.T) {
	withRoute(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		for _, typ := range allTypes {
			for _, cols := range []int{1, 8, 32, 33, 64, 96, 128, 160, 545, 576, 1536} {
				for _, m := range []int{2, 3, 4, 5, 8, 9, 13, 17} {
					rows := 1 + rng.IntN(40)
					if cols <= 64 && rng.IntN(2) == 0 {
						rows += 700 // several panels
					}
					w, _ := randMatrix(t, rng, typ, rows, cols)
					x := randVec(rng, m*cols)
					var bias []float32
					if rng.IntN(2) == 0 {
						bias = randVec(rng, rows)
					}
					want := make([]float32, m*rows)
					for i := range m {
						p.MatMul(want[i*rows:(i+1)*rows], x[i*cols:(i+1)*cols], 1, w, bias)
					}
					got := make([]float32, m*rows)
					p.MatMul(got, x, m, w, bias)
					for k := range got {
						if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
							t.Fatalf("%v threads=%d m=%d rows=%d cols=%d: y[%d][%d] = %v, alone %v", typ, threads, m, rows, cols, k/rows, k%rows, got[k], want[k])
						}
					}
					if !slices.Equal(got, want) {
						t.Fatal("unreachable")
					}
				}
			}
		}
		p.Close()
	}
}

// ropeNEON rounds like ropeGeneric: bit-identical rotations, tails included.
func TestRoPENEONEqualsGenericBitForBit(t *testing.T) {
	withRoute(t)
	rng := rand.New(rand.NewPCG(11, 12))
	for _, h := range []int{4, 16, 32, 34, 64, 100} {
		x1, x2, c, s := randVec(rng, h), randVec(rng, h), randVec(rng, h), randVec(rng, h)
		a1, a2 := slices.Clone(x1), slices.Clone(x2)
		rope(x1, x2, c, s)
		ropeGeneric(a1, a2, c, s)
		for i := range h {
			if math.Float32bits(x1[i]) != math.Float32bits(a1[i]) || math.Float32bits(x2[i]) != math.Float32bits(a2[i]) {
				t.Fatalf("h %d [%d]: (%g, %g), generic (%g, %g)", h, i, x1[i], x2[i], a1[i], a2[i])
			}
		}
	}
}

// The float row streams compute a matrix-vector product with the arithmetic
// of the 1×n tiles: bit-identical outputs, for every float type, widths with
// and without a tail, and any number of rows.
func TestRowStreamEqualsTilesBitForBit(t *testing.T) {
	withRoute(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []WeightType{F32, F16, BF16} {
		for _, s := range []struct{ rows, cols int }{{1, 8}, {7, 48}, {13, 64}, {5, 70}, {41, 1024}, {3, 257}, {9, 16}, {6, 24}} {
			w, _ := randMatrix(t, rng, typ, s.rows, s.cols)
			x := randVec(rng, s.cols)
			rb := typ.RowBytes(s.cols)
			run := func(stream bool) []float32 {
				defer func(old bool) { useRowStream = old }(useRowStream)
				useRowStream = stream
				y := randVec(rand.New(rand.NewPCG(7, 8)), s.rows) // accumulates into y
				floatTiles(typ, y, s.rows, x, 1, s.cols, w.Data, rb, s.rows)
				return y
			}
			got, want := run(true), run(false)
			for r := range want {
				if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
					t.Fatalf("%v %dx%d row %d: stream %g, tiles %g", typ, s.rows, s.cols, r, got[r], want[r])
				}
			}
		}
	}
}

// The pure-Go route must stay correct on arm64 CPUs without dotprod.
func TestGenericRouteOnARM64(t *testing.T) {
	defer func(old bool) { useNEON = old }(useNEON)
	useNEON = false
	t.Run("rows", TestElementwiseKernelsMatchReference)
	t.Run("dot", TestDotAndAxpyMatchReference)
	t.Run("f16", TestF16SliceConversionsMatchScalar)
	t.Run("rmsnorm", TestRMSNormMatchesReference)
	t.Run("softmax", TestSoftmaxMatchesReference)
	t.Run("batched", TestBatchedRowKernels)
	t.Run("multiquery", TestMultiQueryKernels)
	t.Run("dequant", TestQuantizeDequantizeErrorWithinFormatBound)
	t.Run("gather", TestGatherRowsScalesSelectedRows)
}
