package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

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
