package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
)

// levels is a block format's integer range and the scale search around it.
type levels struct {
	lo, hi int // stored values q lie in [lo, hi]
	// The search maps the block's largest magnitude to the level ±(end+k*step)
	// for k in [-span, span], end being -lo and hi: both signs of scale.
	step float64
	span int
}

var (
	q8Levels = levels{lo: -128, hi: 127, step: 0.25, span: 8}
	q4Levels = levels{lo: -8, hi: 7, step: 0.1, span: 15}
)

// blockScale returns the binary16 scale for a block whose largest magnitude
// is amax: the smallest binary16 value >= amax/qmax, so that no quantized
// value needs clamping and every element's error is at most scale/2.
func blockScale(amax float32, qmax int) (uint16, error) {
	if amax == 0 {
		return 0, nil
	}
	d := amax / float32(qmax)
	h := f32ToF16(d)
	if f16ToF32(h) < d || h == 0 { // h == 0: amax/qmax underflowed float32
		h++
	}
	if h >= 0x7c00 {
		return 0, fmt.Errorf("block maximum %v needs a scale beyond binary16: %w", amax, ErrNotFinite)
	}
	return h, nil
}

// quantizeBlocks quantizes one row x into the block layout d (scales first),
// each block's scale minimising its importance-weighted squared error (w nil:
// all ones; w holds one value per column of the row).
func quantizeBlocks(d []byte, x, w []float32, lv levels, put func(d []byte, nb, b, i int, q int8)) error {
	nb := (len(x) + BlockSize - 1) / BlockSize
	var ones [BlockSize]float32
	for i := range ones {
		ones[i] = 1
	}
	for b := range nb {
		lo, hi := b*BlockSize, min(len(x), (b+1)*BlockSize)
		blk := x[lo:hi]
		bw := ones[:len(blk)]
		if w != nil {
			bw = w[lo:hi]
			var sum float64
			for _, v := range bw {
				sum += float64(v)
			}
			if sum == 0 { // no column of the block matters: plain squared error
				bw = ones[:len(blk)]
			}
		}
		h, err := lv.searchScale(blk, bw)
		if err != nil {
			return fmt.Errorf("block %d: %w", b, err)
		}
		binary.LittleEndian.PutUint16(d[2*b:], h)
		s := float64(f16ToF32(h))
		inv := 1 / s
		for i := range BlockSize {
			var q int8
			if i < len(blk) && s != 0 {
				q = int8(lv.round(float64(blk[i]) * inv))
			}
			put(d, nb, b, i, q)
		}
	}
	return nil
}

// round is the nearest level to v.
func (lv levels) round(v float64) float64 {
	return max(float64(lv.lo), min(float64(lv.hi), math.RoundToEven(v)))
}

// blockError is sum w[i] * (x[i] - s*round(x[i]/s))^2 for the binary16 scale h.
func (lv levels) blockError(x, w []float32, h uint16) float64 {
	s := float64(f16ToF32(h))
	inv := 1 / s
	var e float64
	for i, v := range x {
		r := float64(v) - s*lv.round(float64(v)*inv)
		e += float64(w[i]) * r * r
	}
	return e
}

// searchScale returns the binary16 scale of one block (see QuantizeCalibrated).
func (lv levels) searchScale(x, w []float32) (uint16, error) {
	var amax, m float64 // largest magnitude, and that value with its sign
	for _, v := range x {
		if a := math.Abs(float64(v)); a > amax {
			amax, m = a, float64(v)
		}
	}
	if amax == 0 {
		return 0, nil
	}
	// The symmetric max-based scale: every value in range, rounded to nearest.
	best, err := blockScale(float32(amax), lv.hi)
	if err != nil {
		return 0, err
	}
	bestErr := lv.blockError(x, w, best)
	try := func(s float64) bool {
		h := f32ToF16(float32(s))
		if h&0x7fff == 0 || h&0x7c00 == 0x7c00 {
			return false
		}
		if e := lv.blockError(x, w, h); e < bestErr {
			best, bestErr = h, e
			return true
		}
		return false
	}
	// Candidates: the least-squares scale of the rounding that maps m to a
	// level near either end of the range; every third level first, then the
	// two on each side of the best of those.
	var cand struct {
		s, score float64
	}
	score := func(end float64, k int) bool {
		level := end + math.Copysign(float64(k)*lv.step, end)
		iscale := level / m
		var sxl, sll float64
		for i, v := range x {
			l := lv.round(float64(v) * iscale)
			sxl += float64(w[i]) * float64(v) * l
			sll += float64(w[i]) * l * l
		}
		// The error at the least-squares scale is sum w x^2 - sxl^2/sll.
		if sll > 0 && sxl*sxl/sll > cand.score {
			cand.s, cand.score = sxl/sll, sxl*sxl/sll
			return true
		}
		return false
	}
	bestEnd, bestK := 0.0, 0
	for _, end := range [2]float64{float64(lv.lo), float64(lv.hi)} {
		for k := -lv.span; k <= lv.span; k += 3 {
			if score(end, k) {
				bestEnd, bestK = end, k
			}
		}
	}
	if bestEnd != 0 {
		for _, k := range [4]int{bestK - 2, bestK - 1, bestK + 1, bestK + 2} {
			if k >= -lv.span && k <= lv.span {
				score(bestEnd, k)
			}
		}
	}
	if cand.s == 0 {
		return best, nil
	}
	try(cand.s)
	// Refine: alternate rounding for the scale and the least-squares scale of
	// the rounding, then the binary16 neighbours.
	for range 4 {
		inv := 1 / float64(f16ToF32(best))
		var sxl, sll float64
		for i, v := range x {
			l := lv.round(float64(v) * inv)
			sxl += float64(w[i]) * float64(v) * l
			sll += float64(w[i]) * l * l
		}
		if sll == 0 || !try(sxl/sll) {
			break
		}
	}
	for _, h := range [2]uint16{best - 1, best + 1} {
		if h&0x7fff != 0 && h&0x7c00 != 0x7c00 {
			if e := lv.blockError(x, w, h); e < bestErr {
				best, bestErr = h, e
			}
		}
	}
	return best, nil
}
