package hub

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/hub/hubtest"
	"github.com/hfstatic/hfstatic/models"
)

// tinyRepo publishes a config and a 16-byte LFS weights file.
func tinyRepo(h *hubtest.Server) *hubtest.Repo {
	return h.Add("acme/tiny", map[string][]byte{
		"config.json":       []byte(`{"model_type":"llama"}`),
		"model.safetensors": []byte("0123456789abcdef"),
	})
}

var tinyRef = Ref{"acme/tiny", "main"}

// endless streams bytes until the client leaves.
func endless(w http.ResponseWriter, r *http.Request, _ []byte) {
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// hang answers nothing until the client leaves.
func hang(w http.ResponseWriter, r *http.Request, _ []byte) { <-r.Context().Done() }

// pullWithin runs a pull that must end within limit.
func pullWithin(t *testing.T, c *Client, ref Ref, limit time.Duration) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	snap, err := c.Pull(ctx, ref)
	if errors.Is(err, context.DeadlineExceeded) || time.Since(start) >= limit {
		t.Fatalf("the pull did not end by itself within %v: %v", limit, err)
	}
	return snap, err
}

// blobSizes lists the files of a repository's blobs folder with their sizes.
func blobSizes(t *testing.T, c *Client, repo string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	ents, _ := os.ReadDir(filepath.Join(c.Cache.RepoDir(repo), "blobs"))
	for _, e := range ents {
		if info, err := e.Info(); err == nil {
			out[e.Name()] = info.Size()
		}
	}
	return out
}

// TestDeclaredSizeBoundsTheDownload: whatever the server sends, a file never takes more
// than its declared size on disk, and the pull fails with a typed error at once.
func TestDeclaredSizeBoundsTheDownload(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(h *hubtest.Server)
		is    error
		gets  int // GETs of the weights expected
	}{
		{"endless body", func(h *hubtest.Server) { h.Body["model.safetensors"] = endless }, ErrOversize, 1},
		{"Content-Length past the declared size", func(h *hubtest.Server) {
			h.Body["model.safetensors"] = func(w http.ResponseWriter, r *http.Request, b []byte) {
				w.Header().Set("Content-Length", "1099511627776")
				endless(w, r, b)
			}
		}, ErrOversize, 1},
		{"a byte more than declared", func(h *hubtest.Server) {
			h.Body["model.safetensors"] = func(w http.ResponseWriter, r *http.Request, b []byte) { w.Write(append(b, '!')) }
		}, ErrOversize, 1},
		{"HEAD and metadata disagree", func(h *hubtest.Server) { h.HeadSize["model.safetensors"] = 1 << 40 }, ErrBadMetadata, 0},
		{"more than the disk holds", func(h *hubtest.Server) { h.Declare["model.safetensors"] = 1 << 60 }, ErrNoSpace, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := hubtest.New(t)
			tinyRepo(h)
			c.setup(h)
			cl := newClient(h, t.TempDir())
			_, err := pullWithin(t, cl, tinyRef, 10*time.Second)
			if !errors.Is(err, c.is) {
				t.Fatalf("error %v, want %v", err, c.is)
			}
			if got := h.Gets("model.safetensors"); got != c.gets {
				t.Errorf("%d GETs of the weights, want %d (no retry of a hostile answer)", got, c.gets)
			}
			weights := hubtest.SHA256([]byte("0123456789abcdef"))
			for name, size := range blobSizes(t, cl, tinyRef.Repo) {
				if strings.HasPrefix(name, weights) || size > 22 { // config.json has 22 bytes
					t.Errorf("blobs/%s: %d bytes left", name, size)
				}
			}
		})
	}
}

// TestDiskFillsWhileStreaming: a transfer stops with ErrNoSpace when the free space drops
// below what the file still needs, keeping what it has for a later resume.
func TestDiskFillsWhileStreaming(t *testing.T) {
	h := hubtest.New(t)
	weights := bytes.Repeat([]byte("w"), 3<<20)
	h.Add("acme/big", map[string][]byte{"config.json": []byte("{}"), "model.safetensors": weights})
	defer func(d func(string) (int64, bool), every int64) { diskFree, spaceCheckEvery = d, every }(diskFree, spaceCheckEvery)
	spaceCheckEvery = 1 << 20
	calls := 0
	diskFree = func(string) (int64, bool) {
		calls++
		if calls == 1 {
			return 1 << 40, true // the check before the pull
		}
		return 1 << 20, true // then someone else fills the disk
	}
	c := newClient(h, t.TempDir())
	_, err := pullWithin(t, c, Ref{"acme/big", "main"}, 10*time.Second)
	var se *SpaceError
	if !errors.As(err, &se) || !errors.Is(err, ErrNoSpace) || se.Free != 1<<20 {
		t.Fatalf("error %v, want a *SpaceError", err)
	}
	part := hubtest.SHA256(weights) + ".incomplete"
	if n := blobSizes(t, c, "acme/big")[part]; n < 1<<20 || n >= 2<<20 {
		t.Errorf("partial blob of %d bytes, want what came before the check (1–2 MiB)", n)
	}
}

// TestTimeouts: a server that stalls or never answers fails each try in bounded time, is
// retried, and the pull ends with a typed error naming the phase.
func TestTimeouts(t *testing.T) {
	stallHalfOnce := func(h *hubtest.Server) {
		var served atomic.Bool
		h.Body["model.safetensors"] = func(w http.ResponseWriter, r *http.Request, b []byte) {
			if !served.Swap(true) {
				w.Header().Set("Content-Length", "16")
				w.Write(b[:8])
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				return
			}
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
		}
	}
	for _, c := range []struct {
		name   string
		setup  func(h *hubtest.Server)
		phase  string // "": the pull succeeds
		ranges []string
	}{
		{"body stalls once, then resumes", stallHalfOnce, "", []string{"model.safetensors bytes=8-"}},
		{"body stalls on every try", func(h *hubtest.Server) {
			h.Body["model.safetensors"] = func(w http.ResponseWriter, r *http.Request, b []byte) {
				w.Header().Set("Content-Length", "16")
				w.Write(b[:1])
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}
		}, "body", nil},
		{"CDN accepts and never answers", func(h *hubtest.Server) { h.Body["model.safetensors"] = hang }, "response headers", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := hubtest.New(t)
			tinyRepo(h)
			c.setup(h)
			cl := newClient(h, t.TempDir())
			cl.HeaderTimeout, cl.ReadTimeout = 200*time.Millisecond, 200*time.Millisecond
			_, err := pullWithin(t, cl, tinyRef, 10*time.Second)
			if c.phase == "" {
				if err != nil {
					t.Fatal(err)
				}
				if r := h.Ranges(); strings.Join(r, ",") != strings.Join(c.ranges, ",") {
					t.Errorf("ranges %q, want %q", r, c.ranges)
				}
				return
			}
			var te *TimeoutError
			var xe *TransferError
			if !errors.As(err, &te) || te.Phase != c.phase || !errors.Is(err, ErrTimeout) || !errors.As(err, &xe) || xe.Tries != 4 {
				t.Fatalf("error %v, want a *TransferError after 4 tries wrapping a %q *TimeoutError", err, c.phase)
			}
			if got := h.Gets("model.safetensors"); got != 4 {
				t.Errorf("%d GETs, want 4 (MaxRetries 3)", got)
			}
		})
	}
}

// TestHubNeverAnswers: an endpoint that accepts connections and says nothing fails the
// pull after the tries, each bounded by the header timeout.
func TestHubNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	c := &Client{Endpoint: "http://" + ln.Addr().String(), Cache: Cache{Dir: t.TempDir()}, MaxRetries: 2,
		RetryWait: time.Millisecond, HeaderTimeout: 200 * time.Millisecond}
	_, err = pullWithin(t, c, tinyRef, 10*time.Second)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Phase != "response headers" || !strings.Contains(err.Error(), "cannot reach the Hub") || !strings.Contains(err.Error(), "3 tries") {
		t.Fatalf("error %v, want a response-headers timeout after 3 tries", err)
	}
}

// TestMetadataTimeout: a metadata answer trickling slower than the idle timeout notices
// still ends within MetadataTimeout.
func TestMetadataTimeout(t *testing.T) {
	srv := newTrickleServer(t)
	c := &Client{Endpoint: srv, Cache: Cache{Dir: t.TempDir()}, MaxRetries: 1, RetryWait: time.Millisecond,
		ReadTimeout: time.Second, MetadataTimeout: 300 * time.Millisecond}
	_, err := pullWithin(t, c, tinyRef, 10*time.Second)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Phase != "request" || !strings.Contains(err.Error(), "2 tries") {
		t.Fatalf("error %v, want a whole-request timeout after 2 tries", err)
	}
}

func newTrickleServer(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"sha":"`))
		for r.Context().Err() == nil {
			w.Write([]byte("0"))
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	})
	srv := &http.Server{Handler: mux}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestConcurrentPulls: pulls of one model at once share its blobs under their locks:
// all succeed and each file is fetched once.
func TestConcurrentPulls(t *testing.T) {
	h := hubtest.New(t)
	repo := h.AddFS("karpathy/stories260K", models.Stories260K())
	for name := range repo.Files {
		h.Body[name] = func(w http.ResponseWriter, r *http.Request, b []byte) {
			time.Sleep(50 * time.Millisecond) // let the pulls overlap
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
		}
	}
	dir := t.TempDir()
	ref := Ref{"karpathy/stories260K", "main"}
	const n = 6
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := newClient(h, dir).Pull(context.Background(), ref)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for name := range repo.Files {
		if wanted(name) && h.Gets(name) != 1 {
			t.Errorf("%s fetched %d times, want once", name, h.Gets(name))
		}
	}
	if _, err := (Cache{Dir: dir}).Snapshot(ref); err != nil {
		t.Fatal(err)
	}
}

// TestDuplicateEntries: a file listed twice is fetched once; listed twice with different
// contents, the metadata is refused.
func TestDuplicateEntries(t *testing.T) {
	h := hubtest.New(t)
	repo := h.AddFS("karpathy/stories260K", models.Stories260K())
	h.Duplicate = true
	if _, err := newClient(h, t.TempDir()).Pull(context.Background(), Ref{"karpathy/stories260K", "main"}); err != nil {
		t.Fatal(err)
	}
	for name := range repo.Files {
		if wanted(name) && h.Gets(name) != 1 {
			t.Errorf("%s fetched %d times, want once", name, h.Gets(name))
		}
	}
	size := func(n int64) *int64 { return &n }
	_, err := exportFiles(tinyRef, []sibling{
		{Name: "config.json", Size: size(2), BlobID: "a"},
		{Name: "model.safetensors", Size: size(16), BlobID: "b"},
		{Name: "model.safetensors", Size: size(17), BlobID: "b"},
	})
	if !errors.Is(err, ErrBadMetadata) {
		t.Fatalf("conflicting duplicates: %v", err)
	}
}

// TestLeftoverPartials: what an earlier run left in blobs/*.incomplete is used only if
// it can be: longer than the file or wrong, it is discarded and the file fetched whole.
func TestLeftoverPartials(t *testing.T) {
	weights, err := fs.ReadFile(models.Stories260K(), "model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		partial []byte
		ranges  []string
		gets    int
	}{
		{"longer than the file", append(bytes.Clone(weights), make([]byte, 1000)...), nil, 1},
		{"as long as the file, wrong", bytes.Repeat([]byte{1}, len(weights)), nil, 1},
		{"a true prefix", weights[:1000], []string{"model.safetensors bytes=1000-"}, 1},
		{"a wrong prefix", make([]byte, 1000), []string{"model.safetensors bytes=1000-"}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := hubtest.New(t)
			h.AddFS("karpathy/stories260K", models.Stories260K())
			cl := newClient(h, t.TempDir())
			ref := Ref{"karpathy/stories260K", "main"}
			blobs := filepath.Join(cl.Cache.RepoDir(ref.Repo), "blobs")
			os.MkdirAll(blobs, 0o755)
			if err := os.WriteFile(filepath.Join(blobs, hubtest.SHA256(weights)+".incomplete"), c.partial, 0o644); err != nil {
				t.Fatal(err)
			}
			snap, err := cl.Pull(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(snap, "model.safetensors")); !bytes.Equal(got, weights) {
				t.Error("the weights differ")
			}
			if r := h.Ranges(); strings.Join(r, ",") != strings.Join(c.ranges, ",") {
				t.Errorf("ranges %q, want %q", r, c.ranges)
			}
			if got := h.Gets("model.safetensors"); got != c.gets {
				t.Errorf("%d GETs, want %d", got, c.gets)
			}
		})
	}
}

// TestCopiedLayout reads the cache huggingface_hub leaves where it cannot make symbolic
// links (Windows without developer mode): regular files in the snapshot, blobs moved into
// it. Then pulls that cannot make links themselves write hard links, else copies.
func TestCopiedLayout(t *testing.T) {
	h := hubtest.New(t)
	repo := h.AddFS("karpathy/stories260K", models.Stories260K())
	ref := Ref{"karpathy/stories260K", "main"}

	dir := t.TempDir()
	repoDir := filepath.Join(dir, "models--karpathy--stories260K")
	var total int64
	for name, b := range repo.Files {
		if !wanted(name) {
			continue
		}
		p := filepath.Join(repoDir, "snapshots", repo.SHA, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		total += int64(len(b))
	}
	os.MkdirAll(filepath.Join(repoDir, "blobs"), 0o755)
	os.MkdirAll(filepath.Join(repoDir, "refs"), 0o755)
	os.WriteFile(filepath.Join(repoDir, "refs", "main"), []byte(repo.SHA), 0o644)
	c := Cache{Dir: dir}
	if _, err := c.Snapshot(ref); err != nil {
		t.Fatalf("copied layout: %v", err)
	}
	if list, err := c.List(); err != nil || len(list) != 1 || list[0].Bytes != total {
		t.Fatalf("List = %+v, %v; want %d bytes", list, err, total)
	}
	if _, err := newClient(h, dir).Pull(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	for name := range repo.Files {
		if h.Gets(name) != 0 {
			t.Errorf("%s fetched again though the snapshot holds a copy", name)
		}
	}

	defer func(s, l func(*os.Root, string, string) error) { makeSymlink, makeHardlink = s, l }(makeSymlink, makeHardlink)
	noLinks := func(*os.Root, string, string) error { return errors.New("not supported") }
	makeSymlink = noLinks
	for _, hardlinks := range []bool{true, false} {
		if !hardlinks {
			makeHardlink = noLinks
		}
		dir := t.TempDir()
		snap, err := newClient(h, dir).Pull(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range repo.Files {
			if !wanted(name) {
				continue
			}
			p := filepath.Join(snap, name)
			li, err := os.Lstat(p)
			if err != nil || !li.Mode().IsRegular() {
				t.Fatalf("%s: %v, want a regular file", name, err)
			}
			etag := hubtest.GitSHA1(b)
			if hubtest.IsLFS(name) {
				etag = hubtest.SHA256(b)
			}
			bi, err := os.Stat(filepath.Join(dir, "models--karpathy--stories260K", "blobs", etag))
			if err != nil || os.SameFile(li, bi) != hardlinks {
				t.Errorf("%s: blob %v, same file %v, want %v", name, err, err == nil && os.SameFile(li, bi), hardlinks)
			}
			if got, _ := os.ReadFile(p); !bytes.Equal(got, b) {
				t.Errorf("%s differs", name)
			}
		}
		if _, err := (Cache{Dir: dir}).Snapshot(ref); err != nil {
			t.Fatal(err)
		}
	}
}

func TestClientSettingsAreValidated(t *testing.T) {
	for _, c := range []struct {
		cl    Client
		field string
	}{
		{Client{ReadTimeout: -1}, "ReadTimeout"},
		{Client{ConnectTimeout: -time.Second}, "ConnectTimeout"},
		{Client{MaxRetries: -1}, "MaxRetries"},
		{Client{Parallel: -2}, "Parallel"},
		{Client{Endpoint: "ftp://example.com"}, "endpoint"},
	} {
		c.cl.Cache = Cache{Dir: t.TempDir()}
		if _, err := c.cl.Pull(context.Background(), tinyRef); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v, want an error naming %s", c.cl, err, c.field)
		}
	}
}

func TestSafeRelPath(t *testing.T) {
	for name, want := range map[string]bool{
		"model.safetensors":                true,
		"model-00001-of-00002.safetensors": true,
		"sub/dir/x.json":                   true,
		"":                                 false,
		"../x":                             false,
		"/etc/passwd":                      false,
		`..\x`:                             false,
		"C:/x":                             false,
		"a:stream.safetensors":             false,
		"x\x00.json":                       false,
		"x\n.json":                         false,
		"what?.safetensors":                false,
		"a/./b":                            false,
		strings.Repeat("a", 1025):          false,
	} {
		if got := safeRelPath(name); got != want {
			t.Errorf("safeRelPath(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestHugeMetadata: a revision listing millions of files, or nested without end, is read
// in bounded memory: what export cannot use is not kept.
func TestHugeMetadata(t *testing.T) {
	many := func(w *bytes.Buffer) {
		w.WriteString(`{"sha":"` + strings.Repeat("a", 40) + `","siblings":[{"rfilename":"config.json","size":2},{"rfilename":"model.safetensors","size":2}`)
		for i := 0; w.Len() < 16<<20; i++ {
			w.WriteString(`,{"rfilename":"f","size":1}`)
		}
		w.WriteString(`]}`)
	}
	deep := func(w *bytes.Buffer) {
		w.WriteString(`{"x":`)
		w.WriteString(strings.Repeat("[", 10<<20))
	}
	for _, c := range []struct {
		name string
		body func(*bytes.Buffer)
		kept int
	}{
		{"16 MiB of siblings", many, 2},
		{"10 MiB of nesting", deep, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body bytes.Buffer
			c.body(&body)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			info, err := decodeRevision(bytes.NewReader(body.Bytes()))
			runtime.ReadMemStats(&after)
			if c.kept < 0 {
				if err == nil {
					t.Fatal("endless nesting decoded")
				}
			} else if err != nil || len(info.Siblings) != c.kept {
				t.Fatalf("%d siblings kept, %v; want %d", len(info.Siblings), err, c.kept)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 3*uint64(body.Len()) {
				t.Errorf("decoding %d bytes allocated %d", body.Len(), grew)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			if kept := int64(after.HeapAlloc) - int64(before.HeapAlloc); kept > 1<<20 {
				t.Errorf("decoding %d bytes keeps %d", body.Len(), kept)
			}
			runtime.KeepAlive(info)
		})
	}
}
