package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The rowStream kernels compute a matrix-vector product with the arithmetic of
// the 1×nr float tiles: bit-identical outputs, for every float weight type, row
// widths with and without a tail, and any number of rows.
func TestRowStreamEqualsTilesBitForBit(t *testing.T) {
	if !useAVX512 {
		t.Skip("rowStream kernels need AVX-512") // the AVX2 tiles have no row-stream form
	}
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
				floatTiles(tilesAVX512, typ, y, s.rows, x, 1, s.cols, w.Data, rb, s.rows)
				return y
			}
			got, want := run(true), run(false)
			for r := range want {
				if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
					t.Errorf("%v %dx%d row %d: rowStream %g, tiles %g", typ, s.rows, s.cols, r, got[r], want[r])
					break
				}
			}
		}
	}
}
