//go:build !purego

package kernels

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"
)

var sweepBytes = flag.Int("sweep-bytes", 1<<30, "BenchmarkMatVecSweep: bytes of weights swept per pass")

// hugeAlloc returns n bytes of anonymous memory advised for 2 MiB pages, as a
// program mapped by internal/mmap is.
func hugeAlloc(tb testing.TB, n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		tb.Fatal(err)
	}
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	tb.Cleanup(func() { unix.Munmap(b) })
	return b
}

// BenchmarkMatVecSweep is a decode step's memory traffic: matrix-vector products
// over -sweep-bytes of float32 weights (far more than the caches), one matrix after
// the other, each as wide as a Qwen3-0.6B projection. It reports the GB/s of weights
// streamed, per float tile width (nr, the weight rows one kernel call reads at once)
// on one thread, for MatMul on 1 and 2 threads, and for q8 and q4 weights of the same
// shapes (as many matrices, fewer bytes). AVX2-tiles and AVX2-rowStream run the
// float kernels of CPUs without AVX-512 on one thread.
func BenchmarkMatVecSweep(b *testing.B) {
	const rows, cols = 3072, 1024
	rb := F32.RowBytes(cols)
	nmat := max(*sweepBytes/(rows*rb), 1)
	data := hugeAlloc(b, nmat*rows*rb)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(data); i += 4 {
		data[i+1] = byte(rng.Uint32()) // small random floats: only mantissa bytes set
	}
	x, y := randVec(rng, cols), make([]float32, rows)
	mats := make([]Matrix, nmat)
	for i := range mats {
		mats[i] = Matrix{Type: F32, Rows: rows, Cols: cols, Data: data[i*rows*rb : (i+1)*rows*rb]}
	}
	if useAVX512 {
		for nr := 1; nr <= tileN; nr++ {
			b.Run(fmt.Sprintf("tile=1x%d", nr), func(b *testing.B) {
				ts := tilesAVX512
				ts.n, ts.rows = nr, nil
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					for _, w := range mats {
						floatTiles(ts, F32, y, rows, x, 1, cols, w.Data, rb, rows, nil)
					}
				}
			})
		}
	}
	if useAVX512 {
		b.Run("rowStream", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				for _, w := range mats {
					floatTiles(tilesAVX512, F32, y, rows, x, 1, cols, w.Data, rb, rows, nil)
				}
			}
		})
	}
	if hasAVX2 { // the kernels of CPUs without AVX-512, on this one
		for _, stream := range []bool{false, true} {
			name := "AVX2-tiles"
			ts := tilesAVX2
			if stream {
				name = "AVX2-rowStream"
			} else {
				ts.rows = nil
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					for _, w := range mats {
						floatTiles(ts, F32, y, rows, x, 1, cols, w.Data, rb, rows, nil)
					}
				}
			})
		}
	}
	for _, c := range []struct {
		name    string
		threads int
		stream  bool
	}{{"MatMul/threads=1", 1, true}, {"MatMul-tiles/threads=1", 1, false}, {"MatMul/threads=2", 2, true}, {"MatMul-tiles/threads=2", 2, false}} {
		threads := c.threads
		b.Run(c.name, func(b *testing.B) {
			defer func(old bool) { useRowStream = old }(useRowStream)
			useRowStream = c.stream
			p := NewPool(threads)
			defer p.Close()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				for _, w := range mats {
					p.MatMul(y, x, 1, w, nil)
				}
			}
		})
	}
	// The quantized matrix-vector kernels over the same number of weights.
	for _, typ := range []WeightType{Q8, Q4} {
		qrb := typ.RowBytes(cols)
		qdata := hugeAlloc(b, nmat*rows*qrb)
		src := randVec(rng, rows*cols)
		if err := Quantize(typ, qdata[:rows*qrb], src, rows, cols); err != nil {
			b.Fatal(err)
		}
		for i := 1; i < nmat; i++ {
			copy(qdata[i*rows*qrb:], qdata[:rows*qrb])
		}
		sweep := func(b *testing.B, threads int) {
			p := NewPool(threads)
			defer p.Close()
			b.SetBytes(int64(len(qdata)))
			for b.Loop() {
				for i := range nmat {
					w := Matrix{Type: typ, Rows: rows, Cols: cols, Data: qdata[i*rows*qrb : (i+1)*rows*qrb]}
					p.MatMul(y, x, 1, w, nil)
				}
			}
		}
		for _, c := range []struct {
			threads int
			stream  bool
		}{{1, true}, {1, false}, {2, true}, {2, false}} {
			name := fmt.Sprintf("MatMul-%v/threads=%d", typ, c.threads)
			if !c.stream {
				name = fmt.Sprintf("MatMul-%v-rows/threads=%d", typ, c.threads)
			}
			b.Run(name, func(b *testing.B) {
				defer func(old bool) { useRowStream = old }(useRowStream)
				useRowStream = c.stream
				sweep(b, c.threads)
			})
		}
		for _, r := range avx2Routes() { // the int8 kernels of CPUs without AVX-512 (i8_amd64.go)
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("MatMul-%v-%s/threads=%d", typ, r, threads), func(b *testing.B) {
					onRoute(b, r, func() { sweep(b, threads) })
				})
			}
		}
	}
}

// BenchmarkBatchSweep is a batched decode step's weight traffic: matrix products
// of m input rows (one per sequence) over -sweep-bytes of q8 and q4 weights in
// Qwen3-0.6B-wide matrices. SetBytes counts the weights once per pass, so MB/s
// compares with the matrix-vector sweep and m× it is the rows' total.
func BenchmarkBatchSweep(b *testing.B) {
	const rows, cols = 3072, 1024
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []WeightType{Q8, Q4} {
		qrb := typ.RowBytes(cols)
		nmat := max(*sweepBytes/(rows*qrb), 1)
		qdata := hugeAlloc(b, nmat*rows*qrb)
		src := randVec(rng, rows*cols)
		if err := Quantize(typ, qdata[:rows*qrb], src, rows, cols); err != nil {
			b.Fatal(err)
		}
		for i := 1; i < nmat; i++ {
			copy(qdata[i*rows*qrb:], qdata[:rows*qrb])
		}
		for _, m := range []int{1, 2, 4, 8, 16, 32, 64, 128} {
			for _, c := range []struct {
				threads int
				stream  bool
			}{{1, true}, {1, false}, {2, true}, {2, false}} {
				threads, name := c.threads, "stream"
				if !c.stream {
					name = "tiles"
				}
				b.Run(fmt.Sprintf("type=%v/m=%d/%s/threads=%d", typ, m, name, threads), func(b *testing.B) {
					defer func(old bool) { useBatchStream = old }(useBatchStream)
					useBatchStream = c.stream
					x, y := randVec(rng, m*cols), make([]float32, m*rows)
					p := NewPool(threads)
					defer p.Close()
					b.SetBytes(int64(len(qdata)))
					b.ReportAllocs()
					for b.Loop() {
						for i := range nmat {
							w := Matrix{Type: typ, Rows: rows, Cols: cols, Data: qdata[i*rows*qrb : (i+1)*rows*qrb]}
							p.MatMul(y, x, m, w, nil)
						}
					}
				})
			}
		}
	}
}
