//go:build perf && linux && amd64 && !purego

package kernels

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"
	"time"
)

// TestPerfRoutes times the matrix products of each x86 route by thread CPU
// time (one thread; weights of 1 MB, in cache for the products of many
// rows): GMAC/s of the prefill products (m = 128) and of a few rows, and the
// GB/s of weights of a decode (m = 1) over 256 MB.
//
//	go test -tags perf -run PerfRoutes -v ./internal/kernels
func TestPerfRoutes(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	time1 := func(f func()) float64 { return medianCPU(5, 40*time.Millisecond, f) }
	const rows, cols = 1024, 1024
	for _, r := range Routes() {
		if r == "generic" {
			continue
		}
		onRoute(t, r, func() {
			p := NewPool(1)
			defer p.Close()
			for _, typ := range []WeightType{F32, F16, Q8, Q4} {
				w := Matrix{Type: typ, Rows: rows, Cols: cols, Data: make([]byte, rows*typ.RowBytes(cols))}
				Quantize(typ, w.Data, randVec(rng, rows*cols), rows, cols)
				line := fmt.Sprintf("%-11s %-3v", r, typ)
				for _, m := range []int{128, 8, 4, 2, 1} {
					x, y := randVec(rng, m*cols), make([]float32, m*rows)
					d := time1(func() { p.MatMul(y, x, m, w, nil) })
					line += fmt.Sprintf("  m=%d %6.1f GMAC/s", m, float64(m*rows*cols)/d/1e9)
				}
				big := Matrix{Type: typ, Rows: 3072, Cols: cols}
				nmat := (256 << 20) / (3072 * typ.RowBytes(cols))
				data := make([]byte, nmat*3072*typ.RowBytes(cols))
				Quantize(typ, data[:3072*typ.RowBytes(cols)], randVec(rng, 3072*cols), 3072, cols)
				for i := 1; i < nmat; i++ {
					copy(data[i*len(data)/nmat:], data[:len(data)/nmat])
				}
				x, y := randVec(rng, cols), make([]float32, 3072)
				var d []float64
				for range 3 {
					t0 := threadCPU()
					for i := range nmat {
						big.Data = data[i*len(data)/nmat : (i+1)*len(data)/nmat]
						p.MatMul(y, x, 1, big, nil)
					}
					d = append(d, (threadCPU() - t0).Seconds())
				}
				sort.Float64s(d)
				line += fmt.Sprintf("  m=1 (256 MB) %5.1f GB/s", float64(len(data))/d[1]/1e9)
				fmt.Println(line)
			}
		})
	}
}

// TestPerfTileAVX2 times the largest AVX2 float tile alone, its operands in
// L1, for several row lengths k (the tile's fixed cost: horizontal sums,
// call, loop exit, shows at small k): GFLOP/s per thread CPU-second, best of 9.
func TestPerfTileAVX2(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	ts := tilesAVX2
	for _, k := range []int{256, 512, 1024, 1536} {
		x, w, y := randVec(rng, ts.m*k), randVec(rng, ts.n*k), make([]float32, 64)
		f := ts.f[0][ts.m-1][ts.n-1]
		d := bestCPU(9, 20*time.Millisecond, func() {
			for range 1000 { // cpuPerCall's clock read costs ~1.1 µs (a system call)
				f(&x[0], k, f32Bytes(&w[0]), 4*k, k, &y[0], 8)
			}
		}) / 1000
		fmt.Printf("tileF32AVX2_%dx%d k=%d: %.1f GFLOP/s\n", ts.m, ts.n, k, 2*float64(ts.m*ts.n*k)/d/1e9)
	}
}

var perfGroups = flag.Int("perf-groups", 0, "TestPerfI8TileAVX2: groups of 8 blocks per row (0: 4, as 1024 columns)")

// TestPerfI8TileAVX2 times each route's largest int8 tiles alone, operands
// in L1 (1024 columns: 4 groups): GMAC/s per thread CPU-second, best of 9.
func TestPerfI8TileAVX2(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ng := 4
	if *perfGroups > 0 {
		ng = *perfGroups
	}
	xg, wt, y := make([]byte, 4*ng*i8XGroup), make([]byte, 3*ng*i8WGroup), make([]float32, 64)
	for name, k := range map[string]*i8Kernels{"avx2": &i8AVX2, "avx2+vnni": &i8AVXVNNI} {
		for q, ts := range k.tiles {
			f := ts.f[ts.m-1][ts.n-1]
			d := bestCPU(9, 20*time.Millisecond, func() {
				for range 100 {
					f(&xg[0], ng*i8XGroup, &wt[0], ng*i8WGroup, ng, &y[0], 8)
				}
			}) / 100
			best := float64(ts.m*ts.n*ng*256) / d / 1e9
			fmt.Printf("%s %s tile %dx%d: %.1f GMAC/s\n", name, []string{"q8", "q4"}[q], ts.m, ts.n, best)
		}
	}
}

// TestPerfI8BatchSweep is the int8 product of a few rows (a batched decode
// step) over 256 MB of weights (memory, not cache), one thread, on each
// route without AVX-512: CPU ns per weight row of 1024 columns (all input
// rows together), the row streams' passes against the tiles.
func TestPerfI8BatchSweep(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	const rows, cols = 3072, 1024
	for _, typ := range []WeightType{Q8, Q4} {
		rb := typ.RowBytes(cols)
		data, nmat := weightsInMemory(rng, typ, rows, cols)
		for _, r := range avx2Routes() {
			onRoute(t, r, func() {
				p := NewPool(1)
				defer p.Close()
				for _, m := range []int{1, 2, 3, 4, 8} {
					x, y := randVec(rng, m*cols), make([]float32, m*rows)
					line := fmt.Sprintf("%-9s %v m=%d", r, typ, m)
					for _, smax := range []int{8, 1} {
						if m == 1 && smax == 1 {
							continue
						}
						defer func(old int) { i8StreamMax = old }(i8StreamMax)
						i8StreamMax = smax
						var d []float64
						for range 3 {
							t0 := threadCPU()
							for i := range nmat {
								p.MatMul(y, x, m, Matrix{Type: typ, Rows: rows, Cols: cols, Data: data[i*rows*rb : (i+1)*rows*rb]}, nil)
							}
							d = append(d, (threadCPU() - t0).Seconds())
						}
						sort.Float64s(d)
						line += fmt.Sprintf("  %s %6.1f ns/row", map[int]string{8: "stream", 1: "tiles"}[smax], d[1]/float64(nmat*rows)*1e9)
					}
					fmt.Println(line)
				}
			})
		}
	}
}

// TestPerfFloatShapes times f32 prefill products (m = 128) of Qwen3-0.6B's
// shapes on the route in use, one thread: GFLOP/s per thread CPU-second.
func TestPerfFloatShapes(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	p := NewPool(1)
	defer p.Close()
	const m = 128
	for _, s := range []struct{ rows, cols int }{{2048, 1024}, {1024, 1024}, {3072, 1024}, {1024, 3072}, {1024, 2048}} {
		w := Matrix{Type: F32, Rows: s.rows, Cols: s.cols, Data: make([]byte, s.rows*F32.RowBytes(s.cols))}
		Quantize(F32, w.Data, randVec(rng, s.rows*s.cols), s.rows, s.cols)
		x, y := randVec(rng, m*s.cols), make([]float32, m*s.rows)
		d := medianCPU(3, 200*time.Millisecond, func() { p.MatMul(y, x, m, w, nil) }) // the clock ticks in ms
		fmt.Printf("%s f32 m=%d %dx%d: %.1f GFLOP/s\n", Route(), m, s.rows, s.cols, 2*float64(m*s.rows*s.cols)/d/1e9)
	}
}

// TestPerfI8StreamAVX2 times each route's int8 row streams alone on a
// matrix in L2 (512 rows of 1024 columns): GB/s of weights per thread
// CPU-second, best of 9 (what the stream could read if memory kept up).
func TestPerfI8StreamAVX2(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	const rows, cols = 512, 1024
	xg, y := make([]byte, 4*i8XGroup), make([]float32, rows)
	for _, typ := range []WeightType{Q8, Q4} {
		w := Matrix{Type: typ, Rows: rows, Cols: cols, Data: make([]byte, rows*typ.RowBytes(cols))}
		Quantize(typ, w.Data, randVec(rng, rows*cols), rows, cols)
		for name, k := range map[string]*i8Kernels{"avx2": &i8AVX2, "avx2+vnni": &i8AVXVNNI} {
			f := k.stream[i8Type(typ)]
			d := bestCPU(9, 20*time.Millisecond, func() {
				for range 10 {
					f(&xg[0], &w.Data[0], typ.RowBytes(cols), cols/BlockSize, &y[0], rows)
				}
			}) / 10
			best := float64(len(w.Data)) / d / 1e9
			fmt.Printf("%s %v stream: %.1f GB/s\n", name, typ, best)
		}
	}
}
