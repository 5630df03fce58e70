package server

import (
	"math"
	"slices"
	"unicode/utf8"

	"github.com/hfstatic/hfstatic/tokenizer"
)

// maxTopLogprobs bounds top_logprobs (OpenAI's limit).
const maxTopLogprobs = 20

// tokenLogprob is one entry of choices[].logprobs.content (chat).
type tokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// chatLogprobs is choices[].logprobs of a chat response or chunk.
type chatLogprobs struct {
	Content []tokenLogprob `json:"content"`
	Refusal []tokenLogprob `json:"refusal"`
}

// completionLogprobs is choices[].logprobs of a completion response or chunk.
type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// logprobRecorder computes the log-probabilities of the generated tokens: log-softmax of
// the model's logits over the ids the grammar allows (all ids without one), before
// penalties and temperature — what the model assigns, not the sampler's reshaped
// distribution — with the top alternatives.
type logprobRecorder struct {
	tok     *tokenizer.Tokenizer
	eos     []int
	top     int
	entries []tokenLogprob
	taken   int // entries already sent in a stream
	offset  int // characters of text before the next entry (completions' text_offset)
	offsets []int
}

func newLogprobRecorder(tok *tokenizer.Tokenizer, eos []int, top int) *logprobRecorder {
	return &logprobRecorder{tok: tok, eos: eos, top: top}
}

func (r *logprobRecorder) text(id int) (string, []int) {
	b, ok := r.tok.TokenBytes(id)
	if !ok {
		s, _ := r.tok.Token(id)
		b = []byte(s)
	}
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	return string(b), ints
}

func allowedID(allowed []uint64, i int) bool {
	return allowed == nil || (i>>6 < len(allowed) && allowed[i>>6]>>(i&63)&1 != 0)
}

// observe records the chosen token (generate.Options.Observe).
func (r *logprobRecorder) observe(tok int, logits []float32, allowed []uint64) {
	if slices.Contains(r.eos, tok) {
		return
	}
	maxL := math.Inf(-1)
	for i, l := range logits {
		if allowedID(allowed, i) && float64(l) > maxL {
			maxL = float64(l)
		}
	}
	var sum float64
	for i, l := range logits {
		if allowedID(allowed, i) && !math.IsNaN(float64(l)) {
			sum += math.Exp(float64(l) - maxL)
		}
	}
	lse := maxL + math.Log(sum)
	lp := func(i int) float64 {
		v := float64(logits[i]) - lse
		if math.IsNaN(v) || v < -9999 {
			return -9999 // JSON has no NaN or -Inf; OpenAI reports -9999 for impossible tokens
		}
		return v
	}
	text, bytes := r.text(tok)
	e := tokenLogprob{Token: text, Logprob: lp(tok), Bytes: bytes, TopLogprobs: []topLogprob{}}
	if r.top > 0 {
		best := make([]int, 0, r.top+1) // ids, best first
		for i, l := range logits {
			if !allowedID(allowed, i) || math.IsNaN(float64(l)) {
				continue
			}
			if len(best) == r.top && l <= logits[best[len(best)-1]] {
				continue
			}
			j := len(best)
			for j > 0 && l > logits[best[j-1]] {
				j--
			}
			best = slices.Insert(best, j, i)
			if len(best) > r.top {
				best = best[:r.top]
			}
		}
		for _, id := range best {
			t, b := r.text(id)
			e.TopLogprobs = append(e.TopLogprobs, topLogprob{Token: t, Logprob: lp(id), Bytes: b})
		}
	}
	r.entries = append(r.entries, e)
	r.offsets = append(r.offsets, r.offset)
	r.offset += utf8.RuneCountInString(text)
}

// take returns the entries not sent yet (for a stream's next chunk).
func (r *logprobRecorder) take() []tokenLogprob {
	out := r.entries[r.taken:]
	r.taken = len(r.entries)
	return out
}

func (r *logprobRecorder) chat(entries []tokenLogprob) *chatLogprobs {
	return &chatLogprobs{Content: entries, Refusal: nil}
}

func (r *logprobRecorder) completion(entries []tokenLogprob, first int) *completionLogprobs {
	c := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for k, e := range entries {
		c.Tokens = append(c.Tokens, e.Token)
		c.TokenLogprobs = append(c.TokenLogprobs, e.Logprob)
		top := map[string]float64{}
		for _, t := range e.TopLogprobs {
			if _, dup := top[t.Token]; !dup {
				top[t.Token] = t.Logprob
			}
		}
		c.TopLogprobs = append(c.TopLogprobs, top)
		c.TextOffset = append(c.TextOffset, r.offsets[first+k])
	}
	return c
}

// recorder returns choice i's recorder, or nil when logprobs were not asked for.
func recorder(set settings, i int) *logprobRecorder {
	if i < len(set.logprobs) {
		return set.logprobs[i]
	}
	return nil
}

// chatLogprobsOf is the logprobs of a whole chat reply (nil when not asked for).
func chatLogprobsOf(r *logprobRecorder) *chatLogprobs {
	if r == nil {
		return nil
	}
	return r.chat(r.take())
}
