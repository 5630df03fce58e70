package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// testModel is stories260K exported with the test chat template (see testdata/README.md),
// loaded once per test binary and shared: a Runner serves many sessions.
var testModel struct {
	once sync.Once
	m    *engine.Model
	err  error
}

func loadTestModel(t testing.TB) *engine.Model {
	t.Helper()
	testModel.once.Do(func() { testModel.m, testModel.err = buildTestModel() })
	if testModel.err != nil {
		t.Fatalf("build the test model: %v", testModel.err)
	}
	return testModel.m
}

func buildTestModel() (*engine.Model, error) {
	tmpl, err := os.ReadFile("testdata/chat_template.jinja")
	if err != nil {
		return nil, err
	}
	src := models.Stories260K()
	folder := fstest.MapFS{}
	err = fs.WalkDir(src, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(src, path)
		folder[path] = &fstest.MapFile{Data: data, Mode: 0o444}
		return err
	})
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := json.Unmarshal(folder["tokenizer_config.json"].Data, &cfg); err != nil {
		return nil, err
	}
	cfg["chat_template"] = string(tmpl)
	if folder["tokenizer_config.json"].Data, err = json.Marshal(cfg); err != nil {
		return nil, err
	}
	ckpt, err := hf.Open(folder)
	if err != nil {
		return nil, err
	}
	defer ckpt.Close()
	data, _, err := export.ToMemory(context.Background(), ckpt, export.Options{Context: 512, Prefill: 32, CacheDType: program.F32})
	if err != nil {
		return nil, err
	}
	return engine.Load(data, engine.Options{Threads: 1})
}

// testOptions are the server options the tests start from.
func testOptions(t testing.TB) Options {
	t.Helper()
	m := loadTestModel(t)
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := m.ChatTemplate("")
	if err != nil {
		t.Fatal(err)
	}
	return Options{Runner: m.Runner, Tokenizer: tok, Template: tmpl, ModelID: "stories260K",
		MaxSessions: 4, MaxBatch: 4, MaxQueue: 16, QueueTimeout: 10 * time.Second, MaxBodyBytes: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// startServer starts an httptest server; edit adjusts the options first. It returns the
// server, its base URL and the runner pool behind it.
func startServer(t testing.TB, edit func(*Options)) (*Server, string, *runner.Pool) {
	t.Helper()
	o := testOptions(t)
	if edit != nil {
		edit(&o)
	}
	o.MaxBatch = min(o.MaxBatch, o.MaxSessions) // an edit that lowers MaxSessions lowers the batch too
	var pool *runner.Pool
	if o.Pool == nil {
		var err error
		pool, err = runner.NewPool(o.Runner, runner.PoolOptions{MaxSessions: o.MaxSessions, MemoryBudget: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		o.Pool = RunnerPool(pool)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
		if pool != nil {
			pool.Close()
		}
	})
	return s, hs.URL, pool
}

// post sends body (a string, []byte or a value to marshal) and returns the status,
// headers and the body.
func post(t testing.TB, url string, body any) (int, http.Header, []byte) {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	case []byte:
		data = b
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: read body: %v", url, err)
	}
	return resp.StatusCode, resp.Header, out
}

func get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// sseEvents splits a Server-Sent Events body into its data payloads.
func sseEvents(t testing.TB, body []byte) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			events = append(events, data)
		} else if line != "" {
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return events
}

// metricValue returns a metric's value from a /metrics page (the first line that starts
// with name followed by a space or "{").
func metricValue(t testing.TB, base, name string) float64 {
	t.Helper()
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			var v float64
			if err := json.Unmarshal([]byte(rest), &v); err != nil {
				t.Fatalf("metric %s: %q: %v", name, rest, err)
			}
			return v
		}
	}
	t.Fatalf("metric %s not in /metrics:\n%s", name, body)
	return 0
}

// greedyReference generates directly with package generate, as the server must.
func greedyReference(t testing.TB, prompt []int, maxTokens int) string {
	t.Helper()
	o := testOptions(t)
	sess, err := o.Runner.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var eos []int
	for _, e := range o.Runner.Metadata().Tokens.EOS {
		eos = append(eos, int(e))
	}
	res, err := generate.Run(context.Background(), sess, prompt, generate.Options{MaxTokens: maxTokens, EOS: eos})
	if err != nil {
		t.Fatal(err)
	}
	toks := res.Tokens
	if res.Reason == generate.StopEOS {
		toks = toks[:len(toks)-1]
	}
	// The completion continues the prompt: decode it after the prompt's last token, so a
	// leading space survives the SentencePiece decoder's start-of-text strip.
	last := prompt[len(prompt)-1:]
	head, err := o.Tokenizer.Decode(last, true)
	if err != nil {
		t.Fatal(err)
	}
	text, err := o.Tokenizer.Decode(append(append([]int(nil), last...), toks...), true)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(text, head)
}
