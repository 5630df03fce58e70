package tokenizer

import "testing"

// BenchmarkLoad reports the time to parse tokenizer.json (already gunzipped).
func BenchmarkLoad(b *testing.B) {
	for _, name := range []string{"llama3", "qwen3", "gemma3"} {
		f := fixtureTokenizers[name]
		data, config := readTestdata(b, f.tokenizer), readTestdata(b, f.config)
		b.Run("tok="+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(data, config); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
