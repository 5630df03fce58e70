package sample

import "math"

// weightOf returns exp((l - maxL) / T), the unnormalised probability of a
// logit l <= maxL; invT is 1/T. It uses expNonPositive, which is accurate
// to about 2e-7 relative and several times faster than math.Exp; that
// matters when every logit of a 262k vocabulary is weighed per token.
func weightOf(l, maxL float32, invT float64) float64 {
	return expNonPositive(float64(l-maxL) * invT)
}

// expNonPositive returns e^x for x <= 0; below e^-700 (and for NaN) it
// returns 0, which is what such a weight adds next to the best token's 1.
func expNonPositive(x float64) float64 {
	if !(x >= -700) {
		return 0
	}
	// e^x = 2^n · e^g with n = round(x·log2 e) and |g| <= ln2/2, e^g by its
	// Taylor series to degree 7 (relative error below 2e-8).
	n := math.Round(x * math.Log2E)
	g := x - n*math.Ln2
	p := 1 + g*(1+g*(1.0/2+g*(1.0/6+g*(1.0/24+g*(1.0/120+g*(1.0/720+g*(1.0/5040)))))))
	return math.Float64frombits(math.Float64bits(p) + uint64(int64(n))<<52)
}
