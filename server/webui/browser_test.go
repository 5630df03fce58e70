package webui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/runner"
	"github.com/hfstatic/hfstatic/server"
	"github.com/hfstatic/hfstatic/server/webui"
)

// chromiumPath finds Chromium: $HFSTATIC_CHROMIUM, else chromium (Debian's package),
// chromium-browser or google-chrome on the PATH. Outside CI a machine without one skips
// the browser tests, saying so; under CI (CI set, as CI=true) they fail: .ci/run installs
// chromium.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HFSTATIC_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on the PATH (apt-get install -y chromium, or set HFSTATIC_CHROMIUM): the browser tests must run in CI")
	}
	t.Skip("no chromium on the PATH: the browser tests of the chat page are skipped (apt-get install -y chromium; .ci/run installs it; under CI they fail)")
	return ""
}

// page is a browser tab on a test server, recording every request the page makes and
// every script error.
type page struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu       sync.Mutex
	requests []string // URLs the page asked for
	errors   []string // uncaught exceptions and console errors
}

// browser is one Chromium for the test binary; each page is a tab of it.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel []context.CancelFunc
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range browser.cancel {
		c()
	}
	os.Exit(code)
}

func startBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	browser.once.Do(func() {
		dir, err := os.MkdirTemp("", "hfstatic-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		actx, cancel := chromedp.NewExecAllocator(context.Background(),
			chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(dir), chromedp.WindowSize(1200, 900))
		bctx, cancelBrowser := chromedp.NewContext(actx)
		browser.ctx = bctx
		browser.cancel = []context.CancelFunc{cancelBrowser, cancel, func() { os.RemoveAll(dir) }}
		if err := chromedp.Do(bctx); err != nil { // starts the browser
			browser.err = fmt.Errorf("start chromium (%s): %w", path, err)
		}
	})
	if browser.err != nil {
		t.Fatal(browser.err)
	}
	return browser.ctx
}

// openPage opens base in a new tab of the browser's width × height.
func openPage(t *testing.T, base string, width, height int) *page {
	t.Helper()
	bctx := startBrowser(t)
	p := &page{t: t, base: base}
	ctx, cancelTab := chromedp.NewContext(bctx, chromedp.WithListener(func(ev any) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			p.requests = append(p.requests, ev.Request.URL)
		case *runtime.EventExceptionThrown:
			p.errors = append(p.errors, fmt.Sprintf("exception: %s %v", ev.ExceptionDetails.Text, ev.ExceptionDetails.Exception))
		case *cdplog.EventEntryAdded: // the browser's own reports, a Content-Security-Policy violation among them
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				p.errors = append(p.errors, fmt.Sprintf("browser %s: %s %s", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				p.errors = append(p.errors, fmt.Sprintf("console %s: %v", ev.Type, ev.Args))
			}
		}
	}))
	t.Cleanup(cancelTab)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelTime)
	p.ctx = ctx
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	p.do(chromedp.EmulateViewport(int64(width), int64(height)), chromedp.Navigate(base))
	t.Cleanup(p.checkClean)
	return p
}

func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%v\nthe page shows %q", err, eval[string](p, `document.body.innerText`))
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitFor waits until the JavaScript expression is true.
func (p *page) waitFor(expr string) {
	p.t.Helper()
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		p.t.Fatalf("waiting for %s: %v\nthe log shows %q", expr, err, eval[string](p, `document.getElementById("log").innerText`))
	}
}

// key presses a key as a keyboard does (keydown with its text, then keyup): a keydown
// handler that cancels the default keeps the text out.
func (p *page) key(key string, shift bool) {
	p.t.Helper()
	code, text, vk := key, "", int64(0)
	switch key {
	case "Enter":
		text, vk = "\r", 13
	case "Tab":
		text, vk = "\t", 9
	case "Escape":
		vk = 27
	}
	mods := int64(0)
	if shift {
		mods = 8
	}
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
		params := input.DispatchKeyEventParams{Type: typ, Key: key, Code: code, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk, Modifiers: mods}
		if typ == input.DispatchKeyEventTypeKeyDown {
			params.Text, params.UnmodifiedText = text, text
		}
		if _, err := chromedp.Call(p.ctx, input.DispatchKeyEvent, params); err != nil {
			p.t.Fatal(err)
		}
	}
}

// named reports whether the accessibility tree holds a node of this role and accessible
// name that is not hidden.
func (p *page) named(role, name string) bool {
	p.t.Helper()
	// The root comes from chromedp's own view of the DOM: DOM.getDocument would renumber
	// the nodes under it.
	roots, err := chromedp.Run(p.ctx, chromedp.Nodes(chromedp.CSS("body")))
	if err != nil || len(roots) == 0 {
		p.t.Fatalf("no body: %v", err)
	}
	res, err := chromedp.Call(p.ctx, accessibility.QueryAXTree, accessibility.QueryAXTreeParams{BackendNodeID: roots[0].BackendNodeID, AccessibleName: name, Role: role})
	if err != nil {
		p.t.Fatal(err)
	}
	for _, n := range res.Nodes {
		if !n.Ignored {
			return true
		}
	}
	return false
}

// screenshot saves the page as PNG into $HFSTATIC_SCREENSHOTS (unset: nothing), to look at
// the page as the tests leave it.
func (p *page) screenshot(name string) {
	p.t.Helper()
	dir := os.Getenv("HFSTATIC_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// checkClean fails the test for a request to another host or a script error.
func (p *page) checkClean() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range p.requests {
		if !strings.HasPrefix(u, p.base+"/") && u != p.base && !strings.HasPrefix(u, "data:") {
			p.t.Errorf("the page requested %s, outside %s", u, p.base)
		}
	}
	if len(p.requests) == 0 {
		p.t.Error("no request was recorded: the network listener does not work")
	}
	for _, e := range p.errors {
		p.t.Errorf("script error: %s", e)
	}
}

// models: stories260K without a chat template (the embedded default model) and with one,
// built once.
var testModels struct {
	once            sync.Once
	plain, template *hfstatic.Model
	err             error
}

// chatTemplate is a small template written for these tests, as server/testdata's.
const chatTemplate = "{%- for message in messages %}<|{{ message.role }}|>\n{{ message.content }}\n{% endfor %}" +
	"{%- if add_generation_prompt %}<|assistant|>\n{% endif %}"

func loadModels(t *testing.T) (plain, template *hfstatic.Model) {
	t.Helper()
	testModels.once.Do(func() {
		if testModels.plain, testModels.err = hfstatic.OpenEmbedded(context.Background(), hfstatic.Options{Threads: 1}); testModels.err != nil {
			return
		}
		folder := fstest.MapFS{}
		src := models.Stories260K()
		testModels.err = fs.WalkDir(src, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := fs.ReadFile(src, path)
			folder[path] = &fstest.MapFile{Data: data}
			return err
		})
		if testModels.err != nil {
			return
		}
		var cfg map[string]any
		if testModels.err = json.Unmarshal(folder["tokenizer_config.json"].Data, &cfg); testModels.err != nil {
			return
		}
		cfg["chat_template"] = chatTemplate
		folder["tokenizer_config.json"].Data, _ = json.Marshal(cfg)
		testModels.template, testModels.err = hfstatic.LoadCheckpoint(context.Background(), folder,
			hfstatic.Options{Threads: 1, Export: hfstatic.ExportOptions{Context: 512, Prefill: 32, CacheDType: "f32"}})
	})
	if testModels.err != nil {
		t.Fatalf("build the test models: %v", testModels.err)
	}
	return testModels.plain, testModels.template
}

// apiCall is one POST to the API, as the server saw it.
type apiCall struct {
	path      string
	body      map[string]any
	events    int       // data: events written
	cancelled bool      // the request's context was done when the handler returned
	ended     time.Time // when the handler returned
	done      chan struct{}
}

// recorder wraps the server: it records each POST and, with delay, slows every write of a
// stream (so a reply lasts long enough to be stopped; the server generates a token per
// write).
type recorder struct {
	h     http.Handler
	delay time.Duration
	mu    sync.Mutex
	calls []*apiCall
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		rc.h.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	call := &apiCall{path: r.URL.Path, done: make(chan struct{})}
	json.Unmarshal(body, &call.body)
	rc.mu.Lock()
	rc.calls = append(rc.calls, call)
	rc.mu.Unlock()
	sw := &slowWriter{ResponseWriter: w, delay: rc.delay, call: call}
	rc.h.ServeHTTP(sw, r)
	rc.mu.Lock()
	call.cancelled, call.ended = r.Context().Err() != nil, time.Now()
	rc.mu.Unlock()
	close(call.done)
}

func (rc *recorder) last(t *testing.T) *apiCall {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.calls) == 0 {
		t.Fatal("the page sent no request to the API")
	}
	return rc.calls[len(rc.calls)-1]
}

func (rc *recorder) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.calls)
}

type slowWriter struct {
	http.ResponseWriter
	delay time.Duration
	call  *apiCall
}

func (w *slowWriter) Write(b []byte) (int, error) {
	if bytes.HasPrefix(b, []byte("data: {")) {
		w.call.events++
	}
	time.Sleep(w.delay)
	return w.ResponseWriter.Write(b)
}

func (w *slowWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// startAPI serves m over the OpenAI API with the page at /.
func startAPI(t *testing.T, m *hfstatic.Model, id string, delay time.Duration) (base string, rec *recorder) {
	t.Helper()
	eng := m.Engine()
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := eng.ChatTemplate("")
	if err != nil {
		tmpl = nil
	}
	pool, err := runner.NewPool(eng.Runner, runner.PoolOptions{MaxSessions: 2, MemoryBudget: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	s, err := server.New(server.Options{Runner: eng.Runner, Pool: server.RunnerPool(pool), Tokenizer: tok, Template: tmpl, ModelID: id,
		MaxSessions: 2, MaxBatch: 2, MaxQueue: 4, QueueTimeout: 10 * time.Second, MaxBodyBytes: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), UI: webui.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	rec = &recorder{h: s.Handler(), delay: delay}
	ts := httptest.NewServer(rec)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts.URL, rec
}

var speed = regexp.MustCompile(`^\d+\.\d tok/s$`)

// collapse joins every run of white space into one space: the page shows single newlines
// as line breaks, whose text has none.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// Send with the keyboard, stream through the chat template with the system prompt and the
// settings, show the speed, keep conversations across a reload, start a new one.
func TestPageChatsThroughTheTemplate(t *testing.T) {
	_, tmpl := loadModels(t)
	base, rec := startAPI(t, tmpl, "stories260K-chat", 0)
	p := openPage(t, base, 1200, 900)
	p.waitFor(`document.getElementById("model-name").textContent === "stories260K-chat"`)
	if hidden := eval[bool](p, `document.getElementById("mode-note").hidden`); !hidden {
		t.Error("the page says the model has no chat template")
	}
	for _, c := range []struct{ role, name string }{
		{"textbox", "Message"}, {"button", "Send"}, {"log", "Conversation"}, {"button", "New chat"},
	} {
		if !p.named(c.role, c.name) {
			t.Errorf("no %s named %q", c.role, c.name)
		}
	}
	if p.named("button", "Stop") {
		t.Error("a Stop button shows while nothing streams")
	}
	// Settings, opened with the keyboard.
	p.do(chromedp.Focus(chromedp.CSS("#settings summary")))
	p.key("Enter", false)
	p.waitFor(`document.getElementById("settings").open`)
	for _, c := range []struct{ role, name string }{{"textbox", "System prompt"}, {"spinbutton", "Temperature"}, {"spinbutton", "Max tokens"}} {
		if !p.named(c.role, c.name) {
			t.Errorf("no %s named %q", c.role, c.name)
		}
	}
	const system = "You tell short stories."
	p.do(chromedp.SendKeys(chromedp.CSS("#system"), system),
		chromedp.SetValue(chromedp.CSS("#temperature"), "0"), chromedp.SetValue(chromedp.CSS("#max-tokens"), "12"),
		chromedp.SendKeys(chromedp.CSS("#message"), "Once upon a time"))
	p.key("Enter", false)
	p.waitFor(`document.querySelectorAll(".msg.assistant .meta:not([hidden])").length === 1 && !document.getElementById("send").disabled`)

	call := rec.last(t)
	msgs, _ := call.body["messages"].([]any)
	wantMsgs := []any{map[string]any{"role": "system", "content": system}, map[string]any{"role": "user", "content": "Once upon a time"}}
	if call.path != "/v1/chat/completions" || fmt.Sprint(msgs) != fmt.Sprint(wantMsgs) || call.body["stream"] != true ||
		call.body["temperature"] != 0.0 || call.body["max_tokens"] != 12.0 {
		t.Errorf("the page sent %s %v", call.path, call.body)
	}
	// The streamed reply is the one the API gives at once for the same request.
	req := map[string]any{"messages": msgs, "temperature": 0, "max_tokens": 12}
	b, _ := json.Marshal(req)
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var whole struct {
		Choices []struct{ Message struct{ Content string } }
	}
	json.NewDecoder(resp.Body).Decode(&whole)
	resp.Body.Close()
	shown := eval[string](p, `document.querySelector(".msg.assistant .body").textContent`)
	if len(whole.Choices) != 1 || collapse(shown) != collapse(whole.Choices[0].Message.Content) || shown == "" {
		t.Errorf("the page shows the reply %q; the API answers %+v", shown, whole)
	}
	if meta := eval[string](p, `document.querySelector(".msg.assistant .meta").textContent`); !speed.MatchString(meta) {
		t.Errorf("the reply's speed reads %q, want N.N tok/s", meta)
	}

	// Shift+Enter is a new line; Enter sends both lines.
	calls := rec.count()
	p.do(chromedp.SendKeys(chromedp.CSS("#message"), "line one"))
	p.key("Enter", true)
	p.do(chromedp.SendKeys(chromedp.CSS("#message"), "line two"))
	if v := eval[string](p, `document.getElementById("message").value`); v != "line one\nline two" || rec.count() != calls {
		t.Errorf("after Shift+Enter the box holds %q and %d requests went out", v, rec.count()-calls)
	}
	p.key("Enter", false)
	p.waitFor(`document.querySelectorAll(".msg.assistant .meta:not([hidden])").length === 2 && !document.getElementById("send").disabled`)
	if v := eval[string](p, `document.querySelectorAll(".msg.user .body")[1].textContent`); v != "line one\nline two" {
		t.Errorf("the second message shows %q", v)
	}

	// A reload keeps the conversation; New chat starts another; the list brings it back.
	p.do(chromedp.Reload())
	p.waitFor(`document.querySelectorAll("#log .msg").length === 4`)
	p.do(chromedp.Click(chromedp.CSS("#new-chat")))
	p.waitFor(`document.querySelectorAll("#log .msg").length === 0 && document.querySelectorAll("#conversations li").length === 2`)
	if title := eval[string](p, `document.querySelectorAll("#conversations .conversation")[1].textContent`); title != "Once upon a time" {
		t.Errorf("the first conversation is listed as %q", title)
	}
	p.do(chromedp.Click(chromedp.CSS("#conversations li:nth-child(2) .conversation")))
	p.waitFor(`document.querySelectorAll("#log .msg").length === 4`)
	p.screenshot("desktop")
	if sys := eval[string](p, `document.getElementById("system").value`); sys != system {
		t.Errorf("after a reload the system prompt is %q", sys)
	}
}

// Stop aborts the request, and the server stops generating: its handler returns at once,
// having sent far fewer tokens than asked for. Without a chat template the page says so and
// continues the text through /v1/completions.
func TestPageStopsTheReplyAndTheServer(t *testing.T) {
	plain, _ := loadModels(t)
	base, rec := startAPI(t, plain, "stories260K", 25*time.Millisecond)
	p := openPage(t, base, 1200, 900)
	p.waitFor(`!document.getElementById("mode-note").hidden`)
	if note := eval[string](p, `document.getElementById("mode-note").textContent`); !strings.Contains(note, "no chat template") || !strings.Contains(note, "/v1/completions") {
		t.Errorf("the page says %q", note)
	}
	p.do(chromedp.Click(chromedp.CSS("#settings summary")), chromedp.SetValue(chromedp.CSS("#max-tokens"), "400"),
		chromedp.SendKeys(chromedp.CSS("#message"), "Once upon a time"))
	p.key("Enter", false)
	p.waitFor(`document.querySelector(".msg.assistant .body").textContent.length > 10`)
	if !p.named("button", "Stop") {
		t.Error("no Stop button while the reply streams")
	}
	clicked := time.Now()
	p.do(chromedp.Click(chromedp.CSS("#stop")))
	call := rec.last(t)
	select {
	case <-call.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server still generates 10 s after Stop")
	}
	rec.mu.Lock()
	t.Logf("after Stop the server had sent %d events of the 400 tokens asked for and returned %v after the click (request cancelled: %v)",
		call.events, call.ended.Sub(clicked).Round(time.Millisecond), call.cancelled)
	if !call.cancelled || call.events >= 100 || call.ended.Sub(clicked) > 3*time.Second {
		t.Errorf("after Stop the server sent %d events (400 asked for), its request cancelled: %v, ending %v after the click",
			call.events, call.cancelled, call.ended.Sub(clicked))
	}
	rec.mu.Unlock()
	p.waitFor(`document.getElementById("stop").hidden && !document.getElementById("send").disabled`)
	meta := eval[string](p, `document.querySelector(".msg.assistant .meta").textContent`)
	if !strings.Contains(meta, "stopped") || call.path != "/v1/completions" || call.body["prompt"] != "Once upon a time" {
		t.Errorf("after Stop the reply's note is %q; the page sent %s %v", meta, call.path, call.body)
	}
	// The next message continues the text: the conversation so far, then the message.
	first := eval[string](p, `JSON.parse(localStorage.getItem("hfstatic.conversations.v1")).conversations[0].messages[1].content`)
	p.do(chromedp.SendKeys(chromedp.CSS("#message"), "The end."))
	p.key("Enter", false)
	p.do(chromedp.Click(chromedp.CSS("#stop")))
	p.waitFor(`!document.getElementById("send").disabled`)
	prompt, _ := rec.last(t).body["prompt"].(string)
	if want := "Once upon a time" + first; !strings.HasPrefix(prompt, want) || !strings.HasSuffix(prompt, " The end.") || len(first) < 10 {
		t.Errorf("the second prompt is %q; the first reply was %q", prompt, first)
	}
}

// Model output is shown as text: markup in a reply never becomes elements, links go only
// to http(s), and Markdown becomes the elements it names.
func TestPageShowsModelOutputAsText(t *testing.T) {
	reply := "Hi <img src=x onerror=\"window.pwned=1\"> and <script>window.pwned=2</script>\n\n" +
		"**bold** `<b>code</b>` [bad](javascript:window.pwned=3) [good](https://example.com/)\n\n```html\n<iframe src=x></iframe>\n```"
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", webui.Handler())
	mux.Handle("GET /ui/", webui.Handler())
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"<img src=x onerror=window.pwned=4>","object":"model","chat_template":true}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, piece := range strings.SplitAfter(reply, " ") {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece}}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	p := openPage(t, ts.URL, 1200, 900)
	p.waitFor(`document.getElementById("model-name").textContent.startsWith("<img")`)
	p.do(chromedp.SendKeys(chromedp.CSS("#message"), "<img src=x onerror=\"window.pwned=5\">"))
	p.key("Enter", false)
	p.waitFor(`!document.getElementById("send").disabled && document.querySelectorAll(".msg.assistant").length === 1`)
	time.Sleep(200 * time.Millisecond) // an onerror would have run by now
	var got struct {
		Elements int    `json:"elements"`
		Pwned    bool   `json:"pwned"`
		Text     string `json:"text"`
		User     string `json:"user"`
		Strong   string `json:"strong"`
		Code     string `json:"code"`
		Pre      string `json:"pre"`
		Links    string `json:"links"`
	}
	raw := eval[string](p, `JSON.stringify({
		elements: document.querySelectorAll("img, script:not([src]), iframe, #log b").length,
		pwned: "pwned" in window,
		text: document.querySelector(".msg.assistant .body").textContent,
		user: document.querySelector(".msg.user .body").textContent,
		strong: Array.from(document.querySelectorAll("#log strong"), e => e.textContent).join(),
		code: Array.from(document.querySelectorAll("#log p code"), e => e.textContent).join(),
		pre: Array.from(document.querySelectorAll("#log pre code"), e => e.className + ":" + e.textContent).join(),
		links: Array.from(document.querySelectorAll("#log a"), e => e.textContent + "=" + e.href).join(),
	})`)
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	if got.Elements != 0 || got.Pwned {
		t.Errorf("model output became markup: %d elements, script ran: %v", got.Elements, got.Pwned)
	}
	for _, want := range []string{`<img src=x onerror="window.pwned=1">`, "<script>window.pwned=2</script>", "[bad](javascript:window.pwned=3)"} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("the reply does not show %q as text: %q", want, got.Text)
		}
	}
	if got.User != `<img src=x onerror="window.pwned=5">` || got.Strong != "bold" || got.Code != "<b>code</b>" ||
		got.Pre != "language-html:<iframe src=x></iframe>" || got.Links != "good=https://example.com/" {
		t.Errorf("rendered %+v", got)
	}
	p.screenshot("markup")
	p.mu.Lock()
	for _, u := range p.requests {
		if strings.Contains(u, "example.com") || strings.HasSuffix(u, "/x") {
			t.Errorf("the page requested %s", u)
		}
	}
	p.mu.Unlock()
}

// At a phone's width nothing scrolls sideways and the controls stay on screen; every
// control is reached with Tab.
func TestPageAtPhoneWidthAndWithTheKeyboard(t *testing.T) {
	plain, _ := loadModels(t)
	base, _ := startAPI(t, plain, "stories260K", 0)
	p := openPage(t, base, 390, 844)
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	p.do(chromedp.Reload())
	p.waitFor(`document.getElementById("model-name").textContent === "stories260K"`)
	p.do(chromedp.SendKeys(chromedp.CSS("#message"), "Once upon a time"))
	p.key("Enter", false)
	p.waitFor(`!document.getElementById("send").disabled && document.querySelectorAll(".msg.assistant").length === 1`)
	layout := eval[string](p, `(() => {
		const w = window.innerWidth, h = window.innerHeight, out = [];
		if (document.documentElement.scrollWidth > w) out.push("page scrolls sideways: " + document.documentElement.scrollWidth + " > " + w);
		for (const id of ["message", "send", "new-chat", "log"]) {
			const r = document.getElementById(id).getBoundingClientRect();
			if (r.width === 0 || r.left < 0 || r.right > w || r.top < 0 || r.bottom > h) out.push(id + " off screen: " + JSON.stringify(r));
		}
		return out.join("; ");
	})()`)
	if layout != "" {
		t.Errorf("at 390 px: %s", layout)
	}
	p.screenshot("phone")
	// Every control has an accessible name (its label, aria-label or text).
	if unnamed := eval[string](p, `Array.from(document.querySelectorAll("button, input, textarea, summary, [tabindex]"))
		.filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim())
		.map(e => e.outerHTML.slice(0, 80)).join("; ")`); unnamed != "" {
		t.Errorf("controls without a name: %s", unnamed)
	}
	// Tab from the top reaches every control.
	p.do(chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	seen := map[string]bool{}
	for range 12 {
		p.key("Tab", false)
		id := eval[string](p, `(document.activeElement.id || document.activeElement.className || document.activeElement.tagName)`)
		seen[id] = true
	}
	for _, want := range []string{"new-chat", "conversation", "message", "send", "log"} {
		if !seen[want] {
			t.Errorf("Tab never reached %s (reached %v)", want, seen)
		}
	}
}
