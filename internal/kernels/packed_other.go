//go:build !amd64 || purego

package kernels

func packedSupported() bool { return false }

// item is never called: PackF32 returns nil where packedSupported is false.
func (j *PackedMatMul) item(worker, i int) { panic("kernels: no packed product in this build") }

func gelu(dst, x []float32) bool { return false }

func panelMulAdd(y []float32, ldy int, x []float32, ldx, m int, p []float32, kc, n int) {
	panic("kernels: no panel product in this build")
}

func packPanels(pw *PackedF32, w []byte) { panic("kernels: no packed product in this build") }

func packPanel(dst, src []float32, ld, rows, cols int) {
	panic("kernels: no panel product in this build")
}

func layerNorm(dst, x, w, b []float32, eps float32) bool { return false }
