package main

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/models"
)

// fakeHFCache writes the model folder src into a Hugging Face cache as repo, in
// huggingface_hub's layout (refs/main naming a snapshot), and points the environment at it,
// offline, with an empty program cache. It returns the program cache folder.
func fakeHFCache(t *testing.T, models map[string]fs.FS) (progCache string) {
	t.Helper()
	cache := t.TempDir()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	for repo, src := range models {
		dir := filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
		snap := filepath.Join(dir, "snapshots", commit)
		if err := os.MkdirAll(filepath.Join(dir, "refs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "refs", "main"), []byte(commit), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(snap, src); err != nil {
			t.Fatal(err)
		}
	}
	progCache = t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "1") // nothing may be downloaded
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("HFSTATIC_HOME", progCache)
	return progCache
}

// Every command that takes a program takes a model name too: the first exports it once into
// the program cache, as run does, and the others open that program.
func TestCommandsTakeModelNames(t *testing.T) {
	progCache := fakeHFCache(t, map[string]fs.FS{"karpathy/stories260K": models.Stories260K()})
	const name = "karpathy/stories260K"
	_, stderr, err := run(t, "", "generate", name, "--prompt", "Once upon a time", "-n", "4", "--temperature", "0")
	if err != nil || !strings.Contains(stderr, "exporting karpathy/stories260K once") {
		t.Fatalf("generate NAME: %v\n%s", err, stderr)
	}
	progs, _ := filepath.Glob(filepath.Join(progCache, "programs", "karpathy--stories260K", "*.hfs"))
	if len(progs) != 1 {
		t.Fatalf("program cache holds %v", progs)
	}
	for _, c := range []struct {
		args []string
		want string // in the output
	}{
		{[]string{"generate", name, "--prompt", "Once upon a time", "-n", "4", "--temperature", "0"}, ", there was"},
		{[]string{"run", name, "--prompt", "Once upon a time", "-n", "4", "--temperature", "0"}, ", there was"},
		{[]string{"inspect", name, "--json"}, `"weights": "q8"`},
		{[]string{"logits", name, "--tokens", "1,403"}, "argmax"},
		{[]string{"bench", name, "--prompt-tokens", "8", "--gen-tokens", "4", "--repeat", "1"}, "decode"},
		{[]string{"accuracy", name, "--generate", "4"}, "stories260K (embedded) (f32) vs karpathy/stories260K (q8"},
		{[]string{"accuracy", name, name, "--generate", "4"}, "100.00%"},
		{[]string{"tokenize", name, "--text", "Once upon"}, "[403,407]"},
	} {
		out, stderr, err := run(t, "Once upon a time\n", c.args...)
		if err != nil || !strings.Contains(out, c.want) || strings.Contains(stderr, "exporting") {
			t.Errorf("hfstatic %s: %v\nstdout %q (want %q)\nstderr %s", strings.Join(c.args, " "), err, out, c.want, stderr)
		}
	}
	if out, stderr, err := run(t, "Once upon a time\n", "chat", name, "-n", "4", "--temperature", "0"); err != nil ||
		!strings.HasPrefix(out, ", there was") || !strings.Contains(stderr, "chatting with karpathy/stories260K:") {
		t.Errorf("chat NAME: %v\nstdout %q\nstderr %s", err, out, stderr)
	}
	base, stop := startServe(t, "serve", name, "--threads", "1")
	if code, body := httpGet(t, base+"/v1/models"); code != 200 || !strings.Contains(body, `"id":"karpathy/stories260K"`) {
		t.Errorf("serve NAME: GET /v1/models = %d %s", code, body)
	}
	stop()

	// Other export options make another program; a program file refuses them.
	_, stderr, err = run(t, "", "generate", name, "--weights", "f32", "--context", "128", "--prompt", "Once", "-n", "2")
	if err != nil || !strings.Contains(stderr, "exporting karpathy/stories260K once") || !strings.Contains(stderr, "weights f32, context 128") {
		t.Errorf("generate NAME --weights f32 --context 128: %v\n%s", err, stderr)
	}
	if _, _, err := run(t, "", "generate", progs[0], "--weights", "q4", "--prompt", "Once"); exitCode(err) != 2 ||
		!strings.Contains(err.Error(), "--weights choose how a model is exported; "+progs[0]+" is a program") {
		t.Errorf("generate PROGRAM --weights q4: %v", err)
	}
	// A name the cache does not hold, offline: one line that says so.
	if _, _, err := run(t, "", "generate", "test/missing", "--prompt", "hi"); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("generate of a model not in the cache, offline: %v", err)
	}
	// A mistyped program path is a missing file, not a model name.
	if _, _, err := run(t, "", "generate", "models/nope.hfs", "--prompt", "hi"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("generate of a missing .hfs path: %v", err)
	}
}

// The embedded model and a folder take the export options too, exported in memory.
func TestExportOptionsForTheEmbeddedModelAndFolders(t *testing.T) {
	var rep inspectReport
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--weights", "q8", "--context", "128", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Context != 128 || rep.Source.Weights != "q8" {
		t.Errorf("inspect --weights q8 --context 128 of the embedded model: context %d, weights %s", rep.Context, rep.Source.Weights)
	}
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", storiesDir, "--context", "96", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Context != 96 || rep.Source.Weights != "f32" {
		t.Errorf("inspect FOLDER --context 96: context %d, weights %s", rep.Context, rep.Source.Weights)
	}
}

// startServe runs serve with args on a free port until stop, returning its base URL.
func startServe(t *testing.T, args ...string) (base string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	root := newRoot()
	var logs syncBuffer
	root.SetOut(io.Discard)
	root.SetErr(&logs)
	done := make(chan error, 1)
	go func() { done <- execute(ctx, root, append(args, "--addr", "127.0.0.1:0", "--grace", "1s")) }()
	listening := regexp.MustCompile(`msg=listening addr=(\S+)`)
	for deadline := time.Now().Add(60 * time.Second); ; {
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			base = "http://" + m[1]
			break
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve exited early: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not log its address:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v after cancel", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop after cancel")
		}
	}
	t.Cleanup(stop)
	return base, stop
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func httpPost(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
