//go:build !fuzzonly

package grammar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileValidator(t testing.TB, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSchemaOutputsValidate(t *testing.T) {
	v := toyVocab()
	for i, schema := range testSchemas {
		g, err := FromJSONSchema([]byte(schema))
		if err != nil {
			t.Fatalf("schema %d: %v", i, err)
		}
		val := compileValidator(t, schema)
		for seed := uint64(0); seed < 50; seed++ {
			out := generate(t, g, v, rand.New(rand.NewPCG(seed, uint64(i))), 400)
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("schema %d seed %d: %q is not JSON: %v", i, seed, out, err)
			}
			if err := val.Validate(doc); err != nil {
				t.Fatalf("schema %d seed %d: %q does not validate: %v", i, seed, out, err)
			}
		}
	}
}

func TestAnyJSONObject(t *testing.T) {
	v := toyVocab()
	g := AnyJSONObject()
	for seed := uint64(0); seed < 50; seed++ {
		out := generate(t, g, v, rand.New(rand.NewPCG(seed, 1)), 300)
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("seed %d: %q: %v", seed, out, err)
		}
	}
}

// TestMaskMatchesBruteForce compares the trie walk with running every token's bytes
// through the automaton, in states reached by random walks.
func TestMaskMatchesBruteForce(t *testing.T) {
	v := toyVocab()
	for i, schema := range testSchemas {
		g, err := FromJSONSchema([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, uint64(i)))
		m := g.NewMatcher(v)
		mask := make([]uint64, v.MaskWords())
		for step := 0; step < 60 && !m.Ended(); step++ {
			m.FillMask(mask)
			var allowed []int
			for id := 0; id < v.Size(); id++ {
				got := mask[id>>6]>>(id&63)&1 != 0
				want := false
				if v.isEOS(id) {
					want = m.CanEnd()
				} else if b := v.TokenBytes(id); len(b) > 0 {
					s := m.cur
					for _, c := range b {
						s = g.dfa.step(s, c)
					}
					want = s != g.dfa.dead
				}
				if got != want {
					t.Fatalf("schema %d step %d token %d %q: mask %v, brute force %v", i, step, id, v.TokenBytes(id), got, want)
				}
				if got {
					allowed = append(allowed, id)
				}
			}
			if err := m.Accept(allowed[rng.IntN(len(allowed))]); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestSchemaErrors(t *testing.T) {
	for _, c := range []struct{ schema, keyword string }{
		{`{"type":"object","patternProperties":{"a":{}}}`, "patternProperties"},
		{`{"type":"object","properties":{"a":{"type":"string","format":"email"}}}`, "format"},
		{`{"oneOf":[{"type":"string"}]}`, "oneOf"},
		{`{"type":"number","minimum":1}`, "minimum"},
		{`{"type":"string","pattern":"a\\bb"}`, "pattern"},
		{`{"type":"array","items":[{"type":"string"}]}`, "items"},
		{`{"type":"array","minItems":3,"maxItems":1}`, "minItems"},
		{`{"$ref":"http://example.com/x.json"}`, "$ref"},
		{`{"type":"integer","minimum":5,"maximum":4}`, "minimum"},
		{`{"type":"wat"}`, "type"},
		{`{"type":"string","anyOf":[{"maxLength":3}]}`, "type"},
		{`{"enum":["a"],"maxLength":3}`, "maxLength"},
		{`{"const":1,"minimum":3}`, "minimum"},
		{`{"type":"object","required":["a"]}`, "required"},
		{`{"type":"integer","enum":["a"]}`, "enum"},
		{`{"enum":null}`, "enum"},
		{`{"type":"integer","minimum":1.5e15}`, "minimum"},
	} {
		_, err := FromJSONSchema([]byte(c.schema))
		var se *SchemaError
		if !errors.As(err, &se) || se.Keyword != c.keyword {
			t.Errorf("%s: %v; want a SchemaError naming %q", c.schema, err, c.keyword)
		}
	}
	// A schema whose only strings recurse forever cannot end.
	_, err := FromJSONSchema([]byte(`{"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]}`))
	if !errors.Is(err, ErrNoEnd) {
		t.Errorf("endless recursion: %v", err)
	}
	if _, err := FromJSONSchema([]byte(`{`)); err == nil {
		t.Error("malformed JSON accepted")
	}
}

func TestPropertyOrderFollowsSchemaText(t *testing.T) {
	v := toyVocab()
	g, err := FromJSONSchema([]byte(`{"type":"object","properties":{"zeta":{"const":1},"alpha":{"const":2}},"required":["zeta","alpha"]}`))
	if err != nil {
		t.Fatal(err)
	}
	out := generate(t, g, v, rand.New(rand.NewPCG(1, 1)), 100)
	if want := `{"zeta":1,"alpha":2}`; strings.ReplaceAll(string(out), " ", "") != want {
		t.Fatalf("got %s, want %s", out, want)
	}
}

func TestConcatAndText(t *testing.T) {
	v := toyVocab()
	c, err := NewCompiler(context.Background(), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	args, err := c.SchemaExpr([]byte(`{"type":"object","properties":{"q":{"type":"string","maxLength":3}},"required":["q"]}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.Compile(c.Concat(c.Text(`<tool_call>{"name": "search", "arguments": `), args, c.Text("}</tool_call>")))
	if err != nil {
		t.Fatal(err)
	}
	out := generate(t, g, v, rand.New(rand.NewPCG(3, 3)), 200)
	if !strings.HasPrefix(string(out), `<tool_call>{"name": "search", "arguments": {"q":`) || !strings.HasSuffix(string(out), "}}</tool_call>") {
		t.Fatalf("got %s", out)
	}
}
