//go:build perf && linux

// Run with: go test -tags perf -run Perf -v .
// Times kernels by thread CPU time (steadier than wall time on a shared
// machine) and prints medians over repetitions.

package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"
)

// threadCPU is the calling thread's CPU time, procCPU the process's.
func threadCPU() time.Duration { return rusageCPU(1) } // RUSAGE_THREAD
func procCPU() time.Duration   { return rusageCPU(0) } // RUSAGE_SELF

func rusageCPU(who int) time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPerCall calls f once to warm up, then for at least budget of this
// thread's CPU time, and returns the CPU seconds per call.
func cpuPerCall(budget time.Duration, f func()) float64 {
	f()
	n := 0
	t0 := threadCPU()
	for threadCPU()-t0 < budget {
		f()
		n++
	}
	return (threadCPU() - t0).Seconds() / float64(n)
}

// medianCPU is the median of rounds cpuPerCall(budget, f), bestCPU the least.
func medianCPU(rounds int, budget time.Duration, f func()) float64 {
	d := roundsCPU(rounds, budget, f)
	return d[rounds/2]
}

func bestCPU(rounds int, budget time.Duration, f func()) float64 {
	return roundsCPU(rounds, budget, f)[0]
}

func roundsCPU(rounds int, budget time.Duration, f func()) []float64 {
	d := make([]float64, rounds)
	for i := range d {
		d[i] = cpuPerCall(budget, f)
	}
	sort.Float64s(d)
	return d
}

// weightsInMemory is nmat copies of one rows × cols matrix of typ, 256 MB in
// all: products over them stream the weights from memory, not cache.
func weightsInMemory(rng *rand.Rand, typ WeightType, rows, cols int) (data []byte, nmat int) {
	rb := typ.RowBytes(cols)
	nmat = (256 << 20) / (rows * rb)
	data = make([]byte, nmat*rows*rb)
	Quantize(typ, data[:rows*rb], randVec(rng, rows*cols), rows, cols)
	for i := 1; i < nmat; i++ {
		copy(data[i*rows*rb:], data[:rows*rb])
	}
	return data, nmat
}

type perfCase struct {
	name    string
	typ     WeightType
	m, r, c int
	setup   func()
}

func TestPerf(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	vn := useVNNI
	cases := []perfCase{
		{"f32 gemv", F32, 1, 4096, 4096, func() {}},
		{"f16 gemv", F16, 1, 4096, 4096, func() {}},
		{"bf16 gemv", BF16, 1, 4096, 4096, func() {}},
		{"q8 gemv vnni", Q8, 1, 4096, 4096, func() { useVNNI = vn }},
		{"q8 gemv f32", Q8, 1, 4096, 4096, func() { useVNNI = false }},
		{"q4 gemv vnni", Q4, 1, 4096, 4096, func() { useVNNI = vn }},
		{"q4 gemv f32", Q4, 1, 4096, 4096, func() { useVNNI = false }},
		{"f32 gemm", F32, 128, 1024, 1024, func() {}},
		{"f16 gemm", F16, 128, 1024, 1024, func() {}},
		{"q8 gemm vnni", Q8, 128, 1024, 1024, func() { useVNNI = vn }},
		{"q8 gemm f32", Q8, 128, 1024, 1024, func() { useVNNI = false }},
		{"q4 gemm vnni", Q4, 128, 1024, 1024, func() { useVNNI = vn }},
		{"q4 gemm f32", Q4, 128, 1024, 1024, func() { useVNNI = false }},
		{"f32 gemm 2k", F32, 128, 2048, 2048, func() {}},
		{"f16 gemm 2k", F16, 128, 2048, 2048, func() {}},
		{"q8 gemm 2k", Q8, 128, 2048, 2048, func() { useVNNI = vn }},
		{"q4 gemm 576", Q4, 128, 1536, 576, func() { useVNNI = vn }}, // SmolLM2-135M gate/up: 18 blocks, a 2-block tail group
		{"q8 gemm 576", Q8, 128, 1536, 576, func() { useVNNI = vn }},
	}
	p := NewPool(1)
	defer p.Close()
	res := map[string][]float64{}
	ws := map[string]Matrix{}
	for _, c := range cases {
		w := Matrix{Type: c.typ, Rows: c.r, Cols: c.c, Data: make([]byte, c.r*c.typ.RowBytes(c.c))}
		Quantize(c.typ, w.Data, randVec(rng, c.r*c.c), c.r, c.c)
		ws[c.name] = w
	}
	for rep := 0; rep < 7; rep++ {
		for _, c := range cases {
			c.setup()
			w := ws[c.name]
			x, y := randVec(rng, c.m*c.c), make([]float32, c.m*c.r)
			d := cpuPerCall(30*time.Millisecond, func() { p.MatMul(y, x, c.m, w, nil) })
			res[c.name] = append(res[c.name], d)
		}
	}
	useVNNI = vn
	for _, c := range cases {
		d := res[c.name]
		sort.Float64s(d)
		med, best := d[len(d)/2], d[0]
		w := ws[c.name]
		fmt.Printf("%-14s m=%-3d %dx%d  median %8.1f us  %6.1f GB/s  %6.1f GFLOP/s  (best %6.1f GB/s %6.1f GFLOP/s)\n", c.name, c.m, c.r, c.c, med*1e6,
			float64(len(w.Data))/med/1e9, 2*float64(c.m*c.r*c.c)/med/1e9, float64(len(w.Data))/best/1e9, 2*float64(c.m*c.r*c.c)/best/1e9)
	}
}

func TestPerfKernel(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	xp := make([]float32, 12*256)
	wp := make([]float32, 32*256)
	y := make([]float32, 12*64)
	for rep := 0; rep < 5; rep++ {
		n := 0
		t0 := threadCPU()
		for threadCPU()-t0 < 30*time.Millisecond {
			for k := 0; k < 100; k++ {
				bgemm_12(&xp[0], &wp[0], 256, &y[0], 64, 0xffffffff)
			}
			n += 100
		}
		d := (threadCPU() - t0).Seconds() / float64(n)
		fmt.Printf("bgemm_12 kc=256: %.1f GFLOP/s\n", 2*12*32*256/d/1e9)
	}
	a := make([]float32, 1024)
	for rep := 0; rep < 3; rep++ {
		n := 0
		t0 := threadCPU()
		for threadCPU()-t0 < 30*time.Millisecond {
			for k := 0; k < 100; k++ {
				tileF32_4x5(&a[0], 0, f32Bytes(&a[0]), 0, 1024, &y[0], 8)
			}
			n += 100
		}
		d := (threadCPU() - t0).Seconds() / float64(n)
		fmt.Printf("tile 4x5 k=1024: %.1f GFLOP/s\n", 2*20*1024/d/1e9)
	}
}

// TestPerfBatch times the q8/q4 matrix product of a few rows (a batched
// decode step) on cache-resident weights, batch stream against tiles: its
// compute cost, which the weights' stream from memory must hide.
func TestPerfBatch(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	p := NewPool(1)
	defer p.Close()
	for _, typ := range []WeightType{Q8, Q4} {
		const rows, cols = 1024, 1024
		w := Matrix{Type: typ, Rows: rows, Cols: cols, Data: make([]byte, rows*typ.RowBytes(cols))}
		Quantize(typ, w.Data, randVec(rng, rows*cols), rows, cols)
		for _, m := range []int{1, 2, 4, 8, 12, 16, 32} {
			x, y := randVec(rng, m*cols), make([]float32, m*rows)
			var line string
			for _, stream := range []bool{true, false} {
				useBatchStream = stream
				d := medianCPU(5, 20*time.Millisecond, func() { p.MatMul(y, x, m, w, nil) })
				useBatchStream = true
				line += fmt.Sprintf("  stream=%-5v %7.1f us (%5.1f GB/s weights)", stream, d*1e6, float64(len(w.Data))/d/1e9)
			}
			fmt.Printf("%v m=%-2d%s\n", typ, m, line)
		}
	}
}

// TestPerfBatchKernel times vnniBatch<q>_<m> alone on cache-resident data:
// ns per group of 16 blocks.
func TestPerfBatchKernel(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	const rows, cols = 16, 1024
	nb := cols / BlockSize
	xb := make([]byte, 8*cols)
	bp := make([]float32, 8*2*nb)
	y := make([]float32, 8*rows)
	for _, typ := range []WeightType{Q8, Q4} {
		w := Matrix{Type: typ, Rows: rows, Cols: cols, Data: make([]byte, rows*typ.RowBytes(cols))}
		Quantize(typ, w.Data, randVec(rng, rows*cols), rows, cols)
		for m := 2; m <= vnniBatchMax; m++ {
			f := vnniBatchQ8[m]
			if typ == Q4 {
				f = vnniBatchQ4[m]
			}
			d := medianCPU(5, 20*time.Millisecond, func() {
				for range 100 {
					f(&xb[0], &bp[0], &w.Data[0], typ.RowBytes(cols), nb, &y[0], rows*4, rows)
				}
			}) / 100
			groups := float64(rows * nb / 16)
			fmt.Printf("vnniBatch%v_%d: %.1f ns per group (%.1f per row-group)\n", typ, m, d/groups*1e9, d/groups/float64(m)*1e9)
		}
	}
}

// TestPerfBatchSweep is TestPerfBatch on 256 MB of weights (memory, not
// cache): CPU ns per group of 16 blocks per call, one thread.
func TestPerfBatchSweep(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	p := NewPool(1)
	defer p.Close()
	const rows, cols = 3072, 1024
	for _, typ := range []WeightType{Q8, Q4} {
		rb := typ.RowBytes(cols)
		data, nmat := weightsInMemory(rng, typ, rows, cols)
		groups := float64(nmat * rows * cols / (16 * BlockSize))
		for _, m := range []int{1, 4, 8} {
			x, y := randVec(rng, m*cols), make([]float32, m*rows)
			for _, stream := range []bool{true, false} {
				if m == 1 && !stream {
					continue
				}
				useBatchStream = stream
				var d []float64
				for range 3 {
					t0 := threadCPU()
					for i := range nmat {
						p.MatMul(y, x, m, Matrix{Type: typ, Rows: rows, Cols: cols, Data: data[i*rows*rb : (i+1)*rows*rb]}, nil)
					}
					d = append(d, (threadCPU() - t0).Seconds())
				}
				useBatchStream = true
				sort.Float64s(d)
				fmt.Printf("%v m=%d batch stream %v: %.1f ns per group, %.1f GB/s of weights (CPU time)\n", typ, m, stream, d[1]/groups*1e9, float64(len(data))/d[1]/1e9)
			}
		}
	}
}
