package hub

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hfstatic/hfstatic/hub/hubtest"
	"github.com/hfstatic/hfstatic/models"
)

// newClient is a client of h with timeouts short enough for tests and no waits between
// tries.
func newClient(h *hubtest.Server, dir string) *Client {
	return &Client{Endpoint: h.URL(), Cache: Cache{Dir: dir}, MaxRetries: 3, RetryWait: time.Millisecond,
		ConnectTimeout: 2 * time.Second, HeaderTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second}
}

func TestParseRef(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Ref
		ok   bool
	}{
		{"Qwen/Qwen3-0.6B", Ref{"Qwen/Qwen3-0.6B", "main"}, true},
		{"HuggingFaceTB/SmolLM2-135M@v1.0", Ref{"HuggingFaceTB/SmolLM2-135M", "v1.0"}, true},
		{"org/name@refs/pr/1", Ref{"org/name", "refs/pr/1"}, true},
		{"./local", Ref{}, false},
		{"org/name/extra", Ref{}, false},
		{"org--x/name", Ref{}, false},
		{"org/name@", Ref{}, false},
		{"org/na me", Ref{}, false},
		{"../x", Ref{}, false},
		{"org/name@../../etc", Ref{}, false},
	} {
		got, err := ParseRef(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}

// TestPull downloads a real model folder and checks huggingface_hub's layout: refs/main,
// blobs named by ETag (sha256 for LFS files, the git blob hash for others), relative
// snapshot symlinks; then the cache alone resolves it, with the server gone.
func TestPull(t *testing.T) {
	h := hubtest.New(t)
	repo := h.AddFS("karpathy/stories260K", models.Stories260K())
	dir := t.TempDir()
	c := newClient(h, dir)
	var finished []string
	c.Progress = func(p Progress) {
		if p.Finished {
			finished = append(finished, p.File)
		}
	}
	ref, _ := ParseRef("karpathy/stories260K")
	snap, err := c.Pull(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "models--karpathy--stories260K", "snapshots", repo.SHA); snap != want {
		t.Fatalf("snapshot %s, want %s", snap, want)
	}
	var want []string
	for name := range repo.Files {
		if wanted(name) {
			want = append(want, name)
		}
	}
	if len(want) < 4 || len(finished) != len(want) {
		t.Errorf("progress finished %v, want %v", finished, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, "models--karpathy--stories260K", "refs", "main"))
	if err != nil || string(b) != repo.SHA {
		t.Fatalf("refs/main = %q, %v; want %s", b, err, repo.SHA)
	}
	for name, want := range repo.Files {
		if !wanted(name) {
			if _, err := os.Lstat(filepath.Join(snap, name)); err == nil {
				t.Errorf("%s was downloaded; export does not need it", name)
			}
			continue
		}
		p := filepath.Join(snap, name)
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %v (equal %v)", name, err, bytes.Equal(got, want))
		}
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatalf("%s is not a symlink: %v", name, err)
		}
		etag := hubtest.GitSHA1(want)
		if hubtest.IsLFS(name) {
			etag = hubtest.SHA256(want)
		}
		if target != "../../blobs/"+etag {
			t.Errorf("%s -> %s, want ../../blobs/%s", name, target, etag)
		}
	}
	h.Close()
	got, err := (&Client{Endpoint: "http://127.0.0.1:1", Cache: Cache{Dir: dir}}).Resolve(context.Background(), ref)
	if err != nil || got != snap {
		t.Fatalf("Resolve from the cache alone = %q, %v", got, err)
	}
}

// TestResume breaks the weights' transfer halfway; the same pull continues with a Range
// request from the partial blob and verifies the whole file.
func TestResume(t *testing.T) {
	h := hubtest.New(t)
	repo := h.AddFS("karpathy/stories260K", models.Stories260K())
	h.Cut["model.safetensors"] = 100_000
	dir := t.TempDir()
	c := newClient(h, dir)
	ref, _ := ParseRef("karpathy/stories260K")
	snap, err := c.Pull(context.Background(), ref)
	if err != nil {
		t.Fatalf("a pull cut once: %v", err)
	}
	want := "model.safetensors bytes=100000-"
	if r := h.Ranges(); len(r) != 1 || r[0] != want {
		t.Fatalf("ranges %q, want [%q]", r, want)
	}
	if got, err := os.ReadFile(filepath.Join(snap, "model.safetensors")); err != nil || !bytes.Equal(got, repo.Files["model.safetensors"]) {
		t.Fatalf("resumed file differs: %v", err)
	}
	part := filepath.Join(c.Cache.RepoDir(ref.Repo), "blobs", hubtest.SHA256(repo.Files["model.safetensors"])+".incomplete")
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Errorf("partial blob still there: %v", err)
	}
}

// TestResumeAfterFailedTries cuts every transfer: the pull fails after MaxRetries+1 tries
// saying how much it kept, the cache trusts nothing of it, and the next pull resumes from
// all the tries brought.
func TestResumeAfterFailedTries(t *testing.T) {
	h := hubtest.New(t)
	repo := h.AddFS("karpathy/stories260K", models.Stories260K())
	h.CutAlways["model.safetensors"] = 10_000
	dir := t.TempDir()
	c := newClient(h, dir)
	c.MaxRetries = 4
	ref, _ := ParseRef("karpathy/stories260K")
	_, err := c.Pull(context.Background(), ref)
	var te *TransferError
	if !errors.As(err, &te) || te.Tries != 5 || te.Done != 50_000 || !strings.Contains(err.Error(), "after 5 tries") || !strings.Contains(err.Error(), "run again to resume") {
		t.Fatalf("a pull cut on every try: %v", err)
	}
	if r := h.Ranges(); len(r) != 4 || r[3] != "model.safetensors bytes=40000-" {
		t.Fatalf("ranges %q, want 4 resumptions up to bytes=40000-", r)
	}
	if _, err := c.Cache.Snapshot(ref); !errors.Is(err, ErrNotCached) {
		t.Fatalf("a broken pull left a snapshot the cache trusts: %v", err)
	}
	part := filepath.Join(c.Cache.RepoDir(ref.Repo), "blobs", hubtest.SHA256(repo.Files["model.safetensors"])+".incomplete")
	if st, err := os.Stat(part); err != nil || st.Size() != 50_000 {
		t.Fatalf("partial blob: %v", err)
	}
	delete(h.CutAlways, "model.safetensors")
	if _, err := c.Pull(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if r := h.Ranges(); len(r) != 5 || r[4] != "model.safetensors bytes=50000-" {
		t.Fatalf("ranges %q, want the next run to resume at bytes=50000-", r)
	}
}

// TestCorrupt serves a flipped byte: the pull fails naming the hash, deletes the blob, and the
// next pull downloads it again.
func TestCorrupt(t *testing.T) {
	h := hubtest.New(t)
	h.AddFS("karpathy/stories260K", models.Stories260K())
	h.Flip["model.safetensors"] = true
	h.Flip["config.json"] = true
	dir := t.TempDir()
	c := newClient(h, dir)
	c.Parallel = 1
	ref, _ := ParseRef("karpathy/stories260K")
	_, err := c.Pull(context.Background(), ref)
	var ce *ChecksumError
	if !errors.As(err, &ce) || !errors.Is(err, ErrChecksum) {
		t.Fatalf("corrupted download: %v", err)
	}
	blobs, _ := os.ReadDir(filepath.Join(c.Cache.RepoDir(ref.Repo), "blobs"))
	for _, b := range blobs {
		if strings.HasSuffix(b.Name(), ".incomplete") {
			t.Errorf("corrupted partial blob left: %s", b.Name())
		}
	}
	for i := 0; i < 2; i++ { // the second flipped file fails the second pull
		if _, err = c.Pull(context.Background(), ref); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestHubErrors(t *testing.T) {
	h := hubtest.New(t)
	h.AddFS("google/gated", fstest.MapFS{"config.json": {Data: []byte("{}")}, "model.safetensors": {Data: []byte("x")}})
	h.Gated["google/gated"] = true
	h.Token = "hf_good"
	h.Add("someone/gguf-only", map[string][]byte{"config.json": []byte("{}"), "model-q4_0.gguf": []byte("GGUF"), "README.md": nil})
	h.AddFS("karpathy/stories260K", models.Stories260K())
	dir := t.TempDir()
	ctx := context.Background()
	for _, c := range []struct {
		ref, token string
		is         error
		msg        string
	}{
		{"google/gated", "", ErrGated, "set HF_TOKEN"},
		{"google/gated", "hf_bad", ErrGated, "is gated"},
		{"nobody/nothing", "", ErrNotFound, "not found"},
		{"karpathy/stories260K@v9", "", ErrNotFound, `revision "v9"`},
		{"someone/gguf-only", "", ErrNoSafetensors, "only model-q4_0.gguf"},
	} {
		cl := newClient(h, dir)
		cl.Token = c.token
		ref, _ := ParseRef(c.ref)
		_, err := cl.Pull(ctx, ref)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s (token %q): %v; want %v containing %q", c.ref, c.token, err, c.is, c.msg)
		}
	}
	cl := newClient(h, dir)
	cl.Token = "hf_good"
	if _, err := cl.Pull(ctx, Ref{"google/gated", "main"}); err != nil {
		t.Errorf("gated model with a good token: %v", err)
	}
}

func TestRateLimitRetried(t *testing.T) {
	h := hubtest.New(t)
	h.AddFS("karpathy/stories260K", models.Stories260K())
	h.Limit = 2
	c := newClient(h, t.TempDir())
	if _, err := c.Pull(context.Background(), Ref{"karpathy/stories260K", "main"}); err != nil {
		t.Fatal(err)
	}
	h.Limit = 10
	c = newClient(h, t.TempDir())
	c.MaxRetries = 1
	_, err := c.Pull(context.Background(), Ref{"karpathy/stories260K", "main"})
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != 429 {
		t.Fatalf("persistent 429: %v", err)
	}
}

func TestOffline(t *testing.T) {
	h := hubtest.New(t)
	h.AddFS("karpathy/stories260K", models.Stories260K())
	dir := t.TempDir()
	ref := Ref{"karpathy/stories260K", "main"}
	off := &Client{Cache: Cache{Dir: dir}, Offline: true}
	if _, err := off.Resolve(context.Background(), ref); !errors.Is(err, ErrOffline) {
		t.Fatalf("offline, not cached: %v", err)
	}
	snap, err := newClient(h, dir).Pull(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := off.Pull(context.Background(), ref); err != nil || got != snap {
		t.Fatalf("offline, cached: %q, %v", got, err)
	}
}

// TestHuggingFaceHubLayout reads a cache made by hand exactly as huggingface_hub makes it
// (a sharded checkpoint; relative symlinks into ../../blobs), with no server.
func TestHuggingFaceHubLayout(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "models--Org--Sharded")
	commit := strings.Repeat("ab", 20)
	files := map[string]string{
		"config.json":                      "{}",
		"model.safetensors.index.json":     `{"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`,
		"model-00001-of-00002.safetensors": "one",
		"model-00002-of-00002.safetensors": "two",
	}
	for name, data := range files {
		blob := filepath.Join(repo, "blobs", hubtest.SHA256([]byte(data)))
		os.MkdirAll(filepath.Dir(blob), 0o755)
		os.WriteFile(blob, []byte(data), 0o644)
		link := filepath.Join(repo, "snapshots", commit, name)
		os.MkdirAll(filepath.Dir(link), 0o755)
		if err := os.Symlink("../../blobs/"+hubtest.SHA256([]byte(data)), link); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(repo, "refs"), 0o755)
	os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644)
	c := Cache{Dir: dir}
	snap, err := c.Snapshot(Ref{"Org/Sharded", "main"})
	if err != nil || snap != filepath.Join(repo, "snapshots", commit) {
		t.Fatalf("Snapshot = %q, %v", snap, err)
	}
	if _, err := c.Snapshot(Ref{"Org/Sharded", commit}); err != nil {
		t.Fatalf("by commit: %v", err)
	}
	os.Remove(filepath.Join(repo, "snapshots", commit, "model-00002-of-00002.safetensors"))
	if _, err := c.Snapshot(Ref{"Org/Sharded", "main"}); !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "model-00002-of-00002") {
		t.Fatalf("missing shard: %v", err)
	}
	list, err := c.List()
	if err != nil || len(list) != 1 || list[0].Repo != "Org/Sharded" || list[0].Refs["main"] != commit || list[0].Bytes != 2+int64(len(files["model.safetensors.index.json"]))+6 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if err := c.Remove("Org/Sharded"); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove("Org/Sharded"); !errors.Is(err, ErrNotCached) {
		t.Fatalf("second Remove: %v", err)
	}
}
