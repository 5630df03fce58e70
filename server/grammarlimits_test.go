package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/grammar"
	"github.com/hfstatic/hfstatic/internal/chat"
)

// chatBody is a chat request with extra fields (JSON text without the braces).
func chatBody(extra string) string {
	return `{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"seed":1,` + extra + `}`
}

func schemaField(schema string) string {
	return `"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":` + schema + `}}`
}

func gbnfField(src string) string {
	b, _ := json.Marshal(src)
	return `"grammar":` + string(b)
}

// heapPeak runs f while sampling the heap in use and returns how far it rose above where
// it started.
func heapPeak(f func()) int64 {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	return int64(peak) - int64(base.HeapInuse)
}

// TestHostileGrammarsAreBoundedAndTheServerServesOn is the regression test for the grammar
// classes of issue 33: deep nesting crashed the process, schemas and tool sets built
// gigabytes before a limit applied, wide integer ranges were refused or cost a second,
// const null was ignored. Each request now ends with a clear answer within bounded memory,
// and the server answers the next one.
func TestHostileGrammarsAreBoundedAndTheServerServesOn(t *testing.T) {
	// A template that shows no tools keeps a prompt of 100 tools within the context.
	tmpl, err := chat.Parse("{%- if tools %}<|system|>\nCall a tool.\n{% endif %}{%- for m in messages %}<|{{ m.role }}|>\n{{ m.content }}\n{% endfor %}<|assistant|>\n")
	if err != nil {
		t.Fatal(err)
	}
	_, base, _ := startServer(t, func(o *Options) { o.MaxBodyBytes, o.Template = 8<<20, tmpl })
	const deep = 2 << 20      // past encoding/json's own limit of 10000: invalid_json
	const nested = 5000       // within encoding/json's, past MaxDepth
	var props strings.Builder // 3000 optional properties, ~80 KB
	props.WriteString(`{"type":"object","properties":{`)
	for i := range 3000 {
		if i > 0 {
			props.WriteByte(',')
		}
		fmt.Fprintf(&props, `"property_%d":{"type":"string"}`, i)
	}
	props.WriteString(`}}`)
	tools := func(n int) string {
		var b strings.Builder
		b.WriteString(`"tool_choice":"required","tools":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"type":"function","function":{"name":"f%d","parameters":{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}}}}}`, i)
		}
		b.WriteString(`]`)
		return b.String()
	}
	doubling := "root ::= r0\n"
	for i := range 40 {
		doubling += fmt.Sprintf("r%d ::= r%d r%d\n", i, i+1, i+1)
	}
	doubling += `r40 ::= "ab"`
	var negated strings.Builder // 1 MB of distinct code points
	negated.WriteString("root ::= [^")
	for r := 0x100; r < 0x100+2*100000; r += 2 {
		fmt.Fprintf(&negated, `\U%08x`, r)
	}
	negated.WriteString("]")

	for _, c := range []struct {
		name, body string
		status     int
		code       string // error code, or text the reply must match
	}{
		{"gbnf nested groups", chatBody(gbnfField("root ::= " + strings.Repeat("(", deep) + `"a"` + strings.Repeat(")", deep))), 400, "grammar_too_large"},
		{"gbnf nested groups within the JSON limit", chatBody(gbnfField("root ::= " + strings.Repeat("(", nested) + `"a"` + strings.Repeat(")", nested))), 400, "grammar_too_large"},
		{"schema nested items", chatBody(schemaField(strings.Repeat(`{"type":"array","items":`, nested/2) + "{}" + strings.Repeat("}", nested/2))), 400, "grammar_too_large"},
		{"schema nested anyOf", chatBody(schemaField(strings.Repeat(`{"anyOf":[`, nested/3) + "{}" + strings.Repeat("]}", nested/3))), 400, "grammar_too_large"},
		{"schema nested const", chatBody(schemaField(`{"const":` + strings.Repeat("[", nested) + strings.Repeat("]", nested) + `}`)), 400, "grammar_too_large"},
		{"JSON nested past encoding/json's limit", chatBody(schemaField(`{"const":` + strings.Repeat("[", deep) + strings.Repeat("]", deep) + `}`)), 400, "invalid_json"},
		{"JSON nested in tool parameters, not compiled", chatBody(`"tools":[{"type":"function","function":{"name":"f","parameters":` + strings.Repeat(`{"a":`, nested) + "{}" + strings.Repeat("}", nested) + `}}]`), 200, ""},
		{"JSON nested in a forced tool's parameters", chatBody(`"tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":` + strings.Repeat(`{"a":`, nested) + "{}" + strings.Repeat("}", nested) + `}}]`), 400, "grammar_too_large"},
		{"JSON nested in chat_template_kwargs", chatBody(`"chat_template_kwargs":{"x":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`), 200, ""},
		{"gbnf doubling rules", chatBody(gbnfField(doubling)), 400, "grammar_too_large"},
		{"gbnf negated class of 100000 code points", chatBody(gbnfField(negated.String())), 400, "grammar_too_large"},
		{"pattern past the states", chatBody(schemaField(`{"type":"string","pattern":"^.{1000}.{1000}.{1000}$"}`)), 400, "grammar_too_large"},
		{"3000 optional properties", chatBody(schemaField(props.String())), 200, `^\{`},
		{"100 tools, one forced call", chatBody(tools(100)), 200, ""},
		{"129 tools", chatBody(tools(129)), 400, "invalid_value"},
		{"integer bounds of ±999999999999999", chatBody(schemaField(`{"type":"integer","minimum":-999999999999999,"maximum":999999999999999}`)), 200, `^-?[0-9]+$`},
		{"const null", chatBody(schemaField(`{"const":null}`)), 200, `^null$`},
	} {
		var status int
		var body []byte
		grew := heapPeak(func() { status, _, body = post(t, base+"/v1/chat/completions", c.body) })
		var reply struct {
			Error   *struct{ Code string }
			Choices []struct {
				Message struct {
					Content   string
					ToolCalls []any `json:"tool_calls"`
				}
				FinishReason string `json:"finish_reason"`
			}
		}
		json.Unmarshal(body, &reply)
		switch {
		case status != c.status:
			t.Errorf("%s: %d %.300s; want %d", c.name, status, body, c.status)
		case status != 200 && (reply.Error == nil || reply.Error.Code != c.code):
			t.Errorf("%s: %.300s; want code %s", c.name, body, c.code)
		case status == 200 && c.code != "" && reply.Choices[0].FinishReason == "stop" && !regexpMatch(c.code, reply.Choices[0].Message.Content):
			t.Errorf("%s: reply %q does not match %s", c.name, reply.Choices[0].Message.Content, c.code)
		}
		if max := int64(3*len(c.body)) + 2*grammar.DefaultLimits.CompileBytes(); grew > max {
			t.Errorf("%s: the heap grew by %d MiB, more than %d MiB", c.name, grew>>20, max>>20)
		}
		if code, _ := get(t, base+"/health"); code != 200 {
			t.Fatalf("after %s: /health %d", c.name, code)
		}
	}
}

// TestGrammarsCompileInsideAdmission: a grammar is compiled only once its request holds a
// generation slot (a hostile one waits in the queue like any request), and grammars share
// GrammarMemory: a request whose grammar does not fit beside the running ones waits, then
// gets 503, and fits once they end.
func TestGrammarsCompileInsideAdmission(t *testing.T) {
	lim := grammar.Limits{MaxStates: 1 << 16, MaxNodes: 1 << 14}
	var gp gatedPool
	s, base, _ := startServer(t, func(o *Options) {
		o.MaxSessions, o.MaxQueue, o.QueueTimeout = 1, 4, 300*time.Millisecond
		o.Limits.Grammar = lim
		o.Limits.GrammarMemory = lim.CompileBytes() + lim.CacheBytes()
		gp = newGatedPool(t, *o)
		o.Pool = gp
	})
	first := make(chan int)
	go func() {
		code, _, _ := post(t, base+"/v1/chat/completions", chatBody(schemaField(`{"type":"integer"}`)))
		first <- code
	}()
	<-gp.entered // the first request holds the only slot, its grammar compiled
	code, _, body := post(t, base+"/v1/chat/completions", chatBody(gbnfField(`root ::= ("a"{1000}){1000}`)))
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "queue_timeout") {
		t.Errorf("a grammar while every slot is busy: %d %s; want 503 queue_timeout (not compiled)", code, body)
	}
	close(gp.gate)
	if code := <-first; code != 200 {
		t.Fatalf("first request: %d", code)
	}
	if used := s.guards.grammarMemory.inUse(); used != 0 {
		t.Errorf("%d bytes of grammar memory still held after the requests", used)
	}

	// Two slots, one grammar's worth of memory: the second grammar waits for the first.
	gp2 := make(chan struct{})
	s2, base2, _ := startServer(t, func(o *Options) {
		o.MaxSessions, o.MaxQueue, o.QueueTimeout = 2, 4, 300*time.Millisecond
		o.Limits.Grammar = lim
		o.Limits.GrammarMemory = lim.CompileBytes() + lim.CacheBytes()
	})
	var once sync.Once
	s2.setTokenHook(func(ctx context.Context) { once.Do(func() { <-gp2 }) })
	go func() {
		code, _, _ := post(t, base2+"/v1/chat/completions", chatBody(schemaField(`{"type":"integer"}`)))
		first <- code
	}()
	waitFor(t, func() bool { return s2.guards.grammarMemory.inUse() > 0 })
	code, h, body := post(t, base2+"/v1/chat/completions", chatBody(schemaField(`{"type":"boolean"}`)))
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "grammar_memory") {
		t.Errorf("a second grammar beyond GrammarMemory: %d %s; want 503 grammar_memory", code, body)
	}
	if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After = %q", h.Get("Retry-After"))
	}
	close(gp2)
	if code := <-first; code != 200 {
		t.Fatalf("first request: %d", code)
	}
	if code, _, body := post(t, base2+"/v1/chat/completions", chatBody(schemaField(`{"type":"boolean"}`))); code != 200 {
		t.Errorf("the second grammar once the first is done: %d %s", code, body)
	}
}

// TestGrammarPastItsDFACacheStopsTheRequest: a grammar whose every token needs a new
// automaton beyond MaxDFABytes stops its request with a 400 instead of growing, and the
// server serves on.
func TestGrammarPastItsDFACacheStopsTheRequest(t *testing.T) {
	_, base, _ := startServer(t, func(o *Options) { o.Limits.Grammar = grammar.Limits{MaxDFABytes: 16 << 10} })
	body := `{"prompt":"x","max_tokens":40,"seed":1,` + schemaField(`{"type":"string","pattern":"a.{20}$"}`) + `}`
	code, _, resp := post(t, base+"/v1/completions", body)
	if code != http.StatusBadRequest || !strings.Contains(string(resp), "grammar_too_large") {
		t.Errorf("%d %s; want 400 grammar_too_large", code, resp)
	}
	if code, _, resp := post(t, base+"/v1/completions", `{"prompt":"x","max_tokens":4}`); code != 200 {
		t.Errorf("next request: %d %s", code, resp)
	}
}

// TestGrammarPastItsMaskWorkStopsTheRequest: a grammar whose every DFA state closes over
// ~800,000 empty steps (a mask took 2-5 s of a core with Qwen3's vocabulary, token after
// token) stops its request with a 400 once a mask costs more than MaxMaskWork, and the
// server serves on.
func TestGrammarPastItsMaskWorkStopsTheRequest(t *testing.T) {
	_, base, _ := startServer(t, func(o *Options) { o.Limits.Grammar = grammar.Limits{MaxMaskWork: 1 << 22} })
	src := "root ::= [a-z]* \"a\" e [a-z] e [a-z] e [a-z] e [a-z] e [a-z] e [a-z] e [a-z] e [a-z]\n" +
		"e ::= (\"\"{1000}){100}\n"
	body := `{"prompt":"x","max_tokens":40,"seed":1,` + gbnfField(src) + `}`
	code, _, resp := post(t, base+"/v1/completions", body)
	if code != http.StatusBadRequest || !strings.Contains(string(resp), "grammar_too_large") || !strings.Contains(string(resp), "MaxMaskWork") {
		t.Errorf("%d %s; want 400 grammar_too_large naming MaxMaskWork", code, resp)
	}
	if code, _, resp := post(t, base+"/v1/completions", `{"prompt":"x","max_tokens":4}`); code != 200 {
		t.Errorf("next request: %d %s", code, resp)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
