package toolcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/grammar"
	"github.com/hfstatic/hfstatic/internal/chat"
)

// The templates are internal/chat's copies of the real ones (see its testdata/README.md).
var families = []struct {
	template string
	want     Syntax
}{
	{"ardan-Qwen3-8B-Q8_0.jinja", Hermes},
	{"Qwen-Qwen2.5-7B-Instruct.jinja", Hermes},
	{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", Hermes},
	{"meta-llama-Llama-3.1-8B-Instruct.jinja", Llama3},
	{"meta-llama-Llama-3.2-3B-Instruct.jinja", Llama3},
	{"meta-llama-Llama-3.3-70B-Instruct.jinja", Llama3},
	{"mistralai-Mistral-Nemo-Instruct-2407.jinja", Mistral},
	{"google-gemma-2-2b-it.jinja", Generic},
}

func loadTemplate(t *testing.T, name string) (string, *chat.Template) {
	t.Helper()
	src, err := os.ReadFile("../chat/testdata/templates/" + name)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	return string(src), tmpl
}

// TestParseWhatTemplatesRender renders an assistant turn holding a call with each family's
// real template, cuts the assistant's text out of the rendering, and parses it back.
func TestParseWhatTemplatesRender(t *testing.T) {
	tools := []any{json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`)}
	user := chat.Message{Role: "user", Content: "Weather in Paris?"}
	call := chat.Message{Role: "assistant", Content: "", ToolCalls: []chat.ToolCall{{ID: "abcdefghi", Type: "function",
		Function: chat.FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}}}
	for _, f := range families {
		t.Run(f.template, func(t *testing.T) {
			src, tmpl := loadTemplate(t, f.template)
			if got := Detect(src); got != f.want {
				t.Fatalf("Detect = %v, want %v", got, f.want)
			}
			if f.want == Generic {
				return // the template renders no call syntax of its own
			}
			prefix, err := tmpl.Render(chat.Input{Messages: []chat.Message{user}, Tools: tools, AddGenerationPrompt: true})
			if err != nil {
				t.Fatal(err)
			}
			full, err := tmpl.Render(chat.Input{Messages: []chat.Message{user, call}, Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			reply, ok := strings.CutPrefix(full, prefix)
			if !ok {
				// Some templates render the last user turn differently once an answer follows:
				// take the text after the last header.
				reply = full[strings.LastIndexAny(full, ">]")+1:]
				t.Logf("prefix differs; parsing %q", reply)
			}
			for _, end := range []string{"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "</s>"} {
				reply, _, _ = strings.Cut(reply, end)
			}
			content, calls := Parse(f.want, reply)
			if len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Arguments != `{"city":"Paris"}` || strings.TrimSpace(content) != "" {
				t.Fatalf("Parse(%q) = content %q, calls %+v", reply, content, calls)
			}
		})
	}
}

func TestParseVariants(t *testing.T) {
	for _, c := range []struct {
		s           Syntax
		reply, text string
		names       []string
	}{
		{Hermes, "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>", "Let me check.", []string{"a", "b"}},
		{Hermes, "no call here", "no call here", nil},
		{Hermes, "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": ", "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\":", nil},
		{Llama3, `<|python_tag|>{"name": "a", "parameters": {"q": "x"}}; {"name": "b", "parameters": {}}`, "", []string{"a", "b"}},
		{Llama3, `The answer is 4.`, "The answer is 4.", nil},
		{Mistral, `[TOOL_CALLS][{"name": "a", "arguments": {"q": 1}}, {"name": "b", "arguments": "{\"z\": 2}"}]`, "", []string{"a", "b"}},
		{Mistral, `[TOOL_CALLS]a[ARGS]{"q": 1}`, "", []string{"a"}},
		{Generic, "```json\n{\"name\": \"a\", \"arguments\": {\"q\": 1}}\n```", "", []string{"a"}},
		{Generic, `{"tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"k": [1]}}]}`, "", []string{"a", "b"}},
		{Generic, `{"answer": 42}`, `{"answer": 42}`, nil},
	} {
		text, calls := Parse(c.s, c.reply)
		var names []string
		for _, cl := range calls {
			names = append(names, cl.Name)
			if !json.Valid([]byte(cl.Arguments)) || !strings.HasPrefix(cl.ID, "call_") {
				t.Errorf("%v %q: bad call %+v", c.s, c.reply, cl)
			}
		}
		if text != c.text || strings.Join(names, ",") != strings.Join(c.names, ",") {
			t.Errorf("%v %q: text %q calls %v; want %q %v", c.s, c.reply, text, names, c.text, c.names)
		}
	}
}

// TestForcedCallGrammar generates under each syntax's forced-call grammar with a byte
// vocabulary and checks that the parser reads back a call whose arguments fit the schema.
func TestForcedCallGrammar(t *testing.T) {
	var toks [][]byte
	for b := 0; b < 256; b++ {
		toks = append(toks, []byte{byte(b)})
	}
	toks = append(toks, nil)
	v := grammar.NewVocab(toks, []int{256})
	tools := []Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":6},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"]}`)},
		{Name: "noop"},
	}
	for _, s := range []Syntax{Hermes, Llama3, Mistral, Generic} {
		for _, name := range []string{"get_weather", ""} {
			g, err := Grammar(newCompiler(t), s, tools, name)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(s), 1))
			m := g.NewMatcher(v)
			mask := make([]uint64, v.MaskWords())
			var out []byte
			for step := 0; step < 400 && !m.Ended(); step++ {
				m.FillMask(mask)
				var allowed []int
				for id := 0; id < v.Size(); id++ {
					if mask[id>>6]>>(id&63)&1 != 0 {
						allowed = append(allowed, id)
					}
				}
				id := allowed[rng.IntN(len(allowed))]
				if step > 60 { // close things
					for _, a := range allowed {
						if a == 256 || strings.ContainsRune(`"}]`, rune(a)) {
							id = a
						}
					}
				}
				if err := m.Accept(id); err != nil {
					t.Fatal(err)
				}
				if id != 256 {
					out = append(out, byte(id))
				}
			}
			_, calls := Parse(s, string(out))
			if len(calls) != 1 || (name != "" && calls[0].Name != name) {
				t.Fatalf("%v %q: %q parsed to %+v", s, name, out, calls)
			}
		}
	}
	if _, err := Grammar(newCompiler(t), Hermes, tools, "missing"); err == nil {
		t.Error("a named choice of an unknown tool compiled")
	}
}

func newCompiler(t testing.TB) *grammar.Compiler {
	t.Helper()
	c, err := grammar.NewCompiler(context.Background(), grammar.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestManyToolsMakeOneBoundedAutomaton is the regression test for tool_choice "required"
// with 100 tools compiling an automaton per tool and again per combination (16 KB → 4.8 GB):
// all tools share one budget and make one automaton, the size of its parts, and a tool set
// past the budget is a *grammar.LimitError.
func TestManyToolsMakeOneBoundedAutomaton(t *testing.T) {
	tools := func(n int, params string) []Tool {
		var ts []Tool
		for i := range n {
			ts = append(ts, Tool{Name: fmt.Sprintf("tool_%d", i), Parameters: json.RawMessage(params)})
		}
		return ts
	}
	const small = `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer","minimum":0,"maximum":100},"on":{"type":"boolean"}},"required":["q"]}`
	one := newCompiler(t)
	if _, err := Grammar(one, Hermes, tools(1, small), ""); err != nil {
		t.Fatal(err)
	}
	many := newCompiler(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := Grammar(many, Hermes, tools(100, small), ""); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got, per := many.Usage().States, one.Usage().States; got > 100*per+100 {
		t.Errorf("100 tools built %d states, one tool %d: more than one automaton of their parts", got, per)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("100 tools allocated %d MiB", alloc>>20)
	}
	const big = `{"type":"object","properties":{"a":{"type":"string","maxLength":1000},"b":{"type":"string","maxLength":1000}}}`
	c, err := grammar.NewCompiler(context.Background(), grammar.Limits{MaxStates: 1 << 18, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Grammar(c, Hermes, tools(100, big), "")
	var le *grammar.LimitError
	if !errors.As(err, &le) || le.Limit != "MaxStates" {
		t.Errorf("100 large tools: %v; want a *grammar.LimitError of MaxStates", err)
	}
}
