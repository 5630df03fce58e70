package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/hub/hubtest"
	"github.com/hfstatic/hfstatic/models"
)

// hubFixture serves the embedded stories260K folder as karpathy/stories260K on a local
// Hub and points the environment at it and at empty caches.
func hubFixture(t *testing.T) (h *hubtest.Server, hfCache, progCache string) {
	h = hubtest.New(t)
	h.AddFS("karpathy/stories260K", models.Stories260K())
	hfCache, progCache = t.TempDir(), t.TempDir()
	t.Setenv("HF_ENDPOINT", h.URL())
	t.Setenv("HF_HUB_CACHE", hfCache)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HFSTATIC_HOME", progCache)
	return h, hfCache, progCache
}

func TestPullExportRunListRm(t *testing.T) {
	h, hfCache, progCache := hubFixture(t)
	out := mustRun(t, "pull", "karpathy/stories260K", "-q")
	snap := strings.TrimSpace(out)
	if !strings.HasPrefix(snap, filepath.Join(hfCache, "models--karpathy--stories260K", "snapshots")) {
		t.Fatalf("pull printed %q", out)
	}
	prog := filepath.Join(t.TempDir(), "s.hfs")
	if out := mustRun(t, "export", "karpathy/stories260K", "-o", prog, "-q"); !strings.Contains(out, "wrote "+prog) {
		t.Fatalf("export of a model name said %q", out)
	}
	if out := mustRun(t, "tokenize", "karpathy/stories260K", "--text", "Once upon"); out == "" {
		t.Fatal("tokenize of a model name printed nothing")
	}

	// run exports once into the program cache, then reuses it without the Hub.
	_, stderr, err := run(t, "", "run", "karpathy/stories260K", "--prompt", "Once upon a time", "-n", "8")
	if err != nil || !strings.Contains(stderr, "exporting karpathy/stories260K once") || !strings.Contains(stderr, "weights q8") {
		t.Fatalf("first run: %v\n%s", err, stderr)
	}
	h.Close()
	out, stderr, err = run(t, "", "run", "karpathy/stories260K", "--prompt", "Once upon a time", "-n", "8")
	if err != nil || strings.Contains(stderr, "exporting") || strings.TrimSpace(out) == "" {
		t.Fatalf("second run: %v\nstdout %q\nstderr %s", err, out, stderr)
	}
	progs, _ := filepath.Glob(filepath.Join(progCache, "programs", "karpathy--stories260K", "*.hfs"))
	if len(progs) != 1 {
		t.Fatalf("program cache holds %v", progs)
	}
	out = mustRun(t, "list")
	if strings.Count(out, "karpathy/stories260K") != 2 || !strings.Contains(out, "weights q8") {
		t.Fatalf("list printed\n%s", out)
	}
	out = mustRun(t, "rm", "karpathy/stories260K")
	if strings.Count(out, "removed") != 2 {
		t.Fatalf("rm printed %q", out)
	}
	if _, err := os.Stat(filepath.Join(hfCache, "models--karpathy--stories260K")); !os.IsNotExist(err) {
		t.Fatalf("rm left the download: %v", err)
	}
	if _, _, err := run(t, "", "rm", "karpathy/stories260K"); err == nil || !strings.Contains(err.Error(), "nothing cached") {
		t.Fatalf("second rm: %v", err)
	}
}

func TestHubFailuresAreOneLine(t *testing.T) {
	h, _, _ := hubFixture(t)
	h.Add("acme/gguf-only", map[string][]byte{"config.json": []byte("{}"), "model.Q4_K_M.gguf": []byte("GGUF")})
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"pull", "acme/gguf-only"}, "", "only model.Q4_K_M.gguf"},
		{[]string{"pull", "acme/missing"}, "", "repository acme/missing not found"},
		{[]string{"pull", "karpathy/stories260K@nope"}, "", `revision "nope"`},
		{[]string{"pull", "karpathy/stories260K"}, "1", "HF_HUB_OFFLINE"},
		{[]string{"export", "not/a/ref", "-o", "x.hfs"}, "", "no such folder, and not a Hugging Face model name"},
	} {
		t.Setenv("HF_HUB_OFFLINE", c.env)
		_, _, err := run(t, "", append(c.args, "-q")...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("hfstatic %s: %v; want one line containing %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	t.Setenv("HF_HUB_OFFLINE", "")
	if _, _, err := run(t, "", "pull", "not-a-ref"); err == nil {
		t.Error("pull of a bad reference succeeded")
	} else if !errors.As(err, new(usageError)) {
		t.Errorf("pull of a bad reference: %v is not a usage error (exit 2)", err)
	}
}

func TestChooseContextFitsMemory(t *testing.T) {
	qwen3 := []byte(`{"max_position_embeddings":40960,"num_hidden_layers":28,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"hidden_size":1024}`)
	gemma3 := []byte(`{"text_config":{"max_position_embeddings":131072,"num_hidden_layers":34,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"hidden_size":2560}}`)
	for _, c := range []struct {
		cfg   []byte
		avail int64
		want  int
	}{
		{qwen3, 24 << 30, 4096}, // 112 KiB per token: 4096 tokens need 448 MiB
		{qwen3, 1 << 30, 2048},  // a quarter of 1 GiB holds 2048
		{gemma3, 24 << 30, 4096},
		// google/gemma-3-4b-it as published: text_config leaves heads and head_dim to
		// Gemma3TextConfig's defaults (8, 4, 256): 136 KiB per token, 1024 fit in 256 MiB
		{[]byte(`{"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3","text_config":{"hidden_size":2560,"intermediate_size":10240,"model_type":"gemma3_text","num_hidden_layers":34,"rope_scaling":{"factor":8.0,"rope_type":"linear"},"sliding_window":1024}}`), 1 << 30, 1024},
		{[]byte(`{"max_position_embeddings":512,"num_hidden_layers":5,"num_attention_heads":8,"num_key_value_heads":4,"hidden_size":64}`), 0, 512},
	} {
		got, bytes := chooseContext(c.cfg, c.avail)
		if got != c.want || (c.avail > 0 && bytes > c.avail/4) {
			t.Errorf("%s with %d bytes: context %d (%d bytes), want %d", c.cfg, c.avail, got, bytes, c.want)
		}
	}
}

// TestHubEnvTimeouts: huggingface_hub's timeout variables set the client's timeouts; a
// bad value is reported, not silently used.
func TestHubEnvTimeouts(t *testing.T) {
	t.Setenv("HF_HUB_DOWNLOAD_TIMEOUT", "2.5")
	t.Setenv("HF_HUB_ETAG_TIMEOUT", "30")
	var stderr strings.Builder
	c := hubEnv(&stderr, true)
	if c.ReadTimeout != 2500*time.Millisecond || c.ConnectTimeout != c.ReadTimeout || c.HeaderTimeout != c.ReadTimeout || c.MetadataTimeout != 30*time.Second {
		t.Errorf("timeouts %v %v %v %v", c.ConnectTimeout, c.HeaderTimeout, c.ReadTimeout, c.MetadataTimeout)
	}
	t.Setenv("HF_HUB_DOWNLOAD_TIMEOUT", "soon")
	c = hubEnv(&stderr, true)
	if c.ReadTimeout != 0 || !strings.Contains(stderr.String(), `ignoring HF_HUB_DOWNLOAD_TIMEOUT="soon"`) {
		t.Errorf("a bad value: ReadTimeout %v, stderr %q", c.ReadTimeout, stderr.String())
	}
}
