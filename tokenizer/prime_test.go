package tokenizer

import (
	"strings"
	"testing"
)

// TestPrimeHidesThePrompt: after Prime(last prompt token) the stream returns only what the
// new tokens add — also when that token is a byte-fallback one (Add used to hold its byte
// back and return it with the first new token) — and keeps the new token's leading space.
func TestPrimeHidesThePrompt(t *testing.T) {
	for _, name := range []string{"stories260K", "mistral", "qwen3", "llama3", "gemma3"} {
		tok := fixtureTokenizer(t, name)
		prompt, err := tok.Encode("A line\n", false)
		if err != nil {
			t.Fatal(err)
		}
		reply, err := tok.Encode("A line\n said the dog.", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(reply) <= len(prompt) {
			t.Fatalf("%s: reply %v not longer than prompt %v", name, reply, prompt)
		}
		st := tok.NewStream(true)
		if err := st.Prime(prompt[len(prompt)-1]); err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for _, id := range reply[len(prompt):] {
			piece, err := st.Add(id)
			if err != nil {
				t.Fatal(err)
			}
			got.WriteString(piece)
		}
		got.WriteString(st.Flush())
		full, _ := tok.Decode(reply, true)
		head, _ := tok.Decode(prompt, true)
		if want := strings.TrimPrefix(full, head); got.String() != want {
			t.Errorf("%s: primed stream gave %q, want %q", name, got.String(), want)
		}
	}
	if err := fixtureTokenizer(t, "stories260K").NewStream(true).Prime(1 << 30); err == nil {
		t.Error("Prime of an unknown id succeeded")
	}
}
