package tokenizer

import "math/bits"

// mergeTable maps a pair of token ids to its merge. It is an open-addressing
// table with linear probing whose entries hold key and value together, so a
// lookup usually touches one cache line; merge lookups dominate encoding.
type mergeTable struct {
	entries []mergeEntry // id < 0 marks an empty slot
	shift   uint         // 64 - log2(len(entries))
}

type mergeEntry struct {
	key      uint64
	rank, id int32
}

func newMergeTable(n int) *mergeTable {
	size := 1 << bits.Len(uint(n+n/2)) // load factor at most 2/3
	t := &mergeTable{entries: make([]mergeEntry, size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
	for i := range t.entries {
		t.entries[i].id = -1
	}
	return t
}

func (t *mergeTable) slot(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> t.shift }

// put sets the merge of a pair; a later merge of the same pair replaces the
// earlier one, as when Hugging Face collects merges into a map.
func (t *mergeTable) put(a, b int32, m bpeMerge) {
	key := pairKey(a, b)
	mask := uint64(len(t.entries) - 1)
	for i := t.slot(key); ; i = (i + 1) & mask {
		e := &t.entries[i]
		if e.id < 0 || e.key == key {
			*e = mergeEntry{key: key, rank: m.rank, id: m.id}
			return
		}
	}
}

func (t *mergeTable) get(a, b int32) (bpeMerge, bool) {
	key := pairKey(a, b)
	mask := uint64(len(t.entries) - 1)
	for i := t.slot(key); ; i = (i + 1) & mask {
		e := &t.entries[i]
		if e.key == key && e.id >= 0 {
			return bpeMerge{rank: e.rank, id: e.id}, true
		}
		if e.id < 0 {
			return bpeMerge{}, false
		}
	}
}
