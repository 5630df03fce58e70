package grammar

import (
	"context"
	"testing"
	"time"
)

// fuzzLimits are small, so that every input ends within milliseconds.
var fuzzLimits = Limits{MaxDepth: 64, MaxNodes: 1 << 12, MaxStates: 1 << 14, Timeout: time.Second, MaxDFABytes: 1 << 20}

// follow runs a matcher a few tokens into g: whatever compiled must be followable.
func follow(t *testing.T, g *Grammar) {
	v := toyVocab()
	m := g.NewMatcher(v)
	mask := make([]uint64, v.MaskWords())
	for range 8 {
		m.FillMask(mask)
		id := -1
		for i, w := range mask {
			for b := 0; w != 0 && b < 64; b++ {
				if w>>b&1 != 0 {
					id = i*64 + b
					w = 0
				}
			}
			if id >= 0 {
				break
			}
		}
		if id < 0 {
			return
		}
		if err := m.Accept(id); err != nil {
			t.Fatalf("a token the mask allowed was rejected: %v", err)
		}
	}
}

// FuzzGBNF: no grammar text crashes the compiler or runs past its limits.
func FuzzGBNF(f *testing.F) {
	for _, s := range []string{
		`root ::= "yes" | "no"`,
		"root ::= item (\",\" item)*\nitem ::= [0-9]+ | \"x\"",
		`root ::= [^a-z\x00-\x1F]{2,5} "\u00e9"`,
		`root ::= (("a" | "b")* "c"){1,3}`,
		"root ::= a\na ::= \"(\" a \")\" | \"x\"",
		`root ::= .`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		c, err := NewCompiler(context.Background(), fuzzLimits)
		if err != nil {
			t.Fatal(err)
		}
		if g, err := c.GBNF(src); err == nil {
			follow(t, g)
		}
	})
}

// FuzzJSONSchema: no schema text crashes the compiler or runs past its limits.
func FuzzJSONSchema(f *testing.F) {
	for _, s := range testSchemas {
		f.Add(s)
	}
	f.Add(`{"anyOf":[{"$ref":"#"},{"type":"integer","minimum":-5,"exclusiveMaximum":1e3}]}`)
	f.Add(`{"type":"string","pattern":"^(a|b[^c]){2,4}$"}`)
	f.Fuzz(func(t *testing.T, schema string) {
		c, err := NewCompiler(context.Background(), fuzzLimits)
		if err != nil {
			t.Fatal(err)
		}
		if g, err := c.JSONSchema([]byte(schema)); err == nil {
			follow(t, g)
		}
	})
}
