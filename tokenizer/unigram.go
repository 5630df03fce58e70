package tokenizer

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// unigram is SentencePiece's Unigram model as Hugging Face runs it: a word is
// cut into the sequence of vocabulary pieces with the highest total score
// (Viterbi over the piece lattice); a character no piece starts with becomes
// the unknown piece, scored min_score - 10, and runs of unknown pieces are
// fused into one. With byte fallback an unknown run is spelled as <0xNN>
// byte tokens instead, where the vocabulary has them all.
type unigram struct {
	ids       map[string]int // piece → id (the last id of a duplicated piece)
	idToToken []string
	hasID     []bool
	scores    []float64 // [id]
	unk       int       // -1: none
	fallback  bool
	trie      pieceTrie
	unkScore  float64
}

type unigramJSON struct {
	UnkID        *int `json:"unk_id"`
	ByteFallback bool `json:"byte_fallback"`
}

// unkPenalty is how much below the lowest piece score an unknown character
// scores (K_UNK_PENALTY in SentencePiece).
const unkPenalty = 10.0

func newUnigram(raw, vocabRaw json.RawMessage) (*unigram, error) {
	var j unigramJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, invalidf("model: %v", err)
	}
	if isNull(vocabRaw) {
		return nil, invalidf("model has no vocab")
	}
	pieces, scores, err := parseUnigramVocab(vocabRaw)
	if err != nil {
		return nil, err
	}
	if len(pieces) == 0 || len(pieces) > maxTokenID {
		return nil, invalidf("model vocab has %d pieces, want 1..%d", len(pieces), maxTokenID)
	}
	m := &unigram{ids: make(map[string]int, len(pieces)), idToToken: pieces, hasID: make([]bool, len(pieces)),
		scores: scores, unk: -1, fallback: j.ByteFallback}
	minScore := math.Inf(1)
	for id, p := range pieces {
		m.ids[p] = id
		m.hasID[id] = true
		m.trie.add(p, id)
		minScore = min(minScore, scores[id])
	}
	m.unkScore = minScore - unkPenalty
	if j.UnkID != nil {
		if *j.UnkID < 0 || *j.UnkID >= len(pieces) {
			return nil, invalidf("model unk_id %d is outside the vocab of %d pieces", *j.UnkID, len(pieces))
		}
		m.unk = *j.UnkID
	}
	return m, nil
}

// parseUnigramVocab reads [[piece, score], ...].
func parseUnigramVocab(raw json.RawMessage) (pieces []string, scores []float64, err error) {
	s := &jsonScanner{data: raw}
	err = s.list(func() error {
		var pair int
		return s.list(func() error {
			defer func() { pair++ }()
			switch pair {
			case 0:
				p, err := s.str()
				pieces = append(pieces, p)
				return err
			case 1:
				f, err := s.float()
				scores = append(scores, f)
				return err
			}
			return fmt.Errorf("a vocab entry has more than [piece, score] at offset %d", s.pos)
		})
	})
	if err == nil && len(pieces) != len(scores) {
		err = fmt.Errorf("a vocab entry lacks its score")
	}
	if err != nil {
		return nil, nil, invalidf("model.vocab: %v", err)
	}
	return pieces, scores, nil
}

func (m *unigram) tokens() ([]string, []bool) { return m.idToToken, m.hasID }

func (m *unigram) id(tok string) (int, bool) {
	id, ok := m.ids[tok]
	return id, ok
}

// minTokens: unknown characters may fuse into one unknown token.
func (m *unigram) minTokens(w string) int { return min(len(w), 1) }

func (m *unigram) getScratch() *mergeScratch { return nil }
func (m *unigram) putScratch(*mergeScratch)  {}

// bestPath is the best segmentation found so far that ends at a byte offset.
type bestPath struct {
	score float64
	start int // where its last piece starts; -1: not reached yet
	id    int
}

func (m *unigram) encodeWord(w string, dst []int, _ *mergeScratch) ([]int, error) {
	if w == "" {
		return dst, nil
	}
	best := make([]bestPath, len(w)+1)
	for i := range best {
		best[i].start = -1
	}
	best[0].start = 0
	// Forward: for each character boundary, every piece starting there
	// (shortest first) improves the path ending where it ends; strictly
	// better only, so earlier candidates win ties.
	for at := 0; at < len(w); {
		here := best[at].score
		_, size := utf8.DecodeRuneInString(w[at:])
		single := false
		m.trie.prefixes(w[at:], func(n, id int) {
			if t := &best[at+n]; t.start < 0 || here+m.scores[id] > t.score {
				*t = bestPath{score: here + m.scores[id], start: at, id: id}
			}
			single = single || n == size
		})
		if !single {
			if m.unk < 0 {
				return nil, errNoUnknown(w[at : at+size])
			}
			if t := &best[at+size]; t.start < 0 || here+m.unkScore > t.score {
				*t = bestPath{score: here + m.unkScore, start: at, id: m.unk}
			}
		}
		at += size
	}
	// Backward: collect the pieces, fusing runs of unknown ones.
	var pieces []string // last first
	runStart, runEnd := -1, -1
	for end := len(w); end > 0; end = best[end].start {
		p := best[end]
		if p.id == m.unk {
			if runEnd < 0 {
				runEnd = end
			}
			runStart = p.start
			continue
		}
		if runEnd >= 0 {
			pieces = append(pieces, w[runStart:runEnd])
			runEnd = -1
		}
		pieces = append(pieces, w[p.start:end])
	}
	if runEnd >= 0 {
		pieces = append(pieces, w[runStart:runEnd])
	}
	for i := len(pieces) - 1; i >= 0; i-- {
		var err error
		if dst, err = m.appendPiece(dst, pieces[i]); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// appendPiece appends the id of piece p: its own, else its bytes as <0xNN>
// tokens with byte fallback (when the vocabulary has each of them), else the
// unknown token.
func (m *unigram) appendPiece(dst []int, p string) ([]int, error) {
	if id, ok := m.ids[p]; ok {
		return append(dst, id), nil
	}
	if m.fallback {
		n := len(dst)
		for i := 0; i < len(p); i++ {
			id, ok := m.ids[fmt.Sprintf("<0x%02X>", p[i])]
			if !ok {
				break
			}
			dst = append(dst, id)
		}
		if len(dst)-n == len(p) {
			return dst, nil
		}
		dst = dst[:n]
	}
	if m.unk < 0 {
		return nil, errNoUnknown(p)
	}
	return append(dst, m.unk), nil
}

func errNoUnknown(p string) error {
	return fmt.Errorf("tokenizer: the Unigram model has no piece for %q and no unk_id", p)
}

// pieceTrie finds the vocabulary pieces that are prefixes of a text, shortest
// first: a byte trie with its edges in one map.
type pieceTrie struct {
	edges map[uint64]int32 // node<<8 | byte → child node
	value []int32          // [node] id of the piece ending here, -1 if none
}

func (t *pieceTrie) add(p string, id int) {
	if t.edges == nil {
		t.edges = make(map[uint64]int32)
		t.value = []int32{-1}
	}
	node := int32(0)
	for i := 0; i < len(p); i++ {
		k := uint64(node)<<8 | uint64(p[i])
		next, ok := t.edges[k]
		if !ok {
			next = int32(len(t.value))
			t.value = append(t.value, -1)
			t.edges[k] = next
		}
		node = next
	}
	t.value[node] = int32(id) // a duplicated piece keeps its last id, as in Hugging Face
}

// prefixes calls f(n, id) for every piece that is s[:n], in increasing n.
func (t *pieceTrie) prefixes(s string, f func(n, id int)) {
	node := int32(0)
	for i := 0; i < len(s); i++ {
		next, ok := t.edges[uint64(node)<<8|uint64(s[i])]
		if !ok {
			return
		}
		node = next
		if v := t.value[node]; v >= 0 {
			f(i+1, int(v))
		}
	}
}

// float reads a JSON number.
func (s *jsonScanner) float() (float64, error) {
	s.skipSpace()
	start := s.pos
	for s.pos < len(s.data) && strings.IndexByte("+-.0123456789eE", s.data[s.pos]) >= 0 {
		s.pos++
	}
	f, err := strconv.ParseFloat(string(s.data[start:s.pos]), 64)
	if err != nil {
		return 0, fmt.Errorf("expected a number at offset %d", start)
	}
	return f, nil
}
