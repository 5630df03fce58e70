//go:build perf && linux && amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"
	"time"
)

// encoderShapes are all-MiniLM-L6-v2's layer products, each thread's half of the weight rows.
var encoderShapes = []struct {
	name       string
	rows, cols int
}{{"qkv", 576, 384}, {"o", 192, 384}, {"up", 768, 384}, {"down", 192, 1536}}

// layerLine is label followed by GMAC/s per encoderShapes product of m rows, from the median of its
// rounds' CPU seconds (times[k] for shape k), and for the layer.
func layerLine(label string, m int, times [][]float64) string {
	var macs, secs float64
	for k, s := range encoderShapes {
		d := times[k]
		sort.Float64s(d)
		mac := float64(m * s.rows * s.cols)
		label += fmt.Sprintf("  %s %6.1f", s.name, mac/d[len(d)/2]/1e9)
		macs += mac
		secs += d[len(d)/2]
	}
	return fmt.Sprintf("%s  layer %6.1f GMAC/s", label, macs/secs/1e9)
}

// TestPerfEncoderShapes times the matrix products of an all-MiniLM-L6-v2 layer
// (32 sentences of 128 tokens: m = 4096 rows) on one thread by thread CPU time,
// each thread's half of the weight rows as the 2-thread encoder gives it:
// GMAC/s per weight type, median of 5.
//
//	go test -tags perf -run PerfEncoderShapes -v ./internal/kernels
func TestPerfEncoderShapes(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	const m = 4096
	shapes := encoderShapes
	p := NewPool(1)
	defer p.Close()
	for _, typ := range []WeightType{F32, Q8} {
		line := fmt.Sprintf("%-3v", typ)
		var macs, secs float64
		for _, s := range shapes {
			w := Matrix{Type: typ, Rows: s.rows, Cols: s.cols, Data: make([]byte, s.rows*typ.RowBytes(s.cols))}
			Quantize(typ, w.Data, randVec(rng, s.rows*s.cols), s.rows, s.cols)
			x, y := randVec(rng, m*s.cols), make([]float32, m*s.rows)
			bias := randVec(rng, s.rows)
			d := medianCPU(5, 60*time.Millisecond, func() { p.MatMul(y, x, m, w, bias) })
			mac := float64(m * s.rows * s.cols)
			line += fmt.Sprintf("  %s %6.1f GMAC/s", s.name, mac/d/1e9)
			macs += mac
			secs += d
		}
		fmt.Printf("%s  layer %6.1f GMAC/s (%.1f ms)\n", line, macs/secs/1e9, secs*1e3)
	}
}

// TestPerfVNNITileL1 times the AVX-512 VNNI q8 tile alone, its operands in L1.
func TestPerfVNNITileL1(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, nb := range []int{16, 48} {
		ldx := nb * BlockSize
		rb := Q8.RowBytes(ldx)
		xq := make([]byte, 4*ldx)
		wt := make([]byte, 3*ldx)
		w := make([]byte, 3*rb)
		dx, xs := make([]float32, 4*nb), make([]float32, 4*nb)
		y := make([]float32, 4*8)
		d := medianCPU(5, 30*time.Millisecond, func() {
			for range 100 {
				vnniTileQ8_4x3(&xq[0], ldx, &dx[0], &xs[0], nb*4, &w[0], rb, &wt[0], nb, &y[0], 32)
			}
		}) / 100
		fmt.Printf("vnniTileQ8_4x3 nb=%d: %.1f GMAC/s\n", nb, float64(12*ldx)/d/1e9)
	}
}

// TestPerfVNNIChunk sweeps vnniTileChunkBytes on the encoder's q8 shapes (0: one
// panel per chunk, the loop order before chunks), rounds alternating.
func TestPerfVNNIChunk(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	const m = 4096
	shapes := encoderShapes
	p := NewPool(1)
	defer p.Close()
	old := vnniTileChunkBytes
	defer func() { vnniTileChunkBytes = old }()
	sizes := []int{0, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10}
	res := map[int][][]float64{}
	type c struct {
		w    Matrix
		x, y []float32
		b    []float32
	}
	var cs []c
	for _, s := range shapes {
		w := Matrix{Type: Q8, Rows: s.rows, Cols: s.cols, Data: make([]byte, s.rows*Q8.RowBytes(s.cols))}
		Quantize(Q8, w.Data, randVec(rng, s.rows*s.cols), s.rows, s.cols)
		cs = append(cs, c{w, randVec(rng, m*s.cols), make([]float32, m*s.rows), randVec(rng, s.rows)})
	}
	for range 5 {
		for _, sz := range sizes {
			vnniTileChunkBytes = sz
			if res[sz] == nil {
				res[sz] = make([][]float64, len(cs))
			}
			for k, c := range cs {
				d := cpuPerCall(40*time.Millisecond, func() { p.MatMul(c.y, c.x, m, c.w, c.b) })
				res[sz][k] = append(res[sz][k], d)
			}
		}
	}
	for _, sz := range sizes {
		fmt.Println(layerLine(fmt.Sprintf("chunk %3d KB", sz>>10), m, res[sz]))
	}
}

// TestPerfEncoderRowBlocks times the encoder layer's products in one call of 4096 rows
// against calls of fewer rows (the activations of a call then stay in L2).
func TestPerfEncoderRowBlocks(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	const m = 4096
	shapes := encoderShapes
	p := NewPool(1)
	defer p.Close()
	blocks := []int{4096, 1024, 512, 256, 128}
	for _, typ := range []WeightType{F32, Q8} {
		res := map[int][][]float64{}
		type c struct {
			w       Matrix
			x, y, b []float32
		}
		var cs []c
		for _, s := range shapes {
			w := Matrix{Type: typ, Rows: s.rows, Cols: s.cols, Data: make([]byte, s.rows*typ.RowBytes(s.cols))}
			Quantize(typ, w.Data, randVec(rng, s.rows*s.cols), s.rows, s.cols)
			cs = append(cs, c{w, randVec(rng, m*s.cols), make([]float32, m*s.rows), randVec(rng, s.rows)})
		}
		for range 5 {
			for _, bl := range blocks {
				if res[bl] == nil {
					res[bl] = make([][]float64, len(cs))
				}
				for k, c := range cs {
					d := cpuPerCall(40*time.Millisecond, func() {
						for i := 0; i < m; i += bl {
							p.MatMul(c.y[i*c.w.Rows:(i+bl)*c.w.Rows], c.x[i*c.w.Cols:(i+bl)*c.w.Cols], bl, c.w, c.b)
						}
					})
					res[bl][k] = append(res[bl][k], d)
				}
			}
		}
		for _, bl := range blocks {
			fmt.Println(layerLine(fmt.Sprintf("%v rows/call %4d", typ, bl), m, res[bl]))
		}
	}
}

// TestPerfEncoderPacked times the encoder layer's f32 products on one thread: the
// dot-product tiles in products of 256 rows (the encoder's linear op before packing)
// against the packed outer-product GEMM (PackedMatMul) for row blocks of
// packedRowGroups groups and column blocks of packedKC, rounds alternating.
//
//	go test -tags perf -run PerfEncoderPacked -v ./internal/kernels
func TestPerfEncoderPacked(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	const m = 4096
	p := NewPool(1)
	defer p.Close()
	type c struct {
		w       Matrix
		j       *PackedMatMul
		x, y, b []float32
	}
	var cs []c
	for _, s := range encoderShapes {
		w := Matrix{Type: F32, Rows: s.rows, Cols: s.cols, Data: make([]byte, s.rows*F32.RowBytes(s.cols))}
		Quantize(F32, w.Data, randVec(rng, s.rows*s.cols), s.rows, s.cols)
		cs = append(cs, c{w, NewPackedMatMul(PackF32(w, nil)), randVec(rng, m*s.cols), make([]float32, m*s.rows), randVec(rng, s.rows)})
	}
	type cfg struct{ groups, kc int }
	oc := cfg{packedRowGroups, packedKC}
	defer func() { packedRowGroups, packedKC = oc.groups, oc.kc }()
	cfgs := []cfg{{}}
	for _, g := range []int{8, 16, 21} {
		for _, kc := range []int{128, 256, 384} {
			cfgs = append(cfgs, cfg{g, kc})
		}
	}
	res := map[cfg][][]float64{}
	for range 5 {
		for _, cf := range cfgs {
			packedRowGroups, packedKC = cf.groups, cf.kc
			if res[cf] == nil {
				res[cf] = make([][]float64, len(cs))
			}
			for k, c := range cs {
				var f func()
				if cf.kc == 0 {
					f = func() {
						for i := 0; i < m; i += 256 {
							p.MatMul(c.y[i*c.w.Rows:(i+256)*c.w.Rows], c.x[i*c.w.Cols:(i+256)*c.w.Cols], 256, c.w, c.b)
						}
					}
				} else {
					f = func() { c.j.Run(p, c.y, c.x, m, c.b) }
				}
				res[cf][k] = append(res[cf][k], cpuPerCall(40*time.Millisecond, f))
			}
		}
	}
	for _, cf := range cfgs {
		label := "tiles, 256 rows/call"
		if cf.kc > 0 {
			label = fmt.Sprintf("groups %2d kc %3d", cf.groups, cf.kc)
		}
		fmt.Println(layerLine(label, m, res[cf]))
	}
}

// TestPerfBGEMML1 times the bgemm micro-kernel alone, its operands in L1.
func TestPerfBGEMML1(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, kc := range []int{64, 128, 256} {
		xp := make([]float32, bgemmMR*kc)
		wp := make([]float32, 32*kc)
		y := make([]float32, bgemmMR*64)
		d := medianCPU(5, 30*time.Millisecond, func() {
			for range 100 {
				bgemm_12(&xp[0], &wp[0], kc, &y[0], 64, 0xffffffff)
			}
		}) / 100
		fmt.Printf("bgemm_12 kc=%d: %.1f GMAC/s\n", kc, float64(bgemmMR*32*kc)/d/1e9)
	}
}

// TestPerfGELU times gelu16 on 4096 values (in L1) and on 4 MiB of them.
func TestPerfGELU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{4096, 1 << 20} {
		x := randVec(rng, n)
		d := medianCPU(5, 30*time.Millisecond, func() { GELU(x, x) })
		fmt.Printf("gelu16 n=%d: %.3f ns/value\n", n, d/float64(n)*1e9)
	}
}
