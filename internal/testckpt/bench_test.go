package testckpt

import (
	"io"
	"testing"

	"github.com/hfstatic/hfstatic/internal/safetensors"
)

func BenchmarkWriteSafetensors(b *testing.B) {
	spec := Spec{ModelSeed: 1, DType: "F32", Tensors: []TensorSpec{{Name: "w", Shape: []int{1024, 1024}, Seed: 3, Scale: 1}}}
	for _, dt := range []safetensors.DType{safetensors.F32, safetensors.BF16} {
		b.Run("dtype="+dt.String()+"/values=1M", func(b *testing.B) {
			b.SetBytes(1 << 20 * int64(dt.Size()))
			b.ReportAllocs()
			for b.Loop() {
				if err := WriteSafetensors(io.Discard, spec, dt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
