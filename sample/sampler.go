package sample

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Sampler draws token ids from logits. It keeps scratch buffers sized to
// the vocabulary, so after the first call Sample does not allocate. A
// Sampler is not safe for concurrent use; use one per sequence.
type Sampler struct {
	o   Options
	rng *rand.Rand

	work    []float32 // [vocab] penalised copy of the logits
	counts  []int32   // [vocab] occurrences in history; all zero between calls
	order   byLogit   // candidate ids, best first; ids aliases idBuf
	idBuf   []int32   // [vocab] storage for candidate ids and the top-m heap
	weights []float64 // [vocab] unnormalised probabilities, parallel to candidates
	all     []float64 // [vocab] unnormalised probability of every id (top-p)
}

// New returns a Sampler for valid options.
func New(o Options) (*Sampler, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Sampler{o: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))}, nil
}

// Options returns the options the Sampler was made with.
func (s *Sampler) Options() Options { return s.o }

// Sample returns the next token id for one row of logits. logits is only
// read; history holds the ids generated (or prompted) so far, for the
// penalties (ids outside the vocabulary are ignored). NaN logits are never
// chosen. It returns -1 only when logits is empty.
func (s *Sampler) Sample(logits []float32, history []int) int {
	return s.SampleMasked(logits, history, nil)
}

// SampleMasked is Sample restricted to the token ids whose bit is set in allowed (bit i%64 of
// allowed[i/64]; nil allows every id): the others get -Inf before penalties, temperature and
// the filters apply, so every sampler works unchanged over the allowed set. It returns -1
// when logits is empty or allowed admits no id of it.
func (s *Sampler) SampleMasked(logits []float32, history []int, allowed []uint64) int {
	n := len(logits)
	if n == 0 {
		return -1
	}
	s.grow(n)
	work := s.penalise(logits, history)
	if allowed != nil {
		if &work[0] == &logits[0] {
			work = s.work[:n]
			copy(work, logits)
		}
		if !applyMask(work, allowed) {
			return -1
		}
	}
	best := Argmax(work)
	if best < 0 {
		return 0 // every logit is NaN: nothing to prefer, pick the lowest id
	}
	maxL := work[best]
	if s.o.Temperature == 0 || s.o.TopK == 1 || math.IsInf(float64(maxL), 0) {
		return best
	}
	ids, weights := s.filter(work, maxL)
	if ids == nil { // no filter applied: draw over the whole vocabulary
		return s.drawAll(work, maxL)
	}
	return s.draw(ids, weights)
}

func (s *Sampler) grow(n int) {
	if len(s.work) < n {
		s.work = make([]float32, n)
		s.counts = make([]int32, n)
		s.idBuf = make([]int32, n)
		s.weights = make([]float64, n)
		s.all = make([]float64, n)
	}
}

// penalise applies the repetition, presence and frequency penalties to the
// tokens in history. It returns logits itself when no penalty applies.
func (s *Sampler) penalise(logits []float32, history []int) []float32 {
	rp := s.o.RepetitionPenalty
	if rp == 0 {
		rp = 1
	}
	pres, freq := s.o.PresencePenalty, s.o.FrequencyPenalty
	if len(history) == 0 || (rp == 1 && pres == 0 && freq == 0) {
		return logits
	}
	n := len(logits)
	work, counts := s.work[:n], s.counts[:n]
	copy(work, logits)
	for _, t := range history {
		if t >= 0 && t < n {
			counts[t]++
		}
	}
	for _, t := range history {
		if t < 0 || t >= n || counts[t] == 0 {
			continue
		}
		c := counts[t]
		counts[t] = 0 // each distinct token once; leaves counts zeroed
		l := work[t]
		if rp != 1 {
			if l < 0 {
				l *= rp
			} else {
				l /= rp
			}
		}
		work[t] = l - float32(c)*freq - pres
	}
	return work
}

// applyMask sets the logits of ids outside allowed to -Inf and reports whether any id is
// allowed.
func applyMask(work []float32, allowed []uint64) bool {
	inf := float32(math.Inf(-1))
	any := false
	for w := 0; w*64 < len(work); w++ {
		var bits uint64
		if w < len(allowed) {
			bits = allowed[w]
		}
		any = any || bits != 0
		if bits == ^uint64(0) {
			continue
		}
		row := work[w*64 : min(w*64+64, len(work))]
		for i := range row {
			if bits&(1<<uint(i)) == 0 {
				row[i] = inf
			}
		}
	}
	return any
}

// Argmax returns the index of the largest non-NaN value of x, ties to the
// lowest index, or -1 when x is empty or every value is NaN. It is the one
// argmax of the module (greedy decoding, accuracy, the CLI's logits dumps).
func Argmax(x []float32) int {
	// Four running maxima keep the comparisons independent.
	inf := float32(math.Inf(-1))
	m0, m1, m2, m3 := inf, inf, inf, inf
	i := 0
	for ; i+4 <= len(x); i += 4 {
		if x[i] > m0 {
			m0 = x[i]
		}
		if x[i+1] > m1 {
			m1 = x[i+1]
		}
		if x[i+2] > m2 {
			m2 = x[i+2]
		}
		if x[i+3] > m3 {
			m3 = x[i+3]
		}
	}
	for ; i < len(x); i++ {
		if x[i] > m0 {
			m0 = x[i]
		}
	}
	best := max(m0, m1, m2, m3) // none is NaN: NaN never compares greater
	for i, v := range x {
		if v == best {
			return i
		}
	}
	return -1 // every logit is NaN
}

// ArgmaxMasked is Argmax over the ids whose bit is set in allowed (nil allows all): the
// lowest id among the largest allowed logits, or -1 if none is allowed or all are NaN.
func ArgmaxMasked(x []float32, allowed []uint64) int {
	if allowed == nil {
		return Argmax(x)
	}
	best := -1
	for i, v := range x {
		if i>>6 >= len(allowed) || allowed[i>>6]>>(i&63)&1 == 0 || v != v {
			continue
		}
		if best < 0 || v > x[best] {
			best = i
		}
	}
	return best
}

// filter applies top-k, top-p and min-p. It returns the kept ids with
// their unnormalised probabilities (in no promised order), or nil, nil when
// no filter is active (every finite logit stays).
func (s *Sampler) filter(work []float32, maxL float32) ([]int32, []float64) {
	invT := 1 / float64(s.o.Temperature)
	topK := s.o.TopK
	topP := float64(s.o.TopP)
	if topP == 0 {
		topP = 1
	}
	minP := float64(s.o.MinP)
	n := len(work)
	if topK >= n {
		topK = 0
	}
	if topK == 0 && topP >= 1 && minP == 0 {
		return nil, nil
	}

	var ids []int32
	weights := s.weights
	switch {
	case topK > 0:
		// The k best, best first; then top-p renormalised over them.
		ids = s.selectTop(work, topK)
		weights = weights[:len(ids)]
		var z float64
		for k, id := range ids {
			weights[k] = weightOf(work[id], maxL, invT)
			z += weights[k]
		}
		if topP < 1 {
			target := topP * z
			var mass float64
			for k, w := range weights {
				if k > 0 && mass >= target {
					ids, weights = ids[:k], weights[:k]
					break
				}
				mass += w
			}
		}
	default:
		all := s.all[:n]
		var z float64
		for i, l := range work {
			w := 0.0
			if l > float32(math.Inf(-1)) {
				w = weightOf(l, maxL, invT)
			}
			all[i] = w
			z += w
		}
		if topP < 1 {
			ids = s.topP(work, all, topP*z)
		} else {
			ids = s.idBuf[:0]
			for i, w := range all {
				if w > 0 {
					ids = append(ids, int32(i))
				}
			}
		}
		weights = weights[:len(ids)]
		for k, id := range ids {
			weights[k] = all[id]
		}
	}
	if minP > 0 {
		// p_i >= minP * p_max  <=>  w_i >= minP, as w_max = exp(0) = 1;
		// the best token always stays.
		kept := 0
		for k, w := range weights {
			if w >= minP {
				ids[kept], weights[kept] = ids[k], w
				kept++
			}
		}
		ids, weights = ids[:kept], weights[:kept]
	}
	return ids, weights
}

// topP returns the smallest set of ids, taken best first, whose weights
// reach target: an id is kept while the mass of the ids before it is below
// target. Rather than sorting the vocabulary it buckets weights by binary
// exponent, keeps every bucket above the one where the mass crosses target,
// and sorts only that bucket to find the exact cut.
func (s *Sampler) topP(work []float32, all []float64, target float64) []int32 {
	var mass [topPBuckets]float64
	for _, w := range all {
		if w > 0 {
			mass[weightBucket(w)] += w
		}
	}
	cross, before := topPBuckets-1, 0.0
	for b, m := range mass {
		if before+m >= target {
			cross = b
			break
		}
		before += m
	}
	ids := s.idBuf[:0]
	for i, w := range all {
		if w > 0 && weightBucket(w) < cross {
			ids = append(ids, int32(i))
		}
	}
	sure := len(ids)
	for i, w := range all {
		if w > 0 && weightBucket(w) == cross {
			ids = append(ids, int32(i))
		}
	}
	s.order.ids, s.order.logits = ids[sure:], work
	sort.Sort(&s.order)
	for k := sure; k < len(ids); k++ {
		if k > 0 && before >= target {
			return ids[:k]
		}
		before += all[ids[k]]
	}
	return ids
}

const topPBuckets = 64

// weightBucket maps a weight in (0, 1] to its bucket: 0 for [0.5, 1], 1 for
// [0.25, 0.5), and so on; the last bucket takes everything smaller.
func weightBucket(w float64) int {
	biased := int(math.Float64bits(w)>>52) & 0x7ff // 1022 for [0.5, 1)
	return min(max(1022-biased, 0), topPBuckets-1)
}

// draw picks one of ids with probability proportional to weights.
func (s *Sampler) draw(ids []int32, weights []float64) int {
	var z float64
	for _, w := range weights {
		z += w
	}
	u := s.rng.Float64() * z
	var acc float64
	for k, w := range weights {
		acc += w
		if u < acc {
			return int(ids[k])
		}
	}
	return int(ids[len(ids)-1])
}

// drawAll draws over every finite logit without ordering them.
func (s *Sampler) drawAll(work []float32, maxL float32) int {
	invT := 1 / float64(s.o.Temperature)
	weights := s.weights[:len(work)]
	var z float64
	for i, l := range work {
		w := 0.0
		if l > float32(math.Inf(-1)) {
			w = weightOf(l, maxL, invT)
		}
		weights[i] = w
		z += w
	}
	u := s.rng.Float64() * z
	var acc float64
	last := 0
	for i, w := range weights {
		if w == 0 {
			continue
		}
		acc += w
		last = i
		if u < acc {
			return i
		}
	}
	return last
}

// selectTop returns the ids of the m largest finite logits (fewer if the
// vocabulary has fewer), best first, ties to the lower id. It uses a
// bounded heap when m is small next to the vocabulary, else a full sort.
func (s *Sampler) selectTop(work []float32, m int) []int32 {
	n := len(work)
	m = min(m, n)
	s.order.logits = work
	negInf := float32(math.Inf(-1))
	if m*8 >= n {
		ids := s.idBuf[:0]
		for i, l := range work {
			if l > negInf {
				ids = append(ids, int32(i))
			}
		}
		s.order.ids = ids
		sort.Sort(&s.order)
		return ids[:min(m, len(ids))]
	}
	// Min-heap of the best m so far: heap[0] is the worst kept.
	heap := s.idBuf[:0]
	for i, l := range work {
		if !(l > negInf) {
			continue
		}
		id := int32(i)
		if len(heap) < m {
			heap = append(heap, id)
			siftUp(heap, work, len(heap)-1)
			continue
		}
		if better(work, id, heap[0]) {
			heap[0] = id
			siftDown(heap, work, 0)
		}
	}
	s.order.ids = heap
	sort.Sort(&s.order)
	return heap
}

// better orders ids by logit, descending, then by id, ascending.
func better(work []float32, a, b int32) bool {
	if work[a] != work[b] {
		return work[a] > work[b]
	}
	return a < b
}

func siftUp(h []int32, work []float32, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(work, h[p], h[i]) {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []int32, work []float32, i int) {
	for {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && better(work, h[worst], h[l]) {
			worst = l
		}
		if r < len(h) && better(work, h[worst], h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}

// byLogit sorts candidate ids best first (see better).
type byLogit struct {
	ids    []int32
	logits []float32
}

func (b *byLogit) Len() int           { return len(b.ids) }
func (b *byLogit) Less(i, j int) bool { return better(b.logits, b.ids[i], b.ids[j]) }
func (b *byLogit) Swap(i, j int)      { b.ids[i], b.ids[j] = b.ids[j], b.ids[i] }
