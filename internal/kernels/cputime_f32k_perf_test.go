//go:build perf && linux && amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// TestPerfF32K compares the AVX2 routes' k-order f32 kernels (packed GEMM,
// packing included; decode stream) with the dot-product tiles and row
// stream they replace, one thread, per thread CPU-second, alternating
// rounds: prefill products (m = 128) of Qwen3-0.6B's shapes, a few rows,
// and a decode product over 256 MB of weights (GB/s).
//
//	HFSTATIC_KERNELS=avx2 go test -tags perf -run PerfF32K -v ./internal/kernels
func TestPerfF32K(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func(v bool) { useF32K = v }(useF32K)
	useF32K = true
	if !f32K(F32, 1024) {
		t.Fatal("run on an AVX2 route: HFSTATIC_KERNELS=avx2")
	}
	if v, err := strconv.Atoi(os.Getenv("F32KC")); err == nil {
		f32KC = v
	}
	if v, err := strconv.Atoi(os.Getenv("F32KG")); err == nil {
		f32KRowGroups = v
	}
	ms := []int{128, 16, 5, 2}
	if os.Getenv("F32KM") != "" {
		ms = nil
		for _, f := range strings.Split(os.Getenv("F32KM"), ",") {
			v, _ := strconv.Atoi(f)
			ms = append(ms, v)
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	p := NewPool(1)
	defer p.Close()
	alt := func(f func()) (old, new []float64) {
		for range 3 {
			useF32K = false
			old = append(old, cpuPerCall(150*time.Millisecond, f))
			useF32K = true
			new = append(new, cpuPerCall(150*time.Millisecond, f))
		}
		return old, new
	}
	rate := func(work float64, d []float64) string {
		lo, hi := work/d[0], work/d[0]
		for _, v := range d {
			lo, hi = min(lo, work/v), max(hi, work/v)
		}
		return fmt.Sprintf("%5.1f–%5.1f", lo, hi)
	}
	for _, m := range ms {
		for _, s := range []struct{ rows, cols int }{{2048, 1024}, {1024, 1024}, {3072, 1024}, {1024, 3072}} {
			w := Matrix{Type: F32, Rows: s.rows, Cols: s.cols, Data: make([]byte, s.rows*F32.RowBytes(s.cols))}
			Quantize(F32, w.Data, randVec(rng, s.rows*s.cols), s.rows, s.cols)
			x, y := randVec(rng, m*s.cols), make([]float32, m*s.rows)
			old, new := alt(func() { p.MatMul(y, x, m, w, nil) })
			fl := 2 * float64(m*s.rows*s.cols) / 1e9
			fmt.Printf("%s f32 m=%-3d %dx%d GFLOP/s per CPU-s: tiles %s, k-order %s\n", Route(), m, s.rows, s.cols, rate(fl, old), rate(fl, new))
		}
	}
	const rows, cols = 3072, 1024
	data, nmat := weightsInMemory(rng, F32, rows, cols)
	big := Matrix{Type: F32, Rows: rows, Cols: cols}
	x, y := randVec(rng, cols), make([]float32, rows)
	old, new := alt(func() {
		for i := range nmat {
			big.Data = data[i*len(data)/nmat : (i+1)*len(data)/nmat]
			p.MatMul(y, x, 1, big, nil)
		}
	})
	gb := float64(len(data)) / 1e9
	fmt.Printf("%s f32 m=1 decode from 256 MB, GB/s per CPU-s: row stream %s, k-order (%d groups) %s\n", Route(), rate(gb, old), f32KRowGroups, rate(gb, new))
	w := Matrix{Type: F32, Rows: 512, Cols: cols, Data: data[:512*4*cols]}
	old, new = alt(func() { p.MatMul(y, x, 1, w, nil) })
	gb = float64(512*4*cols) / 1e9
	fmt.Printf("%s f32 m=1 decode 512x1024 in L2, GB/s per CPU-s: row stream %s, k-order %s\n", Route(), rate(gb, old), rate(gb, new))
}

// TestPerfF32KTile times gemmF32AVX2_6x16 alone, its packed weights and
// inputs in L1 and L2 (k columns), and packF32x16AVX2: GFLOP/s and GB/s
// per thread CPU-second.
//
//	go test -tags perf -run PerfF32KTile -v ./internal/kernels
func TestPerfF32KTile(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, k := range []int{128, 256, 512, 1024} {
		for _, ldx := range []int{k} {
			pk, x, y := randVec(rng, 16*k), randVec(rng, 6*ldx), make([]float32, 6*16)
			for _, kf := range []struct {
				name string
				f    func(x *float32, ldx int, w *float32, k int, y *float32, ldy int, pf *byte)
			}{{"6x16", gemmF32AVX2_6x16}} {
				d := bestCPU(3, 50*time.Millisecond, func() {
					for range 16 {
						kf.f(&x[0], ldx, &pk[0], k, &y[0], 16, (*byte)(unsafe.Pointer(&pk[0])))
					}
				})
				fmt.Printf("gemmF32AVX2_%s k=%d ldx=%d: %.1f GFLOP/s\n", kf.name, k, ldx, 16*2*6*16*float64(k)/d/1e9)
			}
		}
	}
	for _, k := range []int{256, 1024} {
		for _, lds := range []int{1024, 1040, 3072} {
			w := randVec(rng, 16*lds)
			pk := make([]float32, 16*k+64)
			d := bestCPU(3, 50*time.Millisecond, func() {
				for range 64 {
					packF32x16AVX2(&pk[16], &w[0], lds, k)
				}
			}) / 64 // cpuPerCall reads the clock by a system call per call
			fmt.Printf("packF32x16AVX2 16x%d of rows %d apart: %.1f GB/s\n", k, lds, float64(64*k)/d/1e9)
		}
	}
}
