package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkRowKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1024, 4096} {
		x, y, w := randVec(rng, n), randVec(rng, n), randVec(rng, n)
		h := make([]uint16, n)
		F32ToF16(h, y)
		dst := make([]float32, n)
		kernels := []struct {
			name string
			run  func()
		}{
			{"Dot", func() { Dot(x, y) }},
			{"Axpy", func() { Axpy(0.5, x, dst) }},
			{"DotF16", func() { DotF16(x, h) }},
			{"AxpyF16", func() { AxpyF16(0.5, h, dst) }},
			{"F32ToF16", func() { F32ToF16(h, x) }},
			{"F16ToF32", func() { F16ToF32(dst, h) }},
			{"RMSNorm", func() { RMSNorm(dst, x, w, 1e-6) }},
			{"Softmax", func() { copy(dst, x); Softmax(dst) }},
			{"SiLUMul", func() { SiLUMul(dst, x, y) }},
			{"GELUTanhMul", func() { GELUTanhMul(dst, x, y) }},
		}
		for _, k := range kernels {
			b.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(b *testing.B) {
				b.SetBytes(int64(4 * n))
				b.ReportAllocs()
				for b.Loop() {
					k.run()
				}
			})
		}
	}
}
