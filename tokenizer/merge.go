package tokenizer

import (
	"math"
	"slices"
)

// symbol is one node of the doubly linked list a word is merged in.
type symbol struct {
	id         int32
	prev, next int32 // -1 at the ends
	gone       bool  // merged into its left neighbour
}

// mergeScratch holds the buffers of one Encode call, reused through the
// tokenizer's free list so that encoding allocates little.
type mergeScratch struct {
	syms   []symbol
	heap   mergeHeap
	pairs  []bpeMerge
	merges *mergeTable
	// recent is a direct-mapped cache of merge lookups (including misses):
	// the merge table is tens of megabytes and each lookup there is a cache
	// miss, while a word's pairs repeat across a text.
	recent []recentMerge
}

// recentMerge caches one lookup; key is pairKey+1 so that 0 means empty, and
// id -1 records a pair without merge.
type recentMerge struct {
	key      uint64
	rank, id int32
}

const recentBits = 15 // 512 KiB per scratch: stays in L2

// maxIdleScratch bounds the idle scratch buffers kept per tokenizer (one
// per concurrent Encode is enough).
const maxIdleScratch = 8

func (sc *mergeScratch) get(a, b int32) (bpeMerge, bool) {
	if sc.recent == nil {
		sc.recent = make([]recentMerge, 1<<recentBits)
	}
	key := pairKey(a, b) + 1
	e := &sc.recent[(key*0x9E3779B97F4A7C15)>>(64-recentBits)]
	if e.key == key {
		return bpeMerge{rank: e.rank, id: e.id}, e.id >= 0
	}
	mg, ok := sc.merges.get(a, b)
	if !ok {
		mg.id = -1
	}
	*e = recentMerge{key: key, rank: mg.rank, id: mg.id}
	return mg, ok
}

// mergeAll applies merges in rank order (leftmost first on ties) with a
// binary heap of candidate pairs; a candidate whose two symbols changed
// since it was pushed is stale and skipped. It returns the heap buffer for
// reuse.
// In byte-level mode syms are the bytes of w.
func (m *bpe) mergeAll(w string, syms []symbol, h mergeHeap, sc *mergeScratch) mergeHeap {
	if len(syms) < 2 {
		return h
	}
	for i := 0; i+1 < len(syms); i++ {
		a, b := syms[i].id, syms[i+1].id
		var mg bpeMerge
		var ok bool
		if m.bytePairs != nil {
			mg = m.bytePairs[int(w[i])<<8|int(w[i+1])]
			ok = mg.id >= 0
		} else {
			mg, ok = sc.get(a, b)
		}
		if ok {
			h = append(h, candidate{rank: mg.rank, pos: int32(i), id: mg.id, left: a, right: b})
		}
	}
	h.init()
	for len(h) > 0 {
		top := h.pop()
		cur := &syms[top.pos]
		if cur.gone || cur.next < 0 || cur.id != top.left || syms[cur.next].id != top.right {
			continue
		}
		right := &syms[cur.next]
		cur.id = top.id
		right.gone = true
		cur.next = right.next
		if cur.next >= 0 {
			syms[cur.next].prev = top.pos
		}
		if cur.prev >= 0 {
			left := syms[cur.prev].id
			if mg, ok := sc.get(left, cur.id); ok {
				h.push(candidate{rank: mg.rank, pos: cur.prev, id: mg.id, left: left, right: cur.id})
			}
		}
		if cur.next >= 0 {
			next := syms[cur.next].id
			if mg, ok := sc.get(cur.id, next); ok {
				h.push(candidate{rank: mg.rank, pos: top.pos, id: mg.id, left: cur.id, right: next})
			}
		}
	}
	return h
}

// maxScanMerge is the word length (in symbols) up to which mergeScan, which
// rescans the word for the best pair, beats the heap of mergeAll.
const maxScanMerge = 96

// mergeScan gives the same result as mergeAll for short words: it keeps
// the merge of each adjacent pair (pairs[i] for symbol i and its next) and
// repeatedly applies the one with the lowest rank, leftmost first. It
// returns the pairs buffer for reuse.
func (m *bpe) mergeScan(w string, syms []symbol, pairs []bpeMerge, sc *mergeScratch) []bpeMerge {
	pairs = slices.Grow(pairs, len(syms))[:len(syms)]
	// Pairs without a merge (and removed symbols) rank last, so finding the
	// best pair is a plain scan of the array.
	none := bpeMerge{rank: math.MaxInt32, id: -1}
	for i := range syms {
		pairs[i] = none
		if i+1 == len(syms) {
			break
		}
		var mg bpeMerge
		ok := false
		if m.bytePairs != nil {
			mg = m.bytePairs[int(w[i])<<8|int(w[i+1])]
			ok = mg.id >= 0
		} else {
			mg, ok = sc.get(syms[i].id, syms[i+1].id)
		}
		if ok {
			pairs[i] = mg
		}
	}
	for {
		best, bestRank := int32(-1), int32(math.MaxInt32)
		for i, p := range pairs {
			if p.rank < bestRank {
				best, bestRank = int32(i), p.rank
			}
		}
		if best < 0 {
			return pairs
		}
		cur := &syms[best]
		right := &syms[cur.next]
		pairs[cur.next] = none
		cur.id = pairs[best].id
		right.gone = true
		cur.next = right.next
		if cur.next >= 0 {
			syms[cur.next].prev = best
			if mg, ok := sc.get(cur.id, syms[cur.next].id); ok {
				pairs[best] = mg
			} else {
				pairs[best] = none
			}
		} else {
			pairs[best] = none
		}
		if cur.prev >= 0 {
			if mg, ok := sc.get(syms[cur.prev].id, cur.id); ok {
				pairs[cur.prev] = mg
			} else {
				pairs[cur.prev] = none
			}
		}
	}
}

type candidate struct{ rank, pos, id, left, right int32 }

func (a candidate) less(b candidate) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

// mergeHeap is a binary min-heap of candidates.
type mergeHeap []candidate

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) push(c candidate) {
	*h = append(*h, c)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *mergeHeap) pop() candidate {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	*h = s[:n]
	h.down(0)
	return top
}

func (h mergeHeap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h[r].less(h[l]) {
			c = r
		}
		if !h[c].less(h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
