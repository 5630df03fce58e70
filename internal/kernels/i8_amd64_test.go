//go:build amd64 && !purego

package kernels

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// avx2Routes are the routes of CPUs without AVX-512 that this CPU runs.
func avx2Routes() []string {
	var rs []string
	for _, r := range Routes() {
		if strings.HasPrefix(r, "avx2") {
			rs = append(rs, r)
		}
	}
	return rs
}

// i8Routes are the routes this CPU runs whose q8/q4 products take the int8
// kernels of i8_amd64.go: the AVX2 ones, and avx512 (without VNNI).
func i8Routes() []string {
	rs := avx2Routes()
	if slices.Contains(Routes(), "avx512") {
		rs = append(rs, "avx512")
	}
	return rs
}

// onRoute runs f with the kernels of route r, then restores the route in use.
func onRoute(tb testing.TB, r string, f func()) {
	tb.Helper()
	before := Route()
	if err := UseRoute(r); err != nil {
		tb.Fatal(err)
	}
	defer func() {
		if err := UseRoute(before); err != nil {
			tb.Fatal(err)
		}
	}()
	f()
}

// quantizeI8Ref is the reference of quantizeXI8<layout>AVX2 for one block:
// float32 arithmetic, rounding to nearest even.
func quantizeI8Ref(x []float32) (q [BlockSize]int8, dx float32, sum int32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	dx = amax * float32(1.0/127)
	inv := 127 / max(amax, float32(1e-30))
	for i, v := range x {
		q[i] = int8(math.RoundToEven(float64(v * inv)))
		sum += int32(q[i])
	}
	return q, dx, sum
}

// i8RecordRef is the reference of the records quantizeXI8<layout>AVX2 write
// for nb blocks of x (groups of i8XGroup bytes; missing blocks zero).
func i8RecordRef(x []float32, nb int, layout string, shift int) []byte {
	ng := (nb + 7) / 8
	rec := make([]byte, ng*i8XGroup)
	for b := range nb {
		q, dx, sum := quantizeI8Ref(x[b*BlockSize : (b+1)*BlockSize])
		g, l := rec[b/8*i8XGroup:], b%8
		binary.LittleEndian.PutUint32(g[256+4*l:], math.Float32bits(dx))
		binary.LittleEndian.PutUint32(g[288+4*l:], uint32(-(sum << shift)))
		for e, v := range q {
			var at int
			switch layout {
			case "":
				at = 32*l + e
			case "Pairs":
				at = 64*(l/2) + 16*(l%2) + 32*(e/16) + e%16
			case "T":
				at = 32*(e/4) + 4*l + e%4
			}
			g[at] = byte(v)
		}
	}
	return rec
}

// The activation quantizers write the records their kernels read: the
// reference's bytes exactly, for every layout, whole and partial groups,
// an all-zero block and values at the rounding ties.
func TestQuantizeXI8AVX2MatchesReference(t *testing.T) {
	if !hasAVX2 {
		t.Log("CPU lacks AVX2/FMA/F16C: the AVX2 kernels cannot run here")
		return
	}
	rng := rand.New(rand.NewPCG(51, 52))
	for _, layout := range []string{"", "Pairs", "T"} {
		f := map[string]func(x *float32, nb int, xg *byte, shift int){"": quantizeXI8AVX2, "Pairs": quantizeXI8PairsAVX2, "T": quantizeXI8TAVX2}[layout]
		for _, nb := range []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 33} {
			x := randVec(rng, nb*BlockSize)
			clear(x[:BlockSize]) // an all-zero block
			if nb > 1 {
				for i := range BlockSize {
					x[BlockSize+i] = float32(i-16) / 2 // ties: x*127/8 = k + 0.5 for odd k
				}
				x[BlockSize+31] = 8
			}
			for _, shift := range []int{0, 3, 7} {
				want := i8RecordRef(x, nb, layout, shift)
				got := make([]byte, len(want))
				f(&x[0], nb, &got[0], shift)
				if !bytes.Equal(got, want) {
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("layout %q nb %d shift %d: byte %d (group %d, +%d) = %#x, want %#x", layout, nb, shift, i, i/i8XGroup, i%i8XGroup, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// transposeWRef is the reference of transposeW<q>[U]AVX2.
func transposeWRef(typ WeightType, unsigned bool, row []byte, nb int) []byte {
	ng := (nb + 7) / 8
	dst := make([]byte, ng*i8WGroup)
	for b := range nb {
		g, l := dst[b/8*i8WGroup:], b%8
		d := f16ToF32(binary.LittleEndian.Uint16(row[2*b:]))
		binary.LittleEndian.PutUint32(g[256+4*l:], math.Float32bits(d))
		for e := range BlockSize {
			var v byte
			if typ == Q8 {
				v = row[2*nb+b*BlockSize+e]
				if unsigned {
					v ^= 0x80
				}
			} else {
				v = row[2*nb+b*BlockSize/2+e%16] >> (4 * (e / 16)) & 0xf
			}
			g[32*(e/4)+4*l+e%4] = v
		}
	}
	return dst
}

// The tiles' weight layout is the reference's exactly, scales included,
// for whole and partial groups.
func TestTransposeWAVX2MatchesReference(t *testing.T) {
	if !hasAVX2 {
		t.Log("CPU lacks AVX2/FMA/F16C: the AVX2 kernels cannot run here")
		return
	}
	rng := rand.New(rand.NewPCG(53, 54))
	for _, c := range []struct {
		typ      WeightType
		unsigned bool
		f        func(w *byte, nb int, dst *byte)
	}{{Q8, false, transposeWQ8AVX2}, {Q8, true, transposeWQ8UAVX2}, {Q4, false, transposeWQ4AVX2}} {
		for _, nb := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 18, 23} {
			w, _ := randMatrix(t, rng, c.typ, 2, nb*BlockSize)
			row := w.row(1) // the last row: nothing may be read past it
			want := transposeWRef(c.typ, c.unsigned, row, nb)
			got := make([]byte, len(want))
			c.f(&row[0], nb, &got[0])
			if !bytes.Equal(got, want) {
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%v unsigned %v nb %d: byte %d (group %d, +%d) = %#x, want %#x", c.typ, c.unsigned, nb, i, i/i8WGroup, i%i8WGroup, got[i], want[i])
					}
				}
			}
		}
	}
}

// On the routes of CPUs without AVX-512 VNNI, every row of a q8/q4 matrix
// product (the row stream for one row, its passes for a few, the tiles for
// more) equals the matrix-vector product of that row alone, bit for bit, on
// 1 and 2 threads, for rows of whole groups of 8 blocks and partial ones;
// and the routes (avx2+vnni, avx2, avx512) agree with each other bit for bit.
func TestI8RowsEqualAloneBitForBitOnEveryAVX2Route(t *testing.T) {
	routes := i8Routes()
	if len(routes) == 0 {
		t.Log("CPU lacks AVX2/FMA/F16C: the AVX2 kernels cannot run here")
		return
	}
	rng := rand.New(rand.NewPCG(55, 56))
	for _, typ := range []WeightType{Q8, Q4} {
		for _, nb := range []int{1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 24, 33, 48} {
			cols := nb * BlockSize
			for _, m := range []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 33} {
				rows := 1 + rng.IntN(40)
				if rng.IntN(3) == 0 {
					rows += 700 // several passes' blocks of weight rows
				}
				w, _ := randMatrix(t, rng, typ, rows, cols)
				x := randVec(rng, m*cols)
				var bias []float32
				if rng.IntN(2) == 0 {
					bias = randVec(rng, rows)
				}
				var first []float32
				for _, r := range routes {
					onRoute(t, r, func() {
						for _, threads := range []int{1, 2} {
							p := NewPool(threads)
							y := make([]float32, m*rows)
							p.MatMul(y, x, m, w, bias)
							y1 := make([]float32, rows)
							for i := range m {
								p.MatMul(y1, x[i*cols:(i+1)*cols], 1, w, bias)
								for k := range rows {
									if got, want := y[i*rows+k], y1[k]; math.Float32bits(got) != math.Float32bits(want) {
										t.Fatalf("%s %v threads=%d m=%d rows=%d nb=%d: y[%d][%d] = %v, that row alone gives %v", r, typ, threads, m, rows, nb, i, k, got, want)
									}
								}
							}
							p.Close()
							if first == nil {
								first = y
							} else if !slices.EqualFunc(y, first, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
								t.Fatalf("%s %v threads=%d m=%d rows=%d nb=%d: differs from %s", r, typ, threads, m, rows, nb, routes[0])
							}
						}
					})
				}
			}
		}
	}
}

// On each route of CPUs without AVX-512, q8 and q4 matrix products of whole
// blocks are within the bound the input quantization allows (sum over
// blocks of dx/2 times the block's |w|, plus float rounding) of the exact
// product of the dequantized weights.
func TestI8WithinQuantizationBoundOnEveryAVX2Route(t *testing.T) {
	routes := i8Routes()
	if len(routes) == 0 {
		t.Log("CPU lacks AVX2/FMA/F16C: the AVX2 kernels cannot run here")
		return
	}
	for _, r := range routes {
		onRoute(t, r, func() {
			rng := rand.New(rand.NewPCG(13, 14))
			for _, typ := range []WeightType{Q8, Q4} {
				for _, s := range []struct{ m, rows, cols int }{{1, 5, 32}, {3, 7, 64}, {5, 41, 1024}, {2, 300, 576}, {1, 2000, 1024}, {9, 37, 96}, {33, 20, 800}} {
					w, _ := randMatrix(t, rng, typ, s.rows, s.cols)
					x, bias := randVec(rng, s.m*s.cols), randVec(rng, s.rows)
					p := NewPool(2)
					y := make([]float32, s.m*s.rows)
					p.MatMul(y, x, s.m, w, bias)
					p.Close()
					wr := make([]float32, s.cols)
					for i := range s.m {
						xi := x[i*s.cols : (i+1)*s.cols]
						for k := range s.rows {
							DequantizeRow(w, k, wr)
							var exact, bound, mag float64
							for b := 0; b < s.cols; b += BlockSize {
								_, dx, _ := quantizeI8Ref(xi[b : b+BlockSize])
								for c := b; c < b+BlockSize; c++ {
									exact += float64(wr[c]) * float64(xi[c])
									bound += math.Abs(float64(wr[c])) * float64(dx) / 2
									mag += math.Abs(float64(wr[c]) * float64(xi[c]))
								}
							}
							exact += float64(bias[k])
							if d := math.Abs(float64(y[i*s.rows+k]) - exact); d > bound+1e-5*(mag+math.Abs(exact)) {
								t.Fatalf("%s %v %v row %d input %d: got %g, exact %g, |diff| %g > bound %g", r, typ, s, k, i, y[i*s.rows+k], exact, d, bound)
							}
						}
					}
				}
			}
		})
	}
}

// evexOnly matches what the Go assembler can only encode with EVEX (AVX-512):
// registers past the 16 of AVX2, mask registers, masking and broadcast
// suffixes, and instructions AVX2 does not have (VPDPBUSD among them: the
// avx2+vnni kernels emit its VEX form as bytes).
var evexOnly = regexp.MustCompile(`\b([XY](1[6-9]|2[0-9]|3[01])|Z[0-9]+|K[0-7])\b|\.(Z|BCST)\b|^\s*(VPDPBUSD|VPDPWSSD|VPERMT2|VPERMI2|VP(AND|ANDN|OR|XOR)[DQ]\b|VMOVDQ[AU](8|16|32|64)\b|VPMOV[SU]?[DQW][BWD]\b|VRNDSCALE|VSCALEF|VEXTRACT[FI](32|64)X|VINSERT[FI](32|64)X|VSHUF[FI](32|64)X|VPTERNLOG|VBROADCAST[FI](32|64)X|KMOV)`)

// The kernels of the routes without AVX-512 must run on CPUs that have no
// EVEX encoding at all: no routine of theirs (names with AVX2) may use
// anything only AVX-512 encodes. (This CPU runs them either way, so the
// other tests would not notice.)
func TestAVX2KernelsNeedNoAVX512(t *testing.T) {
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	var fn string
	checked := 0
	for n, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "TEXT ") {
			fn = strings.Fields(line)[1]
			if strings.Contains(fn, "AVX2") {
				checked++
			}
			continue
		}
		if !strings.Contains(fn, "AVX2") || strings.HasPrefix(strings.TrimSpace(line), "//") || strings.HasPrefix(strings.TrimSpace(line), "BYTE") {
			continue
		}
		if m := evexOnly.FindString(line); m != "" {
			t.Errorf("kernels_amd64.s:%d (%s): %q needs AVX-512: %s", n+1, fn, m, strings.TrimSpace(line))
		}
	}
	if checked < 90 {
		t.Errorf("checked %d AVX2 routines, want the ~95 of asmgen", checked)
	}
}
