package grammar

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// toyVocab has every single byte as a token plus common JSON pieces, so that both
// byte-by-byte and multi-byte paths are exercised. Id len-1 is the EOS token.
func toyVocab() *Vocab {
	var toks [][]byte
	for b := 0; b < 256; b++ {
		toks = append(toks, []byte{byte(b)})
	}
	for _, s := range []string{`{"`, `":`, `": "`, `",`, `", "`, `"}`, `}}`, `[]`, `["`, `"]`, `true`, `false`, `null`,
		`name`, `age`, `tags`, `12`, `345`, `-1`, `0.5`, `e+`, ` "`, `\n`, `\"`, "é", "日本", `Hello world`, `}`, `]`, `, `} {
		toks = append(toks, []byte(s))
	}
	toks = append(toks, nil) // a special token: never allowed
	toks = append(toks, nil) // EOS
	return NewVocab(toks, []int{len(toks) - 1})
}

// generate samples uniformly among the allowed tokens until EOS; it fails the test if the
// mask ever allows nothing or a masked token is rejected.
func generate(t testing.TB, g *Grammar, v *Vocab, rng *rand.Rand, maxTokens int) []byte {
	t.Helper()
	m := g.NewMatcher(v)
	mask := make([]uint64, v.MaskWords())
	var out []byte
	for i := 0; i < maxTokens; i++ {
		m.FillMask(mask)
		var allowed []int
		for id := 0; id < v.Size(); id++ {
			if mask[id>>6]>>(id&63)&1 != 0 {
				allowed = append(allowed, id)
			}
		}
		if len(allowed) == 0 {
			t.Fatalf("nothing allowed after %q", out)
		}
		id := allowed[rng.IntN(len(allowed))]
		// Late in the budget, prefer tokens that close things, so documents finish.
		if i > maxTokens/3 {
			var closing []int
			for _, a := range allowed {
				if b := v.TokenBytes(a); v.isEOS(a) || (len(b) == 1 && strings.IndexByte(`"}]`, b[0]) >= 0) {
					closing = append(closing, a)
				}
			}
			if len(closing) > 0 {
				id = closing[rng.IntN(len(closing))]
			}
		}
		if err := m.Accept(id); err != nil {
			t.Fatalf("masked token %d rejected after %q: %v", id, out, err)
		}
		if m.Ended() {
			return out
		}
		out = append(out, v.TokenBytes(id)...)
	}
	t.Fatalf("no end within %d tokens: %q", maxTokens, out)
	return nil
}

var testSchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150}},"required":["name","age"],"additionalProperties":false}`,
	`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","maxLength":5},"minItems":1,"maxItems":3},"ok":{"type":"boolean"},"n":{"type":"null"}},"required":["tags"]}`,
	`{"type":"object","properties":{"kind":{"enum":["a","b",3,null]},"v":{"const":{"x":[1,2]}},"score":{"type":"number"}},"required":["kind","v","score"]}`,
	`{"anyOf":[{"type":"string","pattern":"^[a-z]{2,4}-[0-9]+$"},{"type":"integer","exclusiveMinimum":-20,"exclusiveMaximum":-3}]}`,
	`{"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["value","children"],"additionalProperties":false}},"$ref":"#/$defs/node"}`,
	`{"type":"object","properties":{"when":{"type":"string","format":"date-time"},"id":{"type":"string","format":"uuid"},"x":{"type":["integer","null"]}},"required":["when","id","x"]}`,
	`{"type":"object"}`,
	`{"type":"array","items":{"type":"integer","minimum":1234,"maximum":98765}}`,
	`{"type":"object","properties":{"s":{"type":"string","pattern":"^\"q\"\\\\"}},"required":["s"]}`,
	// const and enum of null are null, not "no const".
	`{"const":null}`,
	`{"type":"object","properties":{"v":{"const":null},"w":{"enum":[null,1]}},"required":["v","w"]}`,
	// Integer bounds up to the documented ±1e15, exclusive bounds that are not integers.
	`{"type":"integer","minimum":-999999999999999,"maximum":999999999999999}`,
	`{"type":"integer","minimum":123456789012,"maximum":987654321098765}`,
	`{"type":"integer","minimum":-1e15,"maximum":-999999999999990}`,
	`{"type":"integer","exclusiveMinimum":2.5,"exclusiveMaximum":7.5}`,
	// Keywords without a type constrain the values of their type.
	`{"maxLength":3}`,
	`{"minimum":5,"maximum":9}`,
	`{"additionalProperties":false}`,
	`{"type":"object","additionalProperties":{"type":"integer","maximum":3}}`,
	// enum beside type keeps the values of the type.
	`{"type":"string","enum":["a",1,"b",null]}`,
	// Property names that JSON pointers escape.
	`{"type":"object","properties":{"a/b":{"const":1},"c~d":{"const":2}},"required":["a/b","c~d"]}`,
}
