package kernels

// GELUSpan and GELUSteps: a GELU table for GELUTable covers [-GELUSpan, GELUSpan) in
// steps of 1/GELUSteps.
const GELUSpan, GELUSteps = 6, 16

// GELUTable sets dst[i] = c0 + t·(c1 + t·(c2 + t·c3)) for each x[i] in
// [-GELUSpan, GELUSpan), with c = tab[k] of its step k = int((x+GELUSpan)·GELUSteps)
// and t = (x - x0)·GELUSteps its place in the step; x[i] (and NaN) at or above
// GELUSpan, 0 at or below -GELUSpan: the exact GELU from a table of its cubics
// (internal/exec). It returns false, doing nothing, where this build or CPU has no
// SIMD kernel for it. dst may alias x.
func GELUTable(dst, x []float32, tab *[2 * GELUSpan * GELUSteps][4]float32) bool {
	if len(dst) < len(x) {
		panic("kernels: GELUTable into a shorter dst")
	}
	if len(x) == 0 {
		return true
	}
	return geluTable(dst, x, tab)
}
