package grammar

import (
	"bytes"
	"context"
	"slices"
	"sort"
)

// Vocab is a tokenizer's vocabulary as the grammar sees it: each token id's bytes, in a trie.
// Build it once per tokenizer; it is immutable and safe for concurrent use.
type Vocab struct {
	size  int   // token ids are 0..size-1
	eos   []int // end-of-sequence ids: allowed where the grammar may end
	bytes [][]byte
	// The trie in preorder. Node 0 is the root (no byte); end skips a node's subtree.
	nodes []trieNode
	toks  []int32 // token ids ending at each node: nodes[i].tok0 ≤ k < nodes[i+1].tok0
}

type trieNode struct {
	b     byte
	depth uint16
	end   int32 // index of the first node after this subtree
	tok0  int32 // first index into toks of the ids ending here
}

// NewVocab builds the vocabulary from each id's bytes (nil or empty for special tokens,
// which the grammar never allows) and the end-of-sequence ids.
func NewVocab(tokens [][]byte, eos []int) *Vocab {
	v := &Vocab{size: len(tokens), eos: slices.Clone(eos), bytes: tokens}
	ids := make([]int32, 0, len(tokens))
	for id, b := range tokens {
		if len(b) > 0 && len(b) < 1<<15 {
			ids = append(ids, int32(id))
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		if c := bytes.Compare(tokens[ids[i]], tokens[ids[j]]); c != 0 {
			return c < 0
		}
		return ids[i] < ids[j]
	})
	// Sorted tokens give the trie's preorder directly: a token's path shares the longest
	// common prefix with the previous token's path.
	v.nodes = append(v.nodes, trieNode{})
	path := []int32{0} // node index per depth along the current path
	var prev []byte
	for _, id := range ids {
		t := tokens[id]
		common := 0
		for common < len(prev) && common < len(t) && prev[common] == t[common] {
			common++
		}
		path = path[:common+1]
		for d := common; d < len(t); d++ {
			v.nodes = append(v.nodes, trieNode{b: t[d], depth: uint16(d + 1), tok0: int32(len(v.toks))})
			path = append(path, int32(len(v.nodes)-1))
		}
		v.toks = append(v.toks, id)
		prev = t
	}
	v.nodes = append(v.nodes, trieNode{tok0: int32(len(v.toks))}) // sentinel
	// Token ranges: a node's ids are the ones appended while it was the path's end, which in
	// preorder are exactly toks[tok0 of this node : tok0 of the next node].
	// Subtree ends: a node's subtree ends at the next node of depth ≤ its own.
	n := len(v.nodes) - 1
	stack := []int32{}
	for i := 0; i < n; i++ {
		for len(stack) > 0 && v.nodes[stack[len(stack)-1]].depth >= v.nodes[i].depth {
			v.nodes[stack[len(stack)-1]].end = int32(i)
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, int32(i))
	}
	for _, s := range stack {
		v.nodes[s].end = int32(n)
	}
	return v
}

// Size is the number of token ids (the mask covers 0..Size-1).
func (v *Vocab) Size() int { return v.size }

// MaskWords is the length in uint64 words of a mask for this vocabulary.
func (v *Vocab) MaskWords() int { return (v.size + 63) / 64 }

// TokenBytes returns a token's bytes (nil for special tokens).
func (v *Vocab) TokenBytes(id int) []byte {
	if id < 0 || id >= v.size {
		return nil
	}
	return v.bytes[id]
}

func (v *Vocab) isEOS(id int) bool { return slices.Contains(v.eos, id) }

// computeMask walks the trie from state s and sets the bit of every token whose bytes the
// automaton accepts as a continuation (not necessarily a complete string). It stops when
// ctx is done, when the walk alone needs more DFA states than the cache holds (it was
// emptied twice), or when building its DFA states costs more than maxWork: a *LimitError.
func (v *Vocab) computeMask(ctx context.Context, d *dfa, s *dstate, mask []uint64, maxWork int64) error {
	clear(mask)
	if s == d.dead {
		return nil
	}
	flushes, work0 := d.flushes, d.work
	stack := make([]*dstate, 0, 64)
	stack = append(stack, s)
	n := int32(len(v.nodes) - 1)
	for i, work := int32(1), 0; i < n; work++ {
		if work&1023 == 0 {
			// Between two checks at most 1024 states are made: the cache fills at most once.
			if d.flushes-flushes >= 2 {
				return &LimitError{Limit: "MaxDFABytes", Max: d.maxBytes, What: "bytes of DFA states for one token's mask"}
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if d.work-work0 > maxWork {
			return &LimitError{Limit: "MaxMaskWork", Max: maxWork, What: "automaton work for one token's mask"}
		}
		nd := &v.nodes[i]
		depth := int(nd.depth)
		stack = stack[:depth]
		next := d.step(stack[depth-1], nd.b)
		if next == d.dead {
			i = nd.end
			continue
		}
		stack = append(stack, next)
		for _, id := range v.toks[nd.tok0:v.nodes[i+1].tok0] {
			mask[id>>6] |= 1 << (uint(id) & 63)
		}
		i++
	}
	if d.flushes-flushes >= 2 {
		return &LimitError{Limit: "MaxDFABytes", Max: d.maxBytes, What: "bytes of DFA states for one token's mask"}
	}
	return nil
}
