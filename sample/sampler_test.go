package sample

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func mustNew(tb testing.TB, o Options) *Sampler {
	tb.Helper()
	s, err := New(o)
	if err != nil {
		tb.Fatalf("New(%+v): %v", o, err)
	}
	return s
}

func randomLogits(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	return x
}

func TestGreedyIsArgmax(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	tests := []struct {
		name   string
		logits []float32
		want   int
	}{
		{"single", []float32{0.5}, 0},
		{"max in middle", []float32{-1, 3, 2}, 1},
		{"ties go to lowest id", []float32{1, 5, 5, 5}, 1},
		{"NaN is never chosen", []float32{nan, -3, nan}, 1},
		{"all NaN gives id 0", []float32{nan, nan}, 0},
		{"all -Inf gives lowest id", []float32{-inf, -inf}, 0},
		{"+Inf wins", []float32{1e30, inf, 2}, 1},
		{"negative values", []float32{-5, -2, -9}, 1},
	}
	s := mustNew(t, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.Sample(tc.logits, nil); got != tc.want {
				t.Errorf("Sample(%v) = %d, want %d", tc.logits, got, tc.want)
			}
		})
	}
	if got := s.Sample(nil, nil); got != -1 {
		t.Errorf("Sample(empty) = %d, want -1", got)
	}
}

func TestTopK1IsGreedy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	greedy := mustNew(t, Options{})
	for seed := range uint64(20) {
		s := mustNew(t, Options{Temperature: 1.5, TopK: 1, TopP: 0.9, Seed: seed})
		logits := randomLogits(r, 1000)
		if got, want := s.Sample(logits, nil), greedy.Sample(logits, nil); got != want {
			t.Fatalf("seed %d: top-k 1 picked %d, greedy %d", seed, got, want)
		}
	}
}

func TestSampleNeverWritesLogits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	logits := randomLogits(r, 5000)
	orig := slices.Clone(logits)
	opts := []Options{
		{},
		{Temperature: 0.7, RepetitionPenalty: 1.3, PresencePenalty: 0.5, FrequencyPenalty: 0.5},
		{Temperature: 1, TopK: 50, TopP: 0.9, MinP: 0.05, RepetitionPenalty: 1.1},
		{Temperature: 1, TopP: 0.5},
	}
	history := []int{1, 2, 3, 3, 4999, 7}
	for _, o := range opts {
		s := mustNew(t, o)
		for range 10 {
			s.Sample(logits, history)
		}
		if !slices.Equal(logits, orig) {
			t.Fatalf("options %+v: Sample modified its logits", o)
		}
	}
}

func softmax(logits []float32, temp float64) []float64 {
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, float64(l))
	}
	p := make([]float64, len(logits))
	var z float64
	for i, l := range logits {
		p[i] = math.Exp((float64(l) - mx) / temp)
		z += p[i]
	}
	for i := range p {
		p[i] /= z
	}
	return p
}

// TestDistributionMatchesSoftmax draws many tokens with a fixed seed and
// compares frequencies with the expected probabilities. With 200k draws
// the standard error is at most 0.0012, so 0.006 is a 5-sigma bound.
func TestDistributionMatchesSoftmax(t *testing.T) {
	logits := []float32{2, 1, 0.5, -1, 0, 1.7}
	tests := []struct {
		name string
		o    Options
		want []float64
	}{
		{"temperature 1", Options{Temperature: 1}, softmax(logits, 1)},
		{"temperature 0.5", Options{Temperature: 0.5}, softmax(logits, 0.5)},
		{"temperature 2", Options{Temperature: 2}, softmax(logits, 2)},
		{"top-k 2 renormalises", Options{Temperature: 1, TopK: 2}, renorm(softmax(logits, 1), 0, 5)},
		{"min-p 0.3 keeps p >= 0.3 p_max", Options{Temperature: 1, MinP: 0.3}, renorm(softmax(logits, 1), 0, 1, 5)},
		{"top-p 0.6", Options{Temperature: 1, TopP: 0.6}, renorm(softmax(logits, 1), 0, 5)},
	}
	const draws = 200_000
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Seed = 42
			s := mustNew(t, tc.o)
			counts := make([]int, len(logits))
			for range draws {
				counts[s.Sample(logits, nil)]++
			}
			for i, want := range tc.want {
				got := float64(counts[i]) / draws
				if math.Abs(got-want) > 0.006 {
					t.Errorf("token %d: frequency %.4f, want %.4f ± 0.006", i, got, want)
				}
			}
		})
	}
}

// renorm keeps the probabilities of ids and renormalises them.
func renorm(p []float64, ids ...int) []float64 {
	out := make([]float64, len(p))
	var z float64
	for _, i := range ids {
		z += p[i]
	}
	for _, i := range ids {
		out[i] = p[i] / z
	}
	return out
}

// keptSet returns the ids the filters leave for one call, sorted.
func keptSet(s *Sampler, logits []float32, history []int) []int {
	s.grow(len(logits))
	work := s.penalise(logits, history)
	best := Argmax(work)
	ids, _ := s.filter(work, work[best])
	var out []int
	if ids == nil {
		for i, l := range work {
			if l > float32(math.Inf(-1)) {
				out = append(out, i)
			}
		}
		return out
	}
	for _, id := range ids {
		out = append(out, int(id))
	}
	slices.Sort(out)
	return out
}

func logOf(p ...float64) []float32 {
	out := make([]float32, len(p))
	for i, x := range p {
		out[i] = float32(math.Log(x))
	}
	return out
}

func TestFiltersKeepExactSets(t *testing.T) {
	// Probabilities 0.5, 0.3, 0.15, 0.05 at temperature 1.
	probs := logOf(0.15, 0.5, 0.05, 0.3)
	tests := []struct {
		name   string
		o      Options
		logits []float32
		want   []int
	}{
		{"no filter keeps all", Options{Temperature: 1}, probs, []int{0, 1, 2, 3}},
		{"top-k 2", Options{Temperature: 1, TopK: 2}, probs, []int{1, 3}},
		{"top-k larger than vocab", Options{Temperature: 1, TopK: 10}, probs, []int{0, 1, 2, 3}},
		{"top-k ties prefer lower ids", Options{Temperature: 1, TopK: 2}, []float32{1, 3, 3, 3}, []int{1, 2}},
		{"top-p 0.4 keeps the top token", Options{Temperature: 1, TopP: 0.4}, probs, []int{1}},
		{"top-p 0.75 keeps two", Options{Temperature: 1, TopP: 0.75}, probs, []int{1, 3}},
		{"top-p 0.9 keeps three", Options{Temperature: 1, TopP: 0.9}, probs, []int{0, 1, 3}},
		{"top-p 1 keeps all", Options{Temperature: 1, TopP: 1}, probs, []int{0, 1, 2, 3}},
		{"min-p 0.2 drops below 0.1", Options{Temperature: 1, MinP: 0.2}, probs, []int{0, 1, 3}},
		{"min-p 0.7 keeps the top token", Options{Temperature: 1, MinP: 0.7}, probs, []int{1}},
		{"min-p after top-k", Options{Temperature: 1, TopK: 3, MinP: 0.5}, probs, []int{1, 3}},
		{"top-p after top-k renormalises", Options{Temperature: 1, TopK: 2, TopP: 0.6}, probs, []int{1}},
		// At temperature 0.5 the probabilities become 0.5², 0.3², ... ∝
		// 0.25, 0.09, 0.0225, 0.0025: 0.25/0.365 = 0.685 < 0.7 ≤ top two.
		{"temperature applies before top-p", Options{Temperature: 0.5, TopP: 0.7}, probs, []int{1, 3}},
		{"NaN and -Inf are never kept", Options{Temperature: 1}, []float32{float32(math.NaN()), 1, float32(math.Inf(-1))}, []int{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := keptSet(mustNew(t, tc.o), tc.logits, nil)
			if !slices.Equal(got, tc.want) {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTopPOverLargeVocabularyMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, p := range []float32{0.1, 0.5, 0.9, 0.99} {
		logits := randomLogits(r, 20000)
		got := keptSet(mustNew(t, Options{Temperature: 1, TopP: p}), logits, nil)
		// Reference: sort every id, keep while the mass before < p.
		probs := softmax(logits, 1)
		ids := make([]int, len(logits))
		for i := range ids {
			ids[i] = i
		}
		slices.SortFunc(ids, func(a, b int) int {
			if probs[a] != probs[b] {
				if probs[a] > probs[b] {
					return -1
				}
				return 1
			}
			return a - b
		})
		var want []int
		var mass float64
		for _, id := range ids {
			if len(want) > 0 && mass >= float64(p) {
				break
			}
			want = append(want, id)
			mass += probs[id]
		}
		slices.Sort(want)
		if len(got) != len(want) || !slices.Equal(got, want) {
			t.Errorf("top-p %v: kept %d ids, reference %d", p, len(got), len(want))
		}
	}
}

func TestPenalties(t *testing.T) {
	logits := []float32{2, -2, 1, 0.5, 3}
	history := []int{0, 1, 1, 1, 3, 99, -1} // out-of-range ids are ignored
	tests := []struct {
		name string
		o    Options
		want []float32
	}{
		{"off", Options{}, logits},
		{"repetition divides positive, multiplies negative", Options{RepetitionPenalty: 2}, []float32{1, -4, 1, 0.25, 3}},
		{"presence once per token", Options{PresencePenalty: 0.5}, []float32{1.5, -2.5, 1, 0, 3}},
		{"frequency per occurrence", Options{FrequencyPenalty: 0.5}, []float32{1.5, -3.5, 1, 0, 3}},
		{"repetition then presence and frequency", Options{RepetitionPenalty: 2, PresencePenalty: 1, FrequencyPenalty: 1},
			[]float32{-1, -8, 1, -1.75, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, tc.o)
			s.grow(len(logits))
			got := slices.Clone(s.penalise(logits, history))
			if !slices.Equal(got, tc.want) {
				t.Errorf("penalised %v, want %v", got, tc.want)
			}
			// Counts are reset, so a second call gives the same result.
			if again := s.penalise(logits, history); !slices.Equal(again, tc.want) {
				t.Errorf("second call penalised %v, want %v", again, tc.want)
			}
		})
	}
}

func TestPenaltyChangesGreedyChoice(t *testing.T) {
	s := mustNew(t, Options{RepetitionPenalty: 3})
	if got := s.Sample([]float32{3, 2}, []int{0}); got != 1 {
		t.Errorf("with token 0 penalised, greedy picked %d, want 1", got)
	}
}

func TestSameSeedSameTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	logits := randomLogits(r, 3000)
	o := Options{Temperature: 1, TopK: 100, TopP: 0.95, Seed: 1234}
	run := func(o Options) []int {
		s := mustNew(t, o)
		var out []int
		for range 50 {
			out = append(out, s.Sample(logits, out))
		}
		return out
	}
	a, b := run(o), run(o)
	if !slices.Equal(a, b) {
		t.Fatal("two samplers with the same seed produced different tokens")
	}
	o.Seed++
	if c := run(o); slices.Equal(a, c) {
		t.Error("a different seed produced the same 50 tokens")
	}
}

func TestValidateNamesTheBadField(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		o     Options
		field string
	}{
		{Options{Temperature: -0.1}, "Temperature"},
		{Options{Temperature: nan}, "Temperature"},
		{Options{Temperature: float32(math.Inf(1))}, "Temperature"},
		{Options{TopP: -0.5}, "TopP"},
		{Options{TopP: 1.01}, "TopP"},
		{Options{MinP: 2}, "MinP"},
		{Options{MinP: -1}, "MinP"},
		{Options{TopK: -1}, "TopK"},
		{Options{RepetitionPenalty: -1}, "RepetitionPenalty"},
		{Options{RepetitionPenalty: nan}, "RepetitionPenalty"},
		{Options{PresencePenalty: 2.5}, "PresencePenalty"},
		{Options{FrequencyPenalty: -3}, "FrequencyPenalty"},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			err := tc.o.Validate()
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Field != tc.field {
				t.Fatalf("Validate(%+v) = %v, want an *OptionError for %s", tc.o, err, tc.field)
			}
			if !errors.Is(err, ErrInvalidOption) {
				t.Errorf("error %v does not wrap ErrInvalidOption", err)
			}
			if _, err := New(tc.o); err == nil {
				t.Errorf("New accepted %+v", tc.o)
			}
		})
	}
	valid := []Options{
		{},
		{Temperature: 0.8, TopP: 1, MinP: 1, TopK: 40, RepetitionPenalty: 1.2, PresencePenalty: -2, FrequencyPenalty: 2},
	}
	for _, o := range valid {
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", o, err)
		}
	}
}

func TestSampleDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	logits := randomLogits(r, 50000)
	history := []int{5, 6, 7, 7, 100}
	opts := map[string]Options{
		"greedy":               {},
		"greedy+penalties":     {RepetitionPenalty: 1.2, FrequencyPenalty: 0.3},
		"temperature only":     {Temperature: 0.8},
		"top-k+top-p+min-p":    {Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, RepetitionPenalty: 1.1},
		"top-p only":           {Temperature: 1, TopP: 0.95},
		"min-p only":           {Temperature: 1, MinP: 0.1},
		"top-k half the vocab": {Temperature: 1, TopK: 25000},
	}
	for name, o := range opts {
		s := mustNew(t, o)
		s.Sample(logits, history) // sizes the scratch buffers
		if n := testing.AllocsPerRun(20, func() { s.Sample(logits, history) }); n != 0 {
			t.Errorf("%s: %v allocations per Sample, want 0", name, n)
		}
	}
}

func FuzzSample(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 64}, float32(1), 2, float32(0.9), float32(0.1), float32(1.1), uint64(1))
	f.Add([]byte{0, 0, 192, 127, 0, 0, 128, 255, 0, 0, 128, 127}, float32(0), 0, float32(0), float32(0), float32(0), uint64(2))
	f.Fuzz(func(t *testing.T, raw []byte, temp float32, topK int, topP, minP, rep float32, seed uint64) {
		o := Options{Temperature: temp, TopK: topK, TopP: topP, MinP: minP, RepetitionPenalty: rep, Seed: seed}
		s, err := New(o)
		if err != nil {
			return
		}
		logits := make([]float32, len(raw)/4)
		for i := range logits {
			logits[i] = math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
		}
		history := make([]int, len(raw)%7)
		for i := range history {
			history[i] = int(raw[i]) - 3
		}
		got := s.Sample(logits, history)
		if len(logits) == 0 {
			if got != -1 {
				t.Fatalf("empty logits gave %d", got)
			}
			return
		}
		if got < 0 || got >= len(logits) {
			t.Fatalf("Sample returned %d for %d logits", got, len(logits))
		}
	})
}

func BenchmarkSample(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	logits := randomLogits(r, 262144)
	history := []int{1, 2, 3, 4, 5, 6, 7, 8}
	for _, bc := range []struct {
		name string
		o    Options
	}{
		{"vocab=262144/greedy", Options{}},
		{"vocab=262144/temperature", Options{Temperature: 0.8}},
		{"vocab=262144/top-k=40", Options{Temperature: 0.8, TopK: 40}},
		{"vocab=262144/top-p=0.9", Options{Temperature: 0.8, TopP: 0.9}},
		{"vocab=262144/top-k=40+top-p+min-p+penalties", Options{Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, RepetitionPenalty: 1.1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := mustNew(b, bc.o)
			b.ReportAllocs()
			for b.Loop() {
				s.Sample(logits, history)
			}
		})
	}
}

func TestExpNonPositiveMatchesMathExp(t *testing.T) {
	worst := 0.0
	for x := 0.0; x > -700; x -= 0.0137 {
		got, want := expNonPositive(x), math.Exp(x)
		if rel := math.Abs(got-want) / want; rel > worst {
			worst = rel
		}
	}
	if worst > 5e-8 {
		t.Errorf("worst relative error %.3g, want <= 5e-8", worst)
	}
	if got := expNonPositive(-800); got != 0 {
		t.Errorf("expNonPositive(-800) = %g, want 0", got)
	}
	if got := expNonPositive(math.Inf(-1)); got != 0 {
		t.Errorf("expNonPositive(-Inf) = %g, want 0", got)
	}
}

// BenchmarkSampleMasked measures what a grammar mask adds to sampling over a Qwen3-sized
// vocabulary (151,936 ids, half of them allowed) with the default filters.
func BenchmarkSampleMasked(b *testing.B) {
	const vocab = 151936
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = float32((i*7919)%1000) / 100
	}
	mask := make([]uint64, (vocab+63)/64)
	for i := range mask {
		mask[i] = 0x5555555555555555
	}
	for _, masked := range []bool{false, true} {
		name := "unmasked"
		if masked {
			name = "masked"
		}
		b.Run(name, func(b *testing.B) {
			s, err := New(Options{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if masked {
					s.SampleMasked(logits, nil, mask)
				} else {
					s.Sample(logits, nil)
				}
			}
		})
	}
}

func TestArgmaxMasked(t *testing.T) {
	nan := float32(math.NaN())
	x := []float32{5, 1, 9, 9, nan, 7}
	for _, c := range []struct {
		allowed []uint64
		want    int
	}{
		{nil, 2},
		{[]uint64{0b111111}, 2},
		{[]uint64{0b110011}, 5}, // 9s masked out: 7 wins over 5 and 1
		{[]uint64{0b001000}, 3},
		{[]uint64{0b010000}, -1}, // only the NaN
		{[]uint64{0}, -1},
	} {
		if got := ArgmaxMasked(x, c.allowed); got != c.want {
			t.Errorf("ArgmaxMasked(%v, %b) = %d, want %d", x, c.allowed, got, c.want)
		}
	}
}
