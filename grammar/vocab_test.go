package grammar

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/tokenizer"
)

// realVocab loads a real tokenizer from package tokenizer's testdata (see its README for
// provenance) and builds its Vocab once.
var realVocabs sync.Map

func realVocab(tb testing.TB, name string) *Vocab {
	tb.Helper()
	if v, ok := realVocabs.Load(name); ok {
		return v.(*Vocab)
	}
	read := func(file string) []byte {
		f, err := os.Open("../tokenizer/testdata/" + file)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			tb.Fatal(err)
		}
		b, err := io.ReadAll(z)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	tok, err := tokenizer.Load(read(name+".tokenizer.json.gz"), read(name+".tokenizer_config.json.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	toks := make([][]byte, tok.VocabSize())
	for id := range toks {
		toks[id], _ = tok.TokenBytes(id)
	}
	v := NewVocab(toks, tok.EOS())
	realVocabs.Store(name, v)
	return v
}

const benchSchema = `{"type":"object","properties":{
 "name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},
 "email":{"type":"string"},"tags":{"type":"array","items":{"type":"string"},"maxItems":4},
 "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["street","city","zip"]},
 "active":{"type":"boolean"},"score":{"type":"number"}},
 "required":["name","age","email","tags","address","active","score"],"additionalProperties":false}`

// sampleDoc generates a document with a real vocabulary, drawing among the allowed tokens
// with a preference for short ones (as a model writing JSON would), and returns the time
// each step's FillMask+Accept took.
func sampleDoc(tb testing.TB, g *Grammar, v *Vocab, seed uint64) ([]byte, []time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 99))
	m := g.NewMatcher(v)
	mask := make([]uint64, v.MaskWords())
	var out []byte
	var times []time.Duration
	for step := 0; step < 600; step++ {
		t0 := time.Now()
		m.FillMask(mask)
		el := time.Since(t0)
		// Draw as a model writing JSON might: among a few random allowed ids, the shortest,
		// or (one time in five) one that closes a string, array or object.
		best, bestLen := -1, 1<<30
		closing := rng.IntN(5) == 0
		if m.CanEnd() {
			best = v.eos[0]
		} else {
			if closing {
				for _, k := range rng.Perm(len(structural(v))) {
					if id := structural(v)[k]; mask[id>>6]>>(id&63)&1 != 0 {
						best = id
						break
					}
				}
			}
			for try := 0; try < 4000 && best < 0 || try < 64 && !closing; try++ {
				id := rng.IntN(v.Size())
				if mask[id>>6]>>(id&63)&1 == 0 {
					continue
				}
				if l := len(v.TokenBytes(id)); l < bestLen {
					best, bestLen = id, l
				}
			}
			if best < 0 { // sparse mask: take the first allowed
				for id := 0; id < v.Size() && best < 0; id++ {
					if mask[id>>6]>>(id&63)&1 != 0 {
						best = id
					}
				}
			}
		}
		t1 := time.Now()
		if err := m.Accept(best); err != nil {
			tb.Fatalf("step %d: %v (after %q)", step, err, out)
		}
		times = append(times, el+time.Since(t1))
		if m.Ended() {
			return out, times
		}
		out = append(out, v.TokenBytes(best)...)
	}
	tb.Fatalf("no end: %q", out)
	return nil, nil
}

// TestRealVocabularies generates with the Qwen3 (byte-level BPE, 151,669 ids) and Mistral
// (SentencePiece with byte fallback) vocabularies and checks the documents parse.
func TestRealVocabularies(t *testing.T) {
	g, err := FromJSONSchema([]byte(benchSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"qwen3", "mistral"} {
		v := realVocab(t, name)
		for seed := uint64(0); seed < 3; seed++ {
			out, _ := sampleDoc(t, g, v, seed)
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil || len(m) != 7 {
				t.Fatalf("%s seed %d: %q: %v", name, seed, out, err)
			}
		}
	}
}

var structurals sync.Map

// structural lists the ids of short tokens that contain a quote or a closing bracket.
func structural(v *Vocab) []int {
	if s, ok := structurals.Load(v); ok {
		return s.([]int)
	}
	var ids []int
	for id := 0; id < v.Size(); id++ {
		if b := v.TokenBytes(id); len(b) <= 3 && bytes.ContainsAny(b, `"]}`) {
			ids = append(ids, id)
		}
	}
	structurals.Store(v, ids)
	return ids
}

// BenchmarkMaskQwen3 reports the median and mean time per generated token of the mask and
// the token's acceptance, over documents of benchSchema with the Qwen3 vocabulary; the first
// document pays for building the masks, as a fresh request does.
func BenchmarkMaskQwen3(b *testing.B) {
	v := realVocab(b, "qwen3")
	var all []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g, err := FromJSONSchema([]byte(benchSchema))
		if err != nil {
			b.Fatal(err)
		}
		for seed := uint64(0); seed < 4; seed++ {
			_, times := sampleDoc(b, g, v, seed+uint64(i)*4)
			all = append(all, times...)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "median-µs/token")
	b.ReportMetric(float64(sum.Microseconds())/float64(len(all)), "mean-µs/token")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs/token")
	b.ReportMetric(float64(v.Size()), "vocab")
}
