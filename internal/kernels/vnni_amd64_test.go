//go:build amd64 && !purego

package kernels

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// emulateVNNIRow is the exact arithmetic of the VNNI matrix-vector path:
// x quantized per block like quantizeX, integer dot products, float64 sum.
func emulateVNNIRow(x, w []float32, scales []float32) float64 {
	var y float64
	for b := 0; b*BlockSize < len(x); b++ {
		blk := x[b*BlockSize : min(len(x), (b+1)*BlockSize)]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		dx := amax * float32(1.0/127)
		inv := 127 / max(amax, 1e-30)
		var isum float64
		for k, v := range blk {
			q := math.RoundToEven(float64(v * inv))
			isum += q * float64(w[b*BlockSize+k]/scales[b])
		}
		y += float64(scales[b]) * float64(dx) * isum
	}
	return y
}

func TestVNNIMatrixVectorMatchesItsExactArithmetic(t *testing.T) {
	if !useVNNI {
		t.Log("no AVX-512 VNNI on this CPU: the VNNI kernels are not used")
		return
	}
	rng := rand.New(rand.NewPCG(41, 42))
	p := NewPool(2)
	defer p.Close()
	for _, typ := range []WeightType{Q8, Q4} {
		for _, cols := range []int{1, 31, 32, 33, 64, 100, 160, 172, 224, 256, 288, 300, 416, 480, 511, 512, 545, 736, 1000} {
			for _, m := range []int{1, 2, 3, 5} {
				rows := 1 + rng.IntN(13)
				w, _ := randMatrix(t, rng, typ, rows, cols)
				x := randVec(rng, m*cols)
				y := make([]float32, m*rows)
				p.MatMul(y, x, m, w, nil)
				row := make([]float32, cols)
				nb := (cols + BlockSize - 1) / BlockSize
				scales := make([]float32, nb)
				for r := range rows {
					dequantizeRowGeneric(typ, w.row(r), row)
					for b := range scales {
						scales[b] = f16ToF32(uint16(w.row(r)[2*b]) | uint16(w.row(r)[2*b+1])<<8)
						if scales[b] == 0 {
							scales[b] = 1
						}
					}
					for i := range m {
						want := emulateVNNIRow(x[i*cols:(i+1)*cols], row, scales)
						tol := 4e-6*math.Sqrt(float64(cols))*sumAbsProd(x[i*cols:(i+1)*cols], row) + 1e-30
						if g := y[i*rows+r]; math.Abs(float64(g)-want) > tol {
							t.Fatalf("%v m=%d rows=%d cols=%d: y[%d][%d] = %v, want %v (tol %g)", typ, m, rows, cols, i, r, g, want, tol)
						}
					}
				}
			}
		}
	}
}

// Every row of a q8/q4 matrix product (the batch stream for up to
// batchStreamMax rows, in passes beyond vnniBatchMax, the tiles beyond, and
// the tiles alone with the stream off, also in chunks of one panel) equals the matrix-vector product of
// that row alone, bit for bit.
func TestVNNIMatrixProductRowsEqualMatrixVectorBitForBit(t *testing.T) {
	if !useVNNI {
		t.Log("no AVX-512 VNNI on this CPU: the VNNI kernels are not used")
		return
	}
	rng := rand.New(rand.NewPCG(43, 44))
	defaultChunk := vnniTileChunkBytes
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		for _, typ := range []WeightType{Q8, Q4} {
			for _, cols := range []int{1, 31, 32, 33, 64, 100, 224, 480, 512, 545, 576, 1000, 1536} {
				for _, m := range []int{2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 24, 31, 32, 33} {
					rows := 1 + rng.IntN(70)
					if cols <= 64 && rng.IntN(2) == 0 {
						rows += 400 // several blocks of weight rows (batchBlockBytes)
					}
					w, _ := randMatrix(t, rng, typ, rows, cols)
					x := randVec(rng, m*cols)
					var bias []float32
					if rng.IntN(2) == 0 {
						bias = randVec(rng, rows)
					}
					y1 := make([]float32, rows)
					want := make([]float32, m*rows)
					for i := range m {
						p.MatMul(y1, x[i*cols:(i+1)*cols], 1, w, bias)
						copy(want[i*rows:], y1)
					}
					for run := range 3 {
						// the stream, the tiles, the tiles in chunks of one panel
						stream := run == 0
						useBatchStream = stream
						if run == 2 {
							vnniTileChunkBytes = 1
						}
						y := make([]float32, m*rows)
						p.MatMul(y, x, m, w, bias)
						useBatchStream, vnniTileChunkBytes = true, defaultChunk
						for i := range m {
							for r := range rows {
								if got, want := y[i*rows+r], want[i*rows+r]; math.Float32bits(got) != math.Float32bits(want) {
									t.Fatalf("%v threads=%d m=%d rows=%d cols=%d run %d: y[%d][%d] = %v, MatMul of that row alone gives %v", typ, threads, m, rows, cols, run, i, r, got, want)
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

// transposeXQ8 is the reference for quantizeXQ8T: it rearranges q8-quantized activations (whole groups of 16
// blocks) for vnniTileQ8: in each group, vector k (64 bytes) holds bytes
// 4k..4k+3 of block b at bytes 4b..4b+3.
func transposeXQ8(dst, src []byte) {
	s := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(src))), len(src)/4)
	d := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst)/4)
	for g := 0; g+128 <= len(s); g += 128 {
		sg, dg := s[g:g+128:g+128], d[g:g+128:g+128]
		for b := range 16 {
			for k := range 8 {
				dg[k*16+b] = sg[b*8+k]
			}
		}
	}
}

// quantizeXQ8T writes what quantizeXQ8 then transposeXQ8 write, scales and sums included.
func TestQuantizeXQ8TEqualsQuantizeThenTranspose(t *testing.T) {
	if !useVNNI {
		t.Skip("needs AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, nb := range []int{16, 32, 48} {
		x := randVec(rng, nb*BlockSize)
		x[3] = 0
		for i := 40; i < 72 && i < len(x); i++ {
			x[i] = 0 // an all-zero block
		}
		q, want := make([]byte, nb*BlockSize), make([]byte, nb*BlockSize)
		dx, xs := make([]float32, nb), make([]float32, nb)
		quantizeXQ8(&x[0], nb, &q[0], &dx[0], &xs[0])
		transposeXQ8(want, q)
		got := make([]byte, nb*BlockSize)
		dx2, xs2 := make([]float32, nb), make([]float32, nb)
		quantizeXQ8T(&x[0], nb, &got[0], &dx2[0], &xs2[0])
		if !bytes.Equal(got, want) {
			t.Errorf("nb %d: quantizeXQ8T bytes differ from quantizeXQ8 + transposeXQ8", nb)
		}
		if !slices.Equal(dx, dx2) || !slices.Equal(xs, xs2) {
			t.Errorf("nb %d: scales or sums differ", nb)
		}
	}
}
