package tokenizer

import (
	"testing"
)

// benchTexts are long inputs in testdata (see README.md): English prose,
// Go source code, and Chinese + Japanese prose.
var benchTexts = []struct{ name, file string }{
	{"english", "bench-english.txt.gz"},
	{"code", "bench-code.go.txt.gz"},
	{"cjk", "bench-cjk.txt.gz"},
}

// BenchmarkEncode reports encode throughput (MB/s of input text) on one
// goroutine. cache=warm keeps the BPE word cache between iterations (a
// long-running server); cache=cold clears it before every iteration.
func BenchmarkEncode(b *testing.B) {
	for _, name := range []string{"llama3", "qwen3", "gemma3"} {
		tok := fixtureTokenizer(b, name)
		for _, bt := range benchTexts {
			text := string(readTestdata(b, bt.file))
			for _, cache := range []string{"warm", "cold"} {
				b.Run("tok="+name+"/text="+bt.name+"/cache="+cache, func(b *testing.B) {
					b.SetBytes(int64(len(text)))
					b.ReportAllocs()
					for b.Loop() {
						if cache == "cold" {
							tok.model.(*bpe).cache.reset()
						}
						if _, err := tok.Encode(text, false); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkStream reports the cost of streaming detokenization per token.
func BenchmarkStream(b *testing.B) {
	for _, name := range []string{"llama3", "gemma3"} {
		tok := fixtureTokenizer(b, name)
		ids, err := tok.Encode(string(readTestdata(b, "bench-cjk.txt.gz")), false)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("tok="+name+"/text=cjk", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				st := tok.NewStream(false)
				for _, id := range ids {
					if _, err := st.Add(id); err != nil {
						b.Fatal(err)
					}
				}
				st.Flush()
				n += len(ids)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/token")
		})
	}
}
