package tokenizer

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// bpe is Hugging Face's BPE model: a word starts as one symbol per character
// (per byte for byte-level vocabularies) and the adjacent pair with the
// lowest merge rank is merged until no pair has a rank; ties go to the
// leftmost pair.
type bpe struct {
	vocab     map[string]int // token → id
	idToToken []string       // [id] token
	hasID     []bool         // [id] whether the vocab has this id
	merges    *mergeTable
	unk       int32 // -1: no unknown token
	fuseUnk   bool
	fallback  bool // byte_fallback: unknown characters become <0xNN> tokens
	ignore    bool // ignore_merges: a word found in the vocab is one token
	prefix    string
	suffix    string

	byteLevel   bool
	byteIDs     [256]int32     // byte-level: id of the character token of each byte, -1 if missing
	fallbackIDs [256]int32     // id of <0xNN>, -1 if missing
	rawVocab    map[string]int // byte-level with ignore_merges: raw bytes → id
	bytePairs   []bpeMerge     // byte-level: [a<<8|b] merge of the byte tokens of a and b (id -1: none)
	runeIDs     []int32        // [r] id of the one-character token r (r < len), -1 if none; nil with prefix/suffix
	// maxCover is the most symbols of a word (bytes for byte-level
	// vocabularies, characters otherwise) one token stands for: the longest
	// token in characters. 0 when an unknown token may stand for a run of
	// any length (fuse_unk without a complete byte fallback).
	maxCover int

	cache wordCache
	free  chan *mergeScratch // idle scratch buffers
}

// runeTableSize covers the alphabets before CJK (Latin to the ▁ of
// SentencePiece) with a direct character → id table.
const runeTableSize = 0x3000

type bpeMerge struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func newBPE(mj *modelJSON, merges [][2]string, byteLevel bool) (*bpe, error) {
	if isNull(mj.Vocab) {
		return nil, invalidf("model has no vocab")
	}
	vocab, err := parseVocab(mj.Vocab)
	if err != nil {
		return nil, err
	}
	m := &bpe{vocab: vocab, unk: -1, fuseUnk: mj.FuseUnk, fallback: mj.ByteFallback,
		ignore: mj.IgnoreMerges, byteLevel: byteLevel}
	if mj.ContinuingSubwordPrefix != nil {
		m.prefix = *mj.ContinuingSubwordPrefix
	}
	if mj.EndOfWordSuffix != nil {
		m.suffix = *mj.EndOfWordSuffix
	}
	if byteLevel && (m.prefix != "" || m.suffix != "") {
		return nil, &UnsupportedError{Component: "model", Type: "byte-level BPE with continuing_subword_prefix or end_of_word_suffix"}
	}
	n := 0
	for tok, id := range m.vocab {
		if id < 0 || id > maxTokenID {
			return nil, invalidf("model vocab token %q has id %d outside 0..%d", tok, id, maxTokenID)
		}
		n = max(n, id+1)
	}
	if err := checkIDSpace(n, len(m.vocab)); err != nil {
		return nil, err
	}
	m.idToToken = make([]string, n)
	m.hasID = make([]bool, n)
	for tok := range m.vocab {
		// Byte-level tokens spell one character per byte; a merged token stands for the
		// characters it spells (fewer with a continuing-subword prefix), a <0xNN> token
		// for part of one character, an unknown token for one.
		m.maxCover = max(m.maxCover, utf8.RuneCountInString(tok), 1)
	}
	for tok, id := range m.vocab {
		if m.hasID[id] {
			return nil, invalidf("model vocab gives id %d to both %q and %q", id, m.idToToken[id], tok)
		}
		m.idToToken[id], m.hasID[id] = tok, true
	}
	if mj.UnkToken != nil {
		id, ok := m.vocab[*mj.UnkToken]
		if !ok {
			return nil, invalidf("model unk_token %q is not in the vocab", *mj.UnkToken)
		}
		m.unk = int32(id)
	}
	m.merges = newMergeTable(len(merges))
	m.free = make(chan *mergeScratch, maxIdleScratch)
	for rank, mg := range merges {
		a, okA := m.vocab[mg[0]]
		b, okB := m.vocab[mg[1]]
		if !okA || !okB {
			return nil, invalidf("model merge %d (%q %q) uses a token that is not in the vocab", rank, mg[0], mg[1])
		}
		right := mg[1]
		if len(m.prefix) <= len(right) && right[:len(m.prefix)] == m.prefix {
			right = right[len(m.prefix):]
		}
		id, ok := m.vocab[mg[0]+right]
		if !ok {
			return nil, invalidf("model merge %d (%q %q) makes %q, which is not in the vocab", rank, mg[0], mg[1], mg[0]+right)
		}
		m.merges.put(int32(a), int32(b), bpeMerge{rank: int32(rank), id: int32(id)})
	}
	completeFallback := m.fallback
	for b := 0; b < 256; b++ {
		m.byteIDs[b], m.fallbackIDs[b] = -1, -1
		if id, ok := m.vocab[byteToChar[b]]; ok {
			m.byteIDs[b] = int32(id)
		}
		if id, ok := m.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.fallbackIDs[b] = int32(id)
		} else {
			completeFallback = false
		}
	}
	if m.fuseUnk && !byteLevel && !completeFallback {
		m.maxCover = 0
	}
	if m.prefix == "" && m.suffix == "" && !byteLevel {
		m.runeIDs = make([]int32, runeTableSize)
		for r := range m.runeIDs {
			m.runeIDs[r] = -1
			if id, ok := m.vocab[string(rune(r))]; ok && utf8.ValidRune(rune(r)) {
				m.runeIDs[r] = int32(id)
			}
		}
	}
	if byteLevel {
		m.buildBytePairs()
	}
	if byteLevel && m.ignore {
		m.rawVocab = make(map[string]int, len(m.vocab))
		for tok, id := range m.vocab {
			if raw, ok := byteLevelDecode(tok); ok {
				m.rawVocab[string(raw)] = id
			}
		}
	}
	return m, nil
}

// getScratch takes a scratch from the free list (or makes one); putScratch
// returns it. A channel keeps them across garbage collections, unlike a
// sync.Pool, so their merge caches stay warm.
func (m *bpe) getScratch() *mergeScratch {
	select {
	case sc := <-m.free:
		return sc
	default:
		return &mergeScratch{merges: m.merges}
	}
}

// maxKeptSymbols bounds the symbol and heap buffers a scratch keeps for
// the next Encode: one long word must not leave hundreds of megabytes held
// by every idle scratch.
const maxKeptSymbols = 1 << 16

func (m *bpe) putScratch(sc *mergeScratch) {
	if cap(sc.syms) > maxKeptSymbols || cap(sc.heap) > 2*maxKeptSymbols || cap(sc.pairs) > maxKeptSymbols {
		sc.syms, sc.heap, sc.pairs = nil, nil, nil
	}
	select {
	case m.free <- sc:
	default:
	}
}

func (m *bpe) tokens() ([]string, []bool) { return m.idToToken, m.hasID }

func (m *bpe) id(tok string) (int, bool) {
	id, ok := m.vocab[tok]
	return id, ok
}

// minTokens is the symbols of w over the most one token stands for.
func (m *bpe) minTokens(w string) int {
	switch {
	case w == "":
		return 0
	case m.maxCover == 0:
		return 1
	case m.byteLevel:
		return (len(w) + m.maxCover - 1) / m.maxCover
	}
	return (utf8.RuneCountInString(w) + m.maxCover - 1) / m.maxCover
}

// encodeWord appends the ids of one pre-tokenized word.
func (m *bpe) encodeWord(w string, dst []int, sc *mergeScratch) ([]int, error) {
	if w == "" {
		return dst, nil
	}
	if m.ignore {
		vocab := m.vocab
		if m.byteLevel {
			vocab = m.rawVocab
		}
		if id, ok := vocab[w]; ok {
			return append(dst, id), nil
		}
	}
	cacheable := len(w) <= maxCachedWord
	if cacheable {
		if ids, ok := m.cache.get(w); ok {
			for _, id := range ids {
				dst = append(dst, int(id))
			}
			return dst, nil
		}
	}
	var syms []symbol
	var err error
	if m.byteLevel {
		syms, err = m.byteSymbols(w, sc.syms[:0])
	} else {
		syms, err = m.charSymbols(w, sc.syms[:0])
	}
	if err != nil {
		return nil, err
	}
	sc.syms = syms
	if len(syms) <= maxScanMerge {
		sc.pairs = m.mergeScan(w, syms, sc.pairs[:0], sc)
	} else {
		sc.heap = m.mergeAll(w, syms, sc.heap[:0], sc)
	}
	start := len(dst)
	for i := 0; i >= 0 && i < len(syms); i = int(syms[i].next) {
		dst = append(dst, int(syms[i].id))
	}
	if cacheable {
		ids := make([]int32, len(dst)-start)
		for k, id := range dst[start:] {
			ids[k] = int32(id)
		}
		m.cache.put(w, ids)
	}
	return dst, nil
}

func (m *bpe) byteSymbols(w string, syms []symbol) ([]symbol, error) {
	syms = slices.Grow(syms, len(w))[:len(w)]
	for i := 0; i < len(w); i++ {
		id := m.byteIDs[w[i]]
		if id < 0 {
			if m.unk < 0 {
				return nil, invalidf("byte-level vocab has no token for byte 0x%02X and no unk_token", w[i])
			}
			id = m.unk
		}
		syms[i] = symbol{id: id, prev: int32(i - 1), next: int32(i + 1)}
	}
	syms[len(syms)-1].next = -1
	return syms, nil
}

// charSymbols maps each character to a token, falling back to <0xNN> byte
// tokens or the unknown token exactly as Hugging Face's BPE::merge_word.
func (m *bpe) charSymbols(w string, syms []symbol) ([]symbol, error) {
	add := func(id int32) { syms = append(syms, symbol{id: id}) }
	pendingUnk := false
	for i := 0; i < len(w); {
		r, size := utf8.DecodeRuneInString(w[i:])
		if int(r) < len(m.runeIDs) && m.runeIDs[r] >= 0 {
			if pendingUnk {
				add(m.unk)
				pendingUnk = false
			}
			add(m.runeIDs[r])
			i += size
			continue
		}
		s := w[i : i+size]
		if m.prefix != "" && i > 0 {
			s = m.prefix + s
		}
		if m.suffix != "" && i+size == len(w) {
			s += m.suffix
		}
		i += size
		if id, ok := m.vocab[s]; ok {
			if pendingUnk {
				add(m.unk)
				pendingUnk = false
			}
			add(int32(id))
			continue
		}
		if m.fallback && m.allFallback(s) {
			for k := 0; k < len(s); k++ {
				add(m.fallbackIDs[s[k]])
			}
			continue
		}
		if m.unk < 0 {
			return nil, invalidf("character %q is not in the vocab and the model has no unk_token", s)
		}
		if pendingUnk && !m.fuseUnk {
			add(m.unk)
		}
		pendingUnk = true
	}
	if pendingUnk {
		add(m.unk)
	}
	for i := range syms {
		syms[i].prev, syms[i].next = int32(i-1), int32(i+1)
	}
	syms[len(syms)-1].next = -1
	return syms, nil
}

func (m *bpe) allFallback(s string) bool {
	for k := 0; k < len(s); k++ {
		if m.fallbackIDs[s[k]] < 0 {
			return false
		}
	}
	return true
}

// maxCachedWord and maxCacheEntries bound the word cache (as in Hugging
// Face: long words are not cached; the cache is cleared when full).
const (
	maxCachedWord   = 256
	maxCacheEntries = 1 << 16
)

type wordCache struct {
	mu    sync.Mutex
	words map[string][]int32
}

func (c *wordCache) get(w string) ([]int32, bool) {
	c.mu.Lock()
	ids, ok := c.words[w]
	c.mu.Unlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	c.mu.Lock()
	if c.words == nil || len(c.words) >= maxCacheEntries {
		c.words = make(map[string][]int32, 1024)
	}
	c.words[strings.Clone(w)] = ids
	c.mu.Unlock()
}

func (c *wordCache) reset() {
	c.mu.Lock()
	c.words = nil
	c.mu.Unlock()
}

// buildBytePairs tabulates the merges of two single-byte tokens, which start
// every byte-level word, so the first round of merging needs no map lookup.
func (m *bpe) buildBytePairs() {
	for _, id := range m.byteIDs {
		if id < 0 {
			return // incomplete byte alphabet (unk tokens in words): use the map
		}
	}
	m.bytePairs = make([]bpeMerge, 256*256)
	for a := 0; a < 256; a++ {
		for b := 0; b < 256; b++ {
			mg, ok := m.merges.get(m.byteIDs[a], m.byteIDs[b])
			if !ok {
				mg.id = -1
			}
			m.bytePairs[a<<8|b] = mg
		}
	}
}
