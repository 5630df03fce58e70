package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultEndpoint is the Hub's address when Client.Endpoint is empty.
const DefaultEndpoint = "https://huggingface.co"

// Client downloads model repositories from the Hub into a Cache.
type Client struct {
	Endpoint string       // the Hub or a mirror; DefaultEndpoint when empty
	Token    string       // sent as a bearer token to Endpoint only (gated and private models)
	HTTP     *http.Client // nil: http.DefaultTransport without following cross-host redirects itself
	Cache    Cache
	// Offline forbids network access: only what the cache holds resolves.
	Offline bool
	// Parallel is the number of files downloaded at once (default 4).
	Parallel int
	// Progress, if set, is called as files start, advance and finish; calls for different
	// files may come from different goroutines, never two at once.
	Progress func(Progress)
	// MaxRetries bounds the retries of a 429 or 5xx response (default 4); MaxRetryWait caps
	// the wait a Retry-After header asks for (default 60 s).
	MaxRetries   int
	MaxRetryWait time.Duration
}

// Progress reports a file's download.
type Progress struct {
	File        string
	Done, Total int64 // bytes; Done includes a resumed part
	Cached      bool  // already in the cache: nothing to download
	Finished    bool
}

// wanted reports whether export needs a repository file: configs, tokenizer and chat
// template files, and the safetensors weights with their index.
func wanted(name string) bool {
	if strings.Contains(name, "/") {
		return false // subfolders hold other models' parts (e.g. onnx/, original/)
	}
	switch name {
	case "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
		"special_tokens_map.json", "chat_template.json", "chat_template.jinja", safetensorsIndex:
		return true
	}
	return strings.HasSuffix(name, ".safetensors")
}

// Resolve returns a local snapshot folder for ref: from the cache without any network
// access when it holds the whole snapshot, else downloaded (unless Offline).
func (c *Client) Resolve(ctx context.Context, ref Ref) (string, error) {
	if dir, err := c.Cache.Snapshot(ref); err == nil {
		return dir, nil
	}
	return c.Pull(ctx, ref)
}

// Pull asks the Hub for ref's current commit and downloads what the cache lacks of it.
// Files are verified before they enter the cache; an interrupted download resumes from
// its partial blob the next time.
func (c *Client) Pull(ctx context.Context, ref Ref) (string, error) {
	if c.Offline {
		dir, err := c.Cache.Snapshot(ref)
		if err != nil {
			return "", fmt.Errorf("%s: %w (unset HF_HUB_OFFLINE to download it)", ref, ErrOffline)
		}
		return dir, nil
	}
	info, err := c.revisionInfo(ctx, ref)
	if err != nil {
		return "", err
	}
	var files []sibling
	var weights []string
	for _, s := range info.Siblings {
		if !safeRelPath(s.Name) {
			continue
		}
		if wanted(s.Name) {
			files = append(files, s)
		}
		for _, ext := range []string{".safetensors", ".gguf", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx"} {
			if strings.HasSuffix(s.Name, ext) {
				weights = append(weights, s.Name)
			}
		}
	}
	if !hasSafetensors(files) {
		found := "no weight files at all"
		if len(weights) > 0 {
			sort.Strings(weights)
			if len(weights) > 5 {
				weights = append(weights[:5], "…")
			}
			found = "only " + strings.Join(weights, ", ")
		}
		return "", fmt.Errorf("%s: %w: hfstatic exports Hugging Face safetensors checkpoints; the repository has %s", ref, ErrNoSafetensors, found)
	}
	if !hasName(files, "config.json") {
		return "", fmt.Errorf("%s: %w: the repository has no config.json", ref, ErrNotFound)
	}
	repoDir := c.Cache.RepoDir(ref.Repo)
	snap := filepath.Join(repoDir, "snapshots", info.SHA)
	if err := c.downloadAll(ctx, ref, info.SHA, files); err != nil {
		return "", err
	}
	if !IsCommit(ref.Revision) {
		if err := writeFileAtomic(filepath.Join(repoDir, "refs", filepath.FromSlash(ref.Revision)), []byte(info.SHA)); err != nil {
			return "", err
		}
	}
	if missing := missingFiles(snap); len(missing) > 0 {
		return "", fmt.Errorf("%s: after download the snapshot lacks %s", ref, strings.Join(missing, ", "))
	}
	return snap, nil
}

func hasSafetensors(files []sibling) bool {
	for _, f := range files {
		if strings.HasSuffix(f.Name, ".safetensors") {
			return true
		}
	}
	return false
}

func hasName(files []sibling, name string) bool {
	for _, f := range files {
		if f.Name == name {
			return true
		}
	}
	return false
}

// sibling is a file of the revision, as /api/models/{repo}/revision/{rev}?blobs=true lists it.
type sibling struct {
	Name   string `json:"rfilename"`
	Size   int64  `json:"size"`
	BlobID string `json:"blobId"`
	LFS    *struct {
		SHA256 string `json:"sha256"`
		Size   int64  `json:"size"`
	} `json:"lfs"`
}

type revisionInfo struct {
	SHA      string    `json:"sha"`
	Siblings []sibling `json:"siblings"`
}

func (c *Client) endpoint() string {
	if c.Endpoint == "" {
		return DefaultEndpoint
	}
	return strings.TrimRight(c.Endpoint, "/")
}

func (c *Client) revisionInfo(ctx context.Context, ref Ref) (*revisionInfo, error) {
	u := c.endpoint() + "/api/models/" + ref.Repo + "/revision/" + url.PathEscape(ref.Revision) + "?blobs=true"
	resp, err := c.do(ctx, http.MethodGet, u, nil, ref)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var info revisionInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&info); err != nil {
		return nil, fmt.Errorf("%s: reading the Hub's revision metadata: %w", ref, err)
	}
	if !IsCommit(info.SHA) {
		return nil, fmt.Errorf("%s: the Hub's revision metadata has no commit hash (sha %q)", ref, info.SHA)
	}
	return &info, nil
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{CheckRedirect: sameHostRedirects}
}

// sameHostRedirects follows redirects within a host (renamed repositories) and stops at a
// redirect to another host (the CDN of LFS files), whose Location the caller reads.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("too many redirects")
	}
	if req.URL.Host != via[0].URL.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// do sends a request, retrying 429 and 5xx responses, and turns error statuses into
// *HTTPError. 2xx and 3xx responses are returned with their bodies open.
func (c *Client) do(ctx context.Context, method, u string, hdr http.Header, ref Ref) (*http.Response, error) {
	retries, maxWait := c.MaxRetries, c.MaxRetryWait
	if retries <= 0 {
		retries = 4
	}
	if maxWait <= 0 {
		maxWait = time.Minute
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return nil, err
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		req.Header.Set("User-Agent", "hfstatic")
		if c.Token != "" && sameHost(u, c.endpoint()) {
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		resp, err := c.httpClient().Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%s: cannot reach the Hub at %s: %w (set HF_HUB_OFFLINE=1 to use only the cache, HF_ENDPOINT for a mirror)", ref, c.endpoint(), err)
		}
		if resp.StatusCode < 400 {
			return resp, nil
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500) && attempt < retries {
			wait := time.Duration(1<<attempt) * time.Second
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
				wait = time.Duration(s) * time.Second
			}
			if wait > maxWait {
				wait = maxWait
			}
			select {
			case <-time.After(wait):
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return nil, c.statusError(u, resp, ref)
	}
}

func (c *Client) statusError(u string, resp *http.Response, ref Ref) error {
	e := &HTTPError{URL: u, Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code"), Message: resp.Header.Get("X-Error-Message")}
	page := c.endpoint() + "/" + ref.Repo
	switch {
	case e.Code == "RepoNotFound":
		e.Err = ErrNotFound
		e.Message = fmt.Sprintf("repository %s not found (check the name at %s; a private or gated one needs HF_TOKEN)", ref.Repo, page)
	case e.Code == "GatedRepo" || resp.StatusCode == http.StatusForbidden:
		e.Err = ErrGated
		e.Message = fmt.Sprintf("%s is gated: accept its terms at %s, then set HF_TOKEN (or log in with huggingface_hub) to a token that has access", ref.Repo, page)
	case resp.StatusCode == http.StatusUnauthorized:
		e.Err = ErrGated
		if c.Token == "" {
			e.Message = fmt.Sprintf("%s is private or gated, or does not exist: check the name at %s; for a gated or private model set HF_TOKEN", ref.Repo, page)
		} else {
			e.Message = fmt.Sprintf("the token may not read %s: check the name and your access at %s", ref.Repo, page)
		}
	case resp.StatusCode == http.StatusNotFound:
		e.Err = ErrNotFound
		switch e.Code {
		case "RevisionNotFound":
			e.Message = fmt.Sprintf("revision %q of %s does not exist", ref.Revision, ref.Repo)
		case "EntryNotFound":
			e.Message = "file not found in the repository"
		default:
			e.Message = fmt.Sprintf("repository %s not found", ref.Repo)
		}
	case resp.StatusCode == http.StatusTooManyRequests:
		e.Message = "rate limited by the Hub; try again later (a token raises the limit)"
	}
	return e
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host == ub.Host
}

// downloadAll fetches the files with c.Parallel workers; the first error cancels the rest.
func (c *Client) downloadAll(ctx context.Context, ref Ref, commit string, files []sibling) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := c.Parallel
	if n <= 0 {
		n = 4
	}
	jobs := make(chan sibling)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range min(n, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range jobs {
				if err := c.download(ctx, ref, commit, f); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, f := range files {
		select {
		case jobs <- f:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return firstErr
}

var progressMu sync.Mutex

func (c *Client) report(p Progress) {
	if c.Progress != nil {
		progressMu.Lock()
		defer progressMu.Unlock()
		c.Progress(p)
	}
}

// fileMeta is what a HEAD of a resolve URL says about a file.
type fileMeta struct {
	etag     string // normalized: no W/ prefix, no quotes
	size     int64
	location string // where to GET the bytes
	lfs      bool   // etag is the file's SHA-256
}

func normalizeETag(s string) string {
	s = strings.TrimPrefix(s, "W/")
	return strings.Trim(s, `"`)
}

// head reads a file's metadata from its resolve URL: X-Linked-Etag / X-Linked-Size for LFS
// files (whose response redirects to a CDN), ETag / Content-Length for the others.
func (c *Client) head(ctx context.Context, ref Ref, commit string, f sibling) (*fileMeta, error) {
	u := c.endpoint() + "/" + ref.Repo + "/resolve/" + commit + "/" + escapePath(f.Name)
	resp, err := c.do(ctx, http.MethodHead, u, http.Header{"Accept-Encoding": {"identity"}}, ref)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	m := &fileMeta{location: u}
	if e := resp.Header.Get("X-Linked-Etag"); e != "" {
		m.etag, m.lfs = normalizeETag(e), true
	} else {
		m.etag = normalizeETag(resp.Header.Get("ETag"))
	}
	size := resp.Header.Get("X-Linked-Size")
	if size == "" {
		size = resp.Header.Get("Content-Length")
	}
	m.size, err = strconv.ParseInt(size, 10, 64)
	if err != nil || m.size < 0 {
		m.size = -1
	}
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 {
		base, _ := url.Parse(u)
		l, err := base.Parse(loc)
		if err != nil {
			return nil, fmt.Errorf("%s: bad redirect %q: %w", f.Name, loc, err)
		}
		m.location = l.String()
	}
	if m.etag == "" || strings.ContainsAny(m.etag, `/\`) || m.etag == "." || m.etag == ".." {
		return nil, fmt.Errorf("%s %s: the Hub sent no usable ETag header", ref, f.Name)
	}
	if f.LFS != nil && f.LFS.SHA256 != "" {
		m.lfs = true
		if !strings.EqualFold(f.LFS.SHA256, m.etag) {
			return nil, fmt.Errorf("%s %s: the Hub's metadata says SHA-256 %s but the file's ETag is %s", ref, f.Name, f.LFS.SHA256, m.etag)
		}
	}
	return m, nil
}

func escapePath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// download brings one file into the cache: the blob (resumed from a partial one, verified)
// and the snapshot's symlink to it.
func (c *Client) download(ctx context.Context, ref Ref, commit string, f sibling) error {
	repoDir := c.Cache.RepoDir(ref.Repo)
	link := filepath.Join(repoDir, "snapshots", commit, filepath.FromSlash(f.Name))
	if regular(link) {
		c.report(Progress{File: f.Name, Cached: true, Finished: true})
		return nil
	}
	m, err := c.head(ctx, ref, commit, f)
	if err != nil {
		return err
	}
	blob := filepath.Join(repoDir, "blobs", m.etag)
	if !regular(blob) {
		if err := c.fetchBlob(ctx, ref, f.Name, m, blob); err != nil {
			return err
		}
	} else {
		c.report(Progress{File: f.Name, Cached: true, Done: m.size, Total: m.size, Finished: true})
	}
	return symlinkAtomic(blob, link)
}

// fetchBlob downloads m into blob via blob.incomplete, continuing a partial file with a
// Range request, and renames it into place only once its size and hash match.
func (c *Client) fetchBlob(ctx context.Context, ref Ref, name string, m *fileMeta, blob string) error {
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return err
	}
	part := blob + ".incomplete"
	fh, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer fh.Close()
	h := newHasher(m)
	have, err := io.Copy(h, fh) // hash what an earlier run left
	if err != nil {
		return fmt.Errorf("%s: reading the partial download %s: %w", name, part, err)
	}
	if m.size >= 0 && have > m.size {
		have = 0 // longer than the file: start again
	}
	hdr := http.Header{"Accept-Encoding": {"identity"}}
	if have > 0 && (m.size < 0 || have < m.size) {
		hdr.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	if m.size >= 0 && have == m.size {
		hdr = nil // complete already; only the check is left
	}
	if hdr != nil {
		resp, err := c.do(ctx, http.MethodGet, m.location, hdr, ref)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusPartialContent && have > 0 {
			// The server sent the whole file: start again.
			have = 0
			h = newHasher(m)
		}
		if resp.StatusCode >= 300 {
			return fmt.Errorf("%s: HTTP %d from %s", name, resp.StatusCode, m.location)
		}
		if err := fh.Truncate(have); err != nil {
			return err
		}
		if _, err := fh.Seek(have, io.SeekStart); err != nil {
			return err
		}
		w := &progressWriter{c: c, p: Progress{File: name, Done: have, Total: m.size}}
		n, err := io.Copy(io.MultiWriter(fh, h, w), resp.Body)
		have += n
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: download interrupted after %d bytes (run again to resume): %w", name, have, err)
		}
	}
	if err := fh.Sync(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := h.check(name, m, have); err != nil {
		fh.Close()
		os.Remove(part)
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	if err := os.Rename(part, blob); err != nil {
		return err
	}
	c.report(Progress{File: name, Done: have, Total: have, Finished: true})
	return nil
}

// hasher computes what the Hub's ETag is: SHA-256 of LFS files, the git blob hash of others.
type hasher struct {
	hash.Hash
	git bool
	buf []byte // git: the bytes until the size is known (small files only)
}

func newHasher(m *fileMeta) *hasher {
	if m.lfs || len(m.etag) == 64 {
		return &hasher{Hash: sha256.New()}
	}
	return &hasher{git: true}
}

func (h *hasher) Write(p []byte) (int, error) {
	if h.git {
		if len(h.buf)+len(p) > 64<<20 {
			return 0, errors.New("non-LFS file over 64 MiB")
		}
		h.buf = append(h.buf, p...)
		return len(p), nil
	}
	return h.Hash.Write(p)
}

func (h *hasher) check(name string, m *fileMeta, n int64) error {
	if m.size >= 0 && n != m.size {
		return &ChecksumError{File: name, Algorithm: "size", Want: strconv.FormatInt(m.size, 10), Got: strconv.FormatInt(n, 10)}
	}
	var got, algo string
	if h.git {
		if len(m.etag) != 40 {
			return nil // not a git blob hash: nothing to check against
		}
		s := sha1.New()
		fmt.Fprintf(s, "blob %d\x00", len(h.buf))
		s.Write(h.buf)
		got, algo = hex.EncodeToString(s.Sum(nil)), "git-sha1"
	} else {
		got, algo = hex.EncodeToString(h.Sum(nil)), "sha256"
	}
	if !strings.EqualFold(got, m.etag) {
		return &ChecksumError{File: name, Algorithm: algo, Want: m.etag, Got: got}
	}
	return nil
}

type progressWriter struct {
	c    *Client
	p    Progress
	last time.Time
}

func (w *progressWriter) Write(b []byte) (int, error) {
	w.p.Done += int64(len(b))
	if now := time.Now(); now.Sub(w.last) > 100*time.Millisecond {
		w.last = now
		w.c.report(w.p)
	}
	return len(b), nil
}

// symlinkAtomic points link at target with a relative symlink (../../blobs/ETAG), replacing
// whatever was there.
func symlinkAtomic(target, link string) error {
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(link), target)
	if err != nil {
		return err
	}
	tmp := link + ".tmp-link"
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// writeFileAtomic writes a small file through a temporary name.
func writeFileAtomic(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
