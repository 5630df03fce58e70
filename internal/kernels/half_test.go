package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// x448/float16 is an independent binary16 implementation; every half value
// and a spread of float32 values must convert identically.
func TestF16ToF32MatchesIndependentImplementationForEveryHalf(t *testing.T) {
	for h := range 1 << 16 {
		want := float16.Frombits(uint16(h)).Float32()
		got := f16ToF32(uint16(h))
		if math.Float32bits(got) != math.Float32bits(want) && !(isNaN32(got) && isNaN32(want)) {
			t.Fatalf("f16ToF32(%#04x) = %v, want %v", h, got, want)
		}
	}
}

func TestF32ToF16RoundsToNearestEvenLikeIndependentImplementation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(f float32) {
		t.Helper()
		want := float16.Fromfloat32(f).Bits()
		if got := f32ToF16(f); got != want && !(isNaN32(f)) {
			t.Fatalf("f32ToF16(%v bits %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65519.99, 65520, 1e-8, 5.96e-8, 2.98e-8, 2.9802322e-08, 6.1035156e-05, 6.1e-05,
		float32(math.Inf(1)), float32(math.Inf(-1)), 1e10, -1e10}
	for _, f := range specials {
		check(f)
	}
	for range 1 << 20 {
		check(math.Float32frombits(rng.Uint32()))
	}
	// Every half value and the midpoints around it.
	for h := range 0x7c00 {
		f := f16ToF32(uint16(h))
		b := math.Float32bits(f)
		for _, d := range []int32{-1, 0, 1, 0x1000, -0x1000, 0xfff, 0x1001} {
			check(math.Float32frombits(uint32(int32(b) + d)))
		}
	}
	if got := f32ToF16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("f32ToF16(NaN) = %#04x, want a NaN", got)
	}
}

func TestBF16RoundsToNearestEven(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80},
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81},
		{0x3f807fff, 0x3f80},
		{0x7f7fffff, 0x7f80}, // rounds to +Inf
		{0xff800000, 0xff80},
	}
	for _, c := range cases {
		if got := f32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("f32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if got := f32ToBF16(float32(math.NaN())); !isNaN32(bf16ToF32(got)) {
		t.Errorf("f32ToBF16(NaN) = %#04x, want a NaN", got)
	}
}

func isNaN32(f float32) bool { return f != f }
