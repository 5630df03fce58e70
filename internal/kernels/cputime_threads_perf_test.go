//go:build perf && linux && amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// TestPerfFloatThreads times f32 prefill products (m = 128) of Qwen3-0.6B's
// shapes on the route in use, on 1 and 2 threads: GMAC per wall second and
// per CPU second of the process (if two threads take more CPU time than one
// for the same products, they spin or slow each other down; if the wall time
// is more than half the CPU time, a thread waited).
//
//	HFSTATIC_KERNELS=avx2 go test -tags perf -run PerfFloatThreads -v ./internal/kernels
func TestPerfFloatThreads(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const m = 128
	for _, th := range []int{1, 2} {
		p := NewPool(th)
		for _, s := range []struct{ rows, cols int }{{2048, 1024}, {1024, 1024}, {3072, 1024}, {1024, 3072}, {1024, 2048}} {
			w := Matrix{Type: F32, Rows: s.rows, Cols: s.cols, Data: make([]byte, s.rows*F32.RowBytes(s.cols))}
			Quantize(F32, w.Data, randVec(rng, s.rows*s.cols), s.rows, s.cols)
			x, y := randVec(rng, m*s.cols), make([]float32, m*s.rows)
			var dw, dc []float64
			for range 5 {
				n := 0
				t0, c0 := time.Now(), procCPU()
				for time.Since(t0) < 300*time.Millisecond {
					p.MatMul(y, x, m, w, nil)
					n++
				}
				dw = append(dw, time.Since(t0).Seconds()/float64(n))
				dc = append(dc, (procCPU()-c0).Seconds()/float64(n))
			}
			sort.Float64s(dw)
			sort.Float64s(dc)
			mac := float64(m * s.rows * s.cols)
			fmt.Printf("%s threads=%d f32 m=%d %dx%d: %.1f GMAC/s wall, %.1f GMAC/CPU-s (best wall %.1f)\n", Route(), th, m, s.rows, s.cols, mac/dw[2]/1e9, mac/dc[2]/1e9, mac/dw[0]/1e9)
		}
		p.Close()
	}
}
