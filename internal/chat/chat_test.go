package chat

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func render(tb testing.TB, src string, in Input) (string, error) {
	tb.Helper()
	tmpl, err := Parse(src)
	if err != nil {
		return "", err
	}
	if in.Now.IsZero() {
		in.Now = fixtureNow
	}
	return tmpl.Render(in)
}

func mustRender(tb testing.TB, src string, in Input) string {
	tb.Helper()
	out, err := render(tb, src, in)
	if err != nil {
		tb.Fatalf("render %q: %v", src, err)
	}
	return out
}

// TestWhitespaceControlMatchesJinja2 pins Jinja2's whitespace rules with
// trim_blocks=True and lstrip_blocks=True, as Hugging Face configures them.
func TestWhitespaceControlMatchesJinja2(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"trim_blocks eats one newline after a block tag", "{% if true %}\n\nx{% endif %}", "\nx"},
		{"lstrip_blocks strips indentation before a block tag", "a\n    {% if true %}b{% endif %}", "a\nb"},
		{"lstrip_blocks at template start", "  {% if true %}x{% endif %}", "x"},
		{"text before a tag on the same line stays", "a {% if true %}x{% endif %}", "a x"},
		{"spaces after an expression stay", "{{ 'a' }}  {% if true %}b{% endif %}", "a  b"},
		{"minus strips only the adjacent text", "{%- if true -%}A: {{ 'x' }}{%- endif -%}", "A: x"},
		{"minus on both sides of text", "{{ 'x' }}{%- if true -%}  y  {%- endif %}", "xy"},
		{"expression minus strips newlines", "a\n\n{{- 'b' -}}\n\nc", "abc"},
		{"expressions do not trim_blocks", "{{ 'a' }}\nb", "a\nb"},
		{"plus disables lstrip_blocks", "  {%+ if true %}x{% endif %}", "  x"},
		{"plus disables trim_blocks", "{% if true +%}\nx{% endif %}", "\nx"},
		{"comment trims like a block", "a\n  {# note #}\nb", "a\nb"},
		{"raw block is text", "{% raw %}{{ x }}{% endraw %}", "{{ x }}"},
		{"CRLF becomes LF", "a\r\nb", "a\nb"},
		{"one trailing newline is dropped", "hi\n", "hi"},
		{"indented block lines vanish", "{% for x in [1, 2] %}\n  {% if x %}\n{{ x }}\n  {% endif %}\n{% endfor %}\n", "1\n2\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustRender(t, tc.src, Input{}); got != tc.want {
				t.Errorf("render(%q) = %q, want %q", tc.src, got, tc.want)
			}
		})
	}
}

func TestExpressionsFollowJinja2(t *testing.T) {
	vars := map[string]any{"x": 3, "s": " hi ", "d": json.RawMessage(`{"b": 1, "a": [1, 2]}`), "n": nil}
	tests := []struct{ name, src, want string }{
		{"python string escapes", `{{ 'a\u00e9\x41\tb' }}`, "aéA\tb"},
		{"adjacent string literals concatenate", `{{ 'a' "b" }}`, "ab"},
		{"unary minus binds looser than a filter", "{{ -x|abs }}", "3"},
		{"is binds tighter than not", "{{ not x is defined }}", "False"},
		{"and/or with tests", "{{ x is defined and x > 1 }}", "True"},
		{"comparison chain", "{{ 1 < x < 5 }} {{ 1 < x < 2 }}", "True False"},
		{"inline if without else is empty", "[{{ 'a' if false }}]", "[]"},
		{"test with a bare argument", "{{ x is sameas 3 }}", "True"},
		{"not in", "{{ 'z' not in 'abc' }}", "True"},
		{"slices and negative indices", "{{ 'abcdef'[1:4] }}{{ [1, 2, 3][-1] }}", "bcd3"},
		{"tuple literal", "{{ (1, 2)|length }}", "2"},
		{"dict keys keep their order", "{% for k in d %}{{ k }}{% endfor %}", "ba"},
		{"loop controls", "{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}", "012"},
		{"namespace set", "{% set ns = namespace(v=1) %}{% set ns.v = ns.v + 1 %}{{ ns.v }}", "2"},
		{"string methods", "{{ s.strip() }}|{{ s|trim }}", "hi|hi"},
		{"macro with default", "{% macro f(a, b='y') %}{{ a }}{{ b }}{% endmacro %}{{ f('x') }}", "xy"},
		{"none prints as empty", "[{{ n }}]", "[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustRender(t, tc.src, Input{Vars: vars}); got != tc.want {
				t.Errorf("render(%q) = %q, want %q", tc.src, got, tc.want)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name, src string
		target    error
	}{
		{"arithmetic on undefined", "{{ missing + 'x' }}", ErrUndefinedOperand},
		{"arithmetic on none", "{{ n + 1 }}", ErrUndefinedOperand},
		{"ordering with undefined", "{{ missing < 1 }}", ErrUndefinedOperand},
		{"for over undefined", "{% for t in tools %}{% endfor %}", ErrNotIterable},
		{"for over none", "{% for t in n %}{% endfor %}", ErrNotIterable},
		{"selectattr on none", "{{ n|selectattr('type')|list }}", ErrNotIterable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.src, Input{Vars: map[string]any{"n": nil}})
			if !errors.Is(err, tc.target) {
				t.Errorf("render(%q) error = %v, want %v", tc.src, err, tc.target)
			}
		})
	}
}

func TestRaiseExceptionIsRaiseError(t *testing.T) {
	_, err := render(t, "{{ raise_exception('System role not supported') }}", Input{})
	var re *RaiseError
	if !errors.As(err, &re) || re.Msg != "System role not supported" {
		t.Fatalf("error = %v, want *RaiseError with the template's message", err)
	}
}

func TestToJSONMatchesPython(t *testing.T) {
	vars := map[string]any{
		"v": json.RawMessage(`{"z": 1, "a": [1.0, 1e-05, 12345678901234567890e3, "é\n\u0001<>&"], "e": {}, "l": [], "b": true, "n": null}`),
	}
	tests := []struct{ name, src, want string }{
		{"compact keeps key order", "{{ v|tojson }}",
			`{"z": 1, "a": [1.0, 1e-05, 1.2345678901234568e+22, "é\n\u0001<>&"], "e": {}, "l": [], "b": true, "n": null}`},
		{"indent", "{{ v.e|tojson(indent=2) }}{{ {'k': [1, {}]}|tojson(indent=2) }}",
			"{}{\n  \"k\": [\n    1,\n    {}\n  ]\n}"},
		{"separators", "{{ {'a': 1, 'b': 2}|tojson(separators=(',', ':')) }}", `{"a":1,"b":2}`},
		{"sort_keys", "{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}", `{"a": 2, "b": 1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustRender(t, tc.src, Input{Vars: vars}); got != tc.want {
				t.Errorf("render(%q) =\n%s\nwant\n%s", tc.src, got, tc.want)
			}
		})
	}
}

func TestStrftimeNow(t *testing.T) {
	now := time.Date(2026, time.March, 7, 15, 4, 5, 0, time.UTC)
	tests := map[string]string{
		"%d %b %Y":         "07 Mar 2026",
		"%-d %B %Y":        "7 March 2026",
		"%A, %Y-%m-%d":     "Saturday, 2026-03-07",
		"%H:%M:%S %p %I%%": "15:04:05 PM 03%",
		"%y %j %a":         "26 066 Sat",
	}
	for format, want := range tests {
		src := "{{ strftime_now('" + format + "') }}"
		if got := mustRender(t, src, Input{Now: now}); got != want {
			t.Errorf("strftime_now(%q) = %q, want %q", format, got, want)
		}
	}
}

func TestMessagesReachTheTemplate(t *testing.T) {
	src := `{% for m in messages %}{{ m.role }}:{% if m.content is string %}{{ m.content }}{% elif m.content is none %}<none>{% else %}{{ m.content[0].text }}{% endif %}` +
		`{% if m.tool_calls is defined %}[{{ m.tool_calls[0].function.name }} {{ m.tool_calls[0].function.arguments|tojson }}]{% endif %}` +
		`{% if m.name is defined %}({{ m.name }}){% endif %};{% endfor %}`
	in := Input{Messages: []Message{
		{Role: "user", Content: "hi"},
		{Role: "user", Content: []ContentPart{{Type: "text", Text: "part"}}},
		{Role: "assistant", ToolCalls: []ToolCall{{Type: "function", Function: FunctionCall{Name: "f", Arguments: json.RawMessage(`{"y": 1, "x": 2}`)}}}},
		{Role: "tool", Content: "42", Name: "f", ToolCallID: "c1"},
		{Raw: json.RawMessage(`{"role": "system", "content": "raw"}`)},
	}}
	want := `user:hi;user:part;assistant:<none>[f {"y": 1, "x": 2}];tool:42(f);system:raw;`
	if got := mustRender(t, src, in); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestSpecialTokensAndVars(t *testing.T) {
	cfg := `{"chat_template": "{{ bos_token }}{% if enable_thinking %}T{% endif %}{{ eos_token }}",
		"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>"}`
	tmpl, err := FromTokenizerConfig([]byte(cfg), "")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := tmpl.Render(Input{Vars: map[string]any{"enable_thinking": true}}); got != "<s>T</s>" {
		t.Errorf("with config tokens: %q, want %q", got, "<s>T</s>")
	}
	if got, _ := tmpl.Render(Input{BOSToken: "[B]", EOSToken: "[E]"}); got != "[B][E]" {
		t.Errorf("with Input tokens: %q, want %q", got, "[B][E]")
	}
	if _, err := tmpl.Render(Input{Vars: map[string]any{"messages": 1}}); err == nil {
		t.Error("Vars[\"messages\"] was accepted; want an error pointing at Input.Messages")
	}
}

func TestFromTokenizerConfigSelectsTemplates(t *testing.T) {
	list := `{"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]}`
	tests := []struct {
		name, cfg, ask string
		want           string
		err            error
	}{
		{"string", `{"chat_template": "S"}`, "", "S", nil},
		{"string asked as default", `{"chat_template": "S"}`, "default", "S", nil},
		{"string has no named templates", `{"chat_template": "S"}`, "tool_use", "", ErrTemplateNotFound},
		{"list default", list, "", "D", nil},
		{"list named", list, "tool_use", "T", nil},
		{"list missing name", list, "rag", "", ErrTemplateNotFound},
		{"no template", `{"bos_token": "<s>"}`, "", "", ErrNoTemplate},
		{"null template", `{"chat_template": null}`, "", "", ErrNoTemplate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := FromTokenizerConfig([]byte(tc.cfg), tc.ask)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if got := mustRenderTemplate(t, tmpl); got != tc.want {
				t.Errorf("rendered %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := FromTokenizerConfig([]byte(`{`), ""); err == nil {
		t.Error("truncated JSON was accepted")
	}
}

func mustRenderTemplate(tb testing.TB, tmpl *Template) string {
	tb.Helper()
	out, err := tmpl.Render(Input{})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestParseRejectsUnclosedTags(t *testing.T) {
	for _, src := range []string{"{{ x", "{% if x", "{# c", "{% raw %}x"} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%q) succeeded", src)
		}
	}
}

func FuzzParseAndRender(f *testing.F) {
	for _, s := range []string{
		"{% for m in messages %}{{ m.role|upper }}{% endfor %}",
		"{{ (messages|last).content[1:] ~ 'x' if messages else none }}",
		"{%- set x = [1, {'a': (2, 3)}] -%}{{ x|tojson(indent=1) }}",
		"{% macro m(a) %}{{ a * 2 }}{% endmacro %}{{ m(3) }}{{ raise_exception('e') if false }}",
	} {
		f.Add(s)
	}
	f.Add("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
	f.Add("{% set s = namespace(v='ab') %}{% for i in range(60) %}{% set s.v = s.v ~ s.v %}{% endfor %}{{ s.v }}")
	// A small budget keeps every case fast, loops and all; exceeding it is
	// a *BudgetError, and the output never exceeds it.
	budget := Budget{MaxOutput: 1 << 16, MaxSteps: 20_000, Timeout: 200 * time.Millisecond}
	in := Input{Messages: []Message{{Role: "user", Content: "hi"}}, Now: fixtureNow, Budget: budget}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 2000 {
			return
		}
		tmpl, err := Parse(src)
		if err != nil {
			return
		}
		out, err := tmpl.Render(in)
		if err == nil && len(out) > budget.MaxOutput+maxValue {
			t.Fatalf("rendered %d bytes within a %d-byte budget", len(out), budget.MaxOutput)
		}
	})
}

func TestResourceLimitsAreErrors(t *testing.T) {
	tests := map[string]string{
		"recursive macro":  "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}",
		"huge range":       "{{ range(100000000)|length }}",
		"huge string":      "{{ 'ab' * 100000000 }}",
		"huge list repeat": "{{ ([1, 2] * 100000000)|length }}",
	}
	for name, src := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := render(t, src, Input{}); !errors.Is(err, ErrLimit) {
				t.Errorf("error = %v, want ErrLimit", err)
			}
		})
	}
}

func TestMultiplyIsPython(t *testing.T) {
	src := "{{ 'ab' * 2 }} {{ 2 * 'x' }} {{ 3 * 4 }} {{ ([1] * 3)|length }} {{ 1.5 * 3 }} {{ range(2, 11, 3)|join(',') }}"
	if got, want := mustRender(t, src, Input{}), "abab xx 12 3 4.5 2,5,8"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := mustRender(t, "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}", Input{}), "321"; got != want {
		t.Errorf("bounded recursion: got %q, want %q", got, want)
	}
}

func TestSlicesArePython(t *testing.T) {
	tests := map[string]string{
		"{{ 'héllo'[1:3] }}":                          "él",
		"{{ 'abcdef'[::-1] }}":                        "fedcba",
		"{{ 'abcdef'[-2:] }}":                         "ef",
		"{{ 'abcdef'[:-2] }}":                         "abcd",
		"{{ 'abcdef'[1::2] }}":                        "bdf",
		"{{ 'abcdef'[5:1:-2] }}":                      "fd",
		"{{ [1, 2, 3, 4][1:]|join(',') }}":            "2,3,4",
		"{{ [1, 2, 3][0:999999999999:2]|join(',') }}": "1,3",
		"{{ [1, 2, 3][-100:100]|length }}":            "3",
	}
	for src, want := range tests {
		if got := mustRender(t, src, Input{}); got != want {
			t.Errorf("render(%q) = %q, want %q", src, got, want)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	ce := loadChatExpected(b)
	tmpl, err := FromTokenizerConfig(readTestdata(b, "tokenizer_config.qwen3.json.gz"), "")
	if err != nil {
		b.Fatal(err)
	}
	in := scenarioInput(b, ce.Scenarios[3]) // tools
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Render(in); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFiltersFollowJinja2(t *testing.T) {
	vars := map[string]any{
		"blocks": json.RawMessage(`[{"type": "text", "v": 1}, {"type": "image", "v": 2}, {"type": "audio", "v": 3}]`),
		"d":      json.RawMessage(`{"b": 1, "A": 2, "C": 0}`),
		"words":  json.RawMessage(`["b", "A", "a", "C"]`),
	}
	tests := []struct{ name, src, want string }{
		{"sort by attribute", "{{ blocks|sort(attribute='type')|map(attribute='v')|join(',') }}", "3,2,1"},
		{"sort ignores case by default", "{{ words|sort|join(',') }}", "A,a,b,C"},
		{"sort case-sensitive, reversed", "{{ words|sort(reverse=true, case_sensitive=true)|join(',') }}", "b,a,C,A"},
		{"dictsort ignores case by default", "{% for k, v in d|dictsort %}{{ k }}{% endfor %}", "AbC"},
		{"dictsort case-sensitive", "{% for k, v in d|dictsort(case_sensitive=true) %}{{ k }}{% endfor %}", "ACb"},
		{"dictsort by value", "{% for k, v in d|dictsort(by='value') %}{{ k }}{% endfor %}", "CbA"},
		{"unique ignores case", "{{ words|unique|join(',') }}", "b,A,C"},
		{"int with base 16", "{{ 'ff'|int(base=16) }} {{ '0x1F'|int(base=16) }}", "255 31"},
		{"int of a decimal string", "{{ '42.9'|int }} {{ 'x'|int }} {{ 'x'|int(7) }}", "42 0 7"},
		{"float", "{{ ' 2.5 '|float }} {{ 'x'|float(1.5) }}", "2.5 1.5"},
		{"map a filter", "{{ ['a', 'b']|map('upper')|join }}", "AB"},
		{"map attribute with default", "{{ blocks|map(attribute='w', default='-')|join }}", "---"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustRender(t, tc.src, Input{Vars: vars}); got != tc.want {
				t.Errorf("render(%q) = %q, want %q", tc.src, got, tc.want)
			}
		})
	}
}

func TestValuesPrintLikePython(t *testing.T) {
	vars := map[string]any{"f": json.RawMessage(`{"x": 3.0, "y": 0.1, "l": ["it's", 1, 2.5, true, null, {"k": "v"}]}`)}
	tests := []struct{ src, want string }{
		{"{{ f.x }} {{ f.y }}", "3.0 0.1"},
		{"{{ f.l }}", `["it's", 1, 2.5, True, None, {'k': 'v'}]`},
		{"{{ 'x' ~ f.x }}", "x3.0"},
		{"{{ f.x|string }} {{ none|string }} {{ [1]|string }}", "3.0 None [1]"},
	}
	for _, tc := range tests {
		if got := mustRender(t, tc.src, Input{Vars: vars}); got != tc.want {
			t.Errorf("render(%q) = %q, want %q", tc.src, got, tc.want)
		}
	}
}

func TestTestsTheEngineLacks(t *testing.T) {
	src := "{{ 9 is divisibleby 3 }} {{ 10 is divisibleby(3) }} {{ 10 is not divisibleby 3 }} {{ 'x' is escaped }}"
	if got, want := mustRender(t, src, Input{}), "True False True False"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
