package tokenizer

import (
	"errors"
	"fmt"
)

// Encoding is a text, or a pair of texts, encoded for an encoder model
// (embedding, cross-encoder): the token ids with the post-processor's
// special tokens, and each token's type (segment) id.
type Encoding struct {
	IDs     []int
	TypeIDs []int
	// Truncated reports that tokens were cut to fit the maximum length.
	Truncated bool
}

// ErrTooShort reports a maximum length that cannot hold even the special
// tokens the post-processor adds.
var ErrTooShort = errors.New("tokenizer: maximum length shorter than the special tokens")

// EncodeSequence encodes one text with its special tokens (as Encode(text,
// true)) and its token type ids. With maxLen > 0 the text's tokens are cut
// from the end so that the whole fits in maxLen (Hugging Face's truncation
// with the default strategy); Truncated says whether they were.
func (t *Tokenizer) EncodeSequence(text string, maxLen int) (Encoding, error) {
	ids, err := t.Encode(text, false)
	if err != nil {
		return Encoding{}, err
	}
	var e Encoding
	if maxLen > 0 {
		room := maxLen - t.post.count(false)
		if room < 0 {
			return Encoding{}, fmt.Errorf("%w: %d, the template adds %d", ErrTooShort, maxLen, t.post.count(false))
		}
		if len(ids) > room {
			ids, e.Truncated = ids[:room], true
		}
	}
	e.IDs = t.post.apply(ids)
	e.TypeIDs = make([]int, len(e.IDs))
	if tp, ok := t.post.(*templateProcessing); ok && len(tp.single) > 0 {
		_, e.TypeIDs = tp.lay(tp.single, ids, nil)
	}
	return e, nil
}

// EncodePair encodes two texts as one input the way the post-processor's pair
// template joins them (BERT: [CLS] a [SEP] b [SEP] with b's part of type 1;
// XLM-RoBERTa: <s> a </s></s> b </s>), as cross-encoders take a query and a
// document. With maxLen > 0 the longer text is cut first so that the whole
// fits (Hugging Face's longest_first strategy: when both must be cut, each
// keeps half of the room, the second the odd token).
func (t *Tokenizer) EncodePair(a, b string, maxLen int) (Encoding, error) {
	ia, err := t.Encode(a, false)
	if err != nil {
		return Encoding{}, err
	}
	ib, err := t.Encode(b, false)
	if err != nil {
		return Encoding{}, err
	}
	var e Encoding
	if maxLen > 0 {
		room := maxLen - t.post.count(true)
		if room < 0 {
			return Encoding{}, fmt.Errorf("%w: %d, the pair template adds %d", ErrTooShort, maxLen, t.post.count(true))
		}
		if len(ia)+len(ib) > room {
			n1, n2 := longestFirst(len(ia), len(ib), room)
			ia, ib, e.Truncated = ia[:min(n1, len(ia))], ib[:min(n2, len(ib))], true
		}
	}
	e.IDs, e.TypeIDs = t.post.applyPair(ia, ib)
	return e, nil
}

// longestFirst returns how many tokens of two sequences of n1 and n2 tokens
// to keep within room (n1 + n2 > room): the shorter stays whole if the longer
// can take the rest, else each gets half, the second the odd token.
func longestFirst(n1, n2, room int) (int, int) {
	swap := n1 > n2
	if swap {
		n1, n2 = n2, n1
	}
	if n1 > room {
		n2 = n1
	} else {
		n2 = max(n1, room-n1)
	}
	if n1+n2 > room {
		n1 = room / 2
		n2 = n1 + room%2
	}
	if swap {
		n1, n2 = n2, n1
	}
	return n1, n2
}
