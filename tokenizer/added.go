package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// addedVocab finds added tokens in text before the model runs, like Hugging
// Face's AddedVocabulary: leftmost-longest matches, non-normalized tokens on
// the raw text, normalized ones on each normalized segment.
type addedVocab struct {
	raw        *tokenTrie // tokens with normalized=false; nil if none
	normalized *tokenTrie // tokens with normalized=true (patterns normalized); nil if none
}

type addedToken struct {
	id             int
	singleWord     bool
	lstrip, rstrip bool
}

// addedSegment is a span of the input: an added token (id ≥ 0) or text for
// the model (id = -1). start is its byte offset in the text that was split.
type addedSegment struct {
	text  string
	id    int
	start int
}

// tokenTrie is a byte trie over token contents. Edges live in one map keyed
// by node<<8|byte, so 6,000+ tokens cost one map and no per-node maps.
type tokenTrie struct {
	edges    map[uint64]int32
	terminal []int32 // [node] index into tokens, -1 if no token ends here
	tokens   []addedToken
	starts   [256]bool // bytes that begin some token
}

func newTrie() *tokenTrie {
	return &tokenTrie{edges: map[uint64]int32{}, terminal: []int32{-1}}
}

func (tr *tokenTrie) insert(content string, tok addedToken) {
	node := int32(0)
	for i := 0; i < len(content); i++ {
		key := uint64(node)<<8 | uint64(content[i])
		next, ok := tr.edges[key]
		if !ok {
			next = int32(len(tr.terminal))
			tr.terminal = append(tr.terminal, -1)
			tr.edges[key] = next
		}
		node = next
	}
	tr.starts[content[0]] = true
	if tr.terminal[node] < 0 {
		tr.terminal[node] = int32(len(tr.tokens))
		tr.tokens = append(tr.tokens, tok)
	} else {
		tr.tokens[tr.terminal[node]] = tok // a later duplicate wins
	}
}

// longest returns the end of the longest token starting at s[i:] and its
// index in tokens, or (-1, -1).
func (tr *tokenTrie) longest(s string, i int) (end int, tok int32) {
	end, tok = -1, -1
	node := int32(0)
	for j := i; j < len(s); j++ {
		next, ok := tr.edges[uint64(node)<<8|uint64(s[j])]
		if !ok {
			break
		}
		node = next
		if t := tr.terminal[node]; t >= 0 {
			end, tok = j+1, t
		}
	}
	return end, tok
}

func newAddedVocab(tokens []addedTokenJSON, norm normalizer) (*addedVocab, error) {
	av := &addedVocab{}
	for _, a := range tokens {
		if a.Content == "" {
			return nil, invalidf("added token id %d has empty content", a.ID)
		}
		tok := addedToken{id: a.ID, singleWord: a.SingleWord, lstrip: a.LStrip, rstrip: a.RStrip}
		if !a.normalized() {
			if av.raw == nil {
				av.raw = newTrie()
			}
			av.raw.insert(a.Content, tok)
			continue
		}
		content := a.Content
		if norm != nil {
			content = norm.normalize(content)
		}
		if content == "" {
			continue
		}
		if av.normalized == nil {
			av.normalized = newTrie()
		}
		av.normalized.insert(content, tok)
	}
	return av, nil
}

// split cuts text at the non-normalized added tokens, appending to dst.
func (av *addedVocab) split(text string, dst []addedSegment) []addedSegment {
	if av.raw == nil {
		if text == "" {
			return dst
		}
		return append(dst, addedSegment{text: text, id: -1})
	}
	return av.splitWith(av.raw, text, dst)
}

// splitWith appends the segments of text cut at tokens of tr, applying the
// single_word, lstrip and rstrip rules. Empty text segments are dropped.
func (av *addedVocab) splitWith(tr *tokenTrie, text string, dst []addedSegment) []addedSegment {
	offset := 0 // end of the last emitted segment
	for i := 0; i < len(text); i++ {
		if !tr.starts[text[i]] {
			continue
		}
		end, ti := tr.longest(text, i)
		if ti < 0 {
			continue
		}
		tok := tr.tokens[ti]
		start, stop := i, end
		if tok.singleWord && !(isWordBoundaryBefore(text, start) && isWordBoundaryAfter(text, stop)) {
			i = end - 1 // matches do not overlap, even rejected ones
			continue
		}
		if tok.lstrip {
			for start > offset {
				r, size := utf8.DecodeLastRuneInString(text[:start])
				if !isWhiteSpace(r) {
					break
				}
				start -= size
			}
		}
		if tok.rstrip {
			for stop < len(text) {
				r, size := utf8.DecodeRuneInString(text[stop:])
				if !isWhiteSpace(r) {
					break
				}
				stop += size
			}
		}
		if offset < start {
			dst = append(dst, addedSegment{text: text[offset:start], id: -1, start: offset})
		}
		dst = append(dst, addedSegment{text: text[start:stop], id: tok.id, start: start})
		offset = stop
		i = stop - 1
	}
	if offset < len(text) {
		dst = append(dst, addedSegment{text: text[offset:], id: -1, start: offset})
	}
	return dst
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

func isWordBoundaryBefore(s string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return !isWordRune(r)
}

func isWordBoundaryAfter(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !isWordRune(r)
}
