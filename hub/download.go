package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pull is the state of one Client.Pull: its settings, HTTP client, and the cache it writes.
type pull struct {
	c      *Client
	s      settings
	ref    Ref
	commit string
	http   *http.Client
	cache  *cacheRoot
	repo   string // models--ORG--NAME, relative to the cache
}

// diskFree is freeSpace; tests replace it to play a full disk.
var diskFree = freeSpace

// checkSpace refuses a pull whose files (what the cache lacks of them, by the sizes the
// metadata declares) do not fit in the free space of the cache's disk.
func (p *pull) checkSpace(files []sibling) error {
	var need int64
	for _, f := range files {
		size, ok := f.size()
		if !ok || regular(p.cache.abs(p.linkRel(f.Name))) {
			continue
		}
		if etag := f.etag(); validETag(etag) {
			blob := filepath.Join(p.repo, "blobs", etag)
			if regular(p.cache.abs(blob)) {
				continue
			}
			if fi, err := p.cache.root.Lstat(blob + ".incomplete"); err == nil && fi.Mode().IsRegular() && fi.Size() <= size {
				size -= fi.Size()
			}
		}
		need = min(need+size, 1<<62)
	}
	if free, ok := diskFree(p.cache.dir); ok && need > free {
		return &SpaceError{Dir: p.cache.dir, Need: need, Free: free}
	}
	return nil
}

func (p *pull) linkRel(name string) string {
	return filepath.Join(p.repo, "snapshots", p.commit, filepath.FromSlash(name))
}

// downloadAll fetches the files with Parallel workers; the first error cancels the rest.
func (p *pull) downloadAll(ctx context.Context, files []sibling) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan sibling)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range min(p.s.parallel, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range jobs {
				if err := p.download(ctx, f); err != nil {
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

// fileMeta is what the metadata and a HEAD of its resolve URL say about a file.
type fileMeta struct {
	etag     string // normalized: no W/ prefix, no quotes
	size     int64  // declared, and the same wherever it is declared
	location string // where to GET the bytes
	lfs      bool   // etag is the file's SHA-256
}

func normalizeETag(s string) string {
	s = strings.TrimPrefix(s, "W/")
	return strings.Trim(s, `"`)
}

// etagRE: an ETag names a blob file, so it may hold no separator, dot or other character
// a file name could misuse. The Hub's are hex hashes.
var etagRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func validETag(s string) bool { return etagRE.MatchString(s) }

// head reads a file's metadata from its resolve URL: X-Linked-Etag / X-Linked-Size for LFS
// files (whose response redirects to a CDN), ETag / Content-Length for the others. The
// size must agree with the revision metadata's, and one of them must give it.
func (p *pull) head(ctx context.Context, f sibling) (*fileMeta, error) {
	ref := p.ref
	u := p.c.endpoint() + "/" + ref.Repo + "/resolve/" + p.commit + "/" + escapePath(f.Name)
	resp, err := p.do(ctx, http.MethodHead, u, http.Header{"Accept-Encoding": {"identity"}})
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
	sizeHdr := resp.Header.Get("X-Linked-Size")
	if sizeHdr == "" {
		sizeHdr = resp.Header.Get("Content-Length")
	}
	headSize, err := strconv.ParseInt(sizeHdr, 10, 64)
	headOK := err == nil && headSize >= 0
	metaSize, metaOK := f.size()
	switch {
	case headOK && metaOK && headSize != metaSize:
		return nil, fmt.Errorf("%s: %w", ref, &SizeError{File: f.Name, Declared: metaSize, Got: headSize, Err: ErrBadMetadata})
	case metaOK:
		m.size = metaSize
	case headOK:
		m.size = headSize
	default:
		return nil, fmt.Errorf("%s %s: %w: neither the metadata nor the headers give the file's size", ref, f.Name, ErrBadMetadata)
	}
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 {
		base, _ := url.Parse(u)
		l, err := base.Parse(loc)
		if err != nil || !httpURL(l.String()) {
			return nil, fmt.Errorf("%s %s: bad redirect %q", ref, f.Name, loc)
		}
		m.location = l.String()
	}
	if !validETag(m.etag) {
		return nil, fmt.Errorf("%s %s: the Hub sent no usable ETag header (%q)", ref, f.Name, m.etag)
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

// download brings one file into the cache: the blob (under the blob's lock, resumed from
// a partial one, verified) and the snapshot's link to it.
func (p *pull) download(ctx context.Context, f sibling) error {
	link := p.linkRel(f.Name)
	if regular(p.cache.abs(link)) {
		p.c.report(Progress{File: f.Name, Cached: true, Finished: true})
		return nil
	}
	m, err := p.head(ctx, f)
	if err != nil {
		return err
	}
	blob := filepath.Join(p.repo, "blobs", m.etag)
	if !regular(p.cache.abs(blob)) {
		if err := p.cache.mkdirs(filepath.Dir(blob)); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		unlock, err := p.cache.lock(ctx, filepath.Join(".locks", p.repo, m.etag+".lock"))
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		defer unlock()
		// Another process or goroutine may have brought the blob while this one waited.
		if !regular(p.cache.abs(blob)) {
			if err := p.fetchBlob(ctx, f.Name, m, blob); err != nil {
				return err
			}
		} else {
			p.c.report(Progress{File: f.Name, Cached: true, Done: m.size, Total: m.size, Finished: true})
		}
	} else {
		p.c.report(Progress{File: f.Name, Cached: true, Done: m.size, Total: m.size, Finished: true})
	}
	if err := p.cache.link(blob, link); err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	return nil
}

// transfer is a blob's download in progress: the partial file and what it holds.
type transfer struct {
	name string
	m    *fileMeta
	fh   *os.File // BLOB.incomplete
	h    *hasher  // over fh[:have]
	have int64
	prog Progress
	last time.Time // of the last progress report
}

// restart empties the partial file.
func (t *transfer) restart() error {
	if err := t.fh.Truncate(0); err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	t.have, t.h = 0, newHasher(t.m)
	return nil
}

// fetchBlob downloads m into blob via blob.incomplete, continuing a partial file with
// Range requests, and renames it into place only once its size and hash match. A
// leftover partial longer than the file is discarded unread; one that proves wrong is
// downloaded again whole, once.
func (p *pull) fetchBlob(ctx context.Context, name string, m *fileMeta, blob string) error {
	part := blob + ".incomplete"
	fh, err := p.cache.openRegular(part, os.O_RDWR|os.O_CREATE, true)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer fh.Close()
	t := &transfer{name: name, m: m, fh: fh, h: newHasher(m), prog: Progress{File: name, Total: m.size}}
	fi, err := fh.Stat()
	if err != nil {
		return err
	}
	t.have = fi.Size()
	leftover := t.have > 0
	if t.have > m.size {
		leftover = false
		if err := t.restart(); err != nil {
			return err
		}
	} else if _, err := io.Copy(t.h, io.NewSectionReader(fh, 0, t.have)); err != nil {
		return fmt.Errorf("%s: reading the partial download %s: %w", name, p.cache.abs(part), err)
	}
	var last error
	retryAfter := ""
	for try := 0; ; {
		if t.have == m.size {
			err := t.h.check(name, m, t.have)
			if err == nil {
				break
			}
			if leftover { // what an earlier run left was wrong: fetch the whole file
				leftover, last = false, fmt.Errorf("the partial download an earlier run left was wrong: %w", err)
				if err := t.restart(); err != nil {
					return err
				}
				continue
			}
			fh.Close()
			p.cache.root.Remove(part)
			return err
		}
		if try == p.s.tries {
			return &TransferError{File: name, Tries: try, Done: t.have, Total: m.size, Err: last}
		}
		if try > 0 {
			if err := p.pause(ctx, try, retryAfter); err != nil {
				return err
			}
		}
		try++
		retry, ra, err := p.transferOnce(ctx, t)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, over := err.(*SizeError); over {
			fh.Close()
			p.cache.root.Remove(part)
		}
		if !retry {
			return fmt.Errorf("%s: %w", name, err)
		}
		last, retryAfter = err, ra
	}
	if err := fh.Sync(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := fh.Close(); err != nil {
		return err
	}
	if err := p.cache.root.Rename(part, blob); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	p.c.report(Progress{File: name, Done: t.have, Total: t.have, Finished: true})
	return nil
}

// spaceCheckEvery is how many bytes a transfer writes between checks of the free space
// (a variable for tests).
var spaceCheckEvery int64 = 64 << 20

// transferOnce is one try of fetching the rest of t's file. It returns nil once the file
// is whole; otherwise the error, whether another try may help, and a Retry-After.
func (p *pull) transferOnce(ctx context.Context, t *transfer) (retry bool, retryAfter string, err error) {
	hdr := http.Header{"Accept-Encoding": {"identity"}}
	if t.have > 0 {
		hdr.Set("Range", fmt.Sprintf("bytes=%d-", t.have))
	}
	resp, err := p.send(ctx, http.MethodGet, t.m.location, hdr, 0)
	if err != nil {
		return transient(err), "", err
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; {
	case code == http.StatusPartialContent:
		start, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != t.have || (total >= 0 && total != t.m.size) {
			if err := t.restart(); err != nil {
				return false, "", err
			}
			return true, "", fmt.Errorf("asked for bytes=%d-, the server sent Content-Range %q: starting again", t.have, resp.Header.Get("Content-Range"))
		}
	case code == http.StatusOK:
		if t.have > 0 { // the server sent the whole file
			if err := t.restart(); err != nil {
				return false, "", err
			}
		}
	case code >= 400:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		err := p.statusError(t.m.location, resp)
		return transient(err), resp.Header.Get("Retry-After"), err
	default:
		return false, "", fmt.Errorf("HTTP %d from %s", code, t.m.location)
	}
	if resp.ContentLength > t.m.size-t.have {
		return false, "", &SizeError{File: t.name, Declared: t.m.size, Got: t.have + resp.ContentLength, Err: ErrOversize}
	}
	if _, err := t.fh.Seek(t.have, io.SeekStart); err != nil {
		return false, "", err
	}
	buf := make([]byte, 256<<10)
	nextCheck := t.have + spaceCheckEvery
	for {
		n, rerr := resp.Body.Read(buf)
		if int64(n) > t.m.size-t.have {
			return false, "", &SizeError{File: t.name, Declared: t.m.size, Got: t.have + int64(n), Err: ErrOversize}
		}
		if n > 0 {
			if _, err := t.fh.Write(buf[:n]); err != nil {
				return false, "", fmt.Errorf("writing the partial download: %w", err)
			}
			t.h.Write(buf[:n])
			t.have += int64(n)
			t.progress(p.c)
		}
		if t.have >= nextCheck {
			nextCheck += spaceCheckEvery
			if free, ok := diskFree(p.cache.dir); ok && free < t.m.size-t.have {
				return false, "", &SpaceError{Dir: p.cache.dir, Need: t.m.size - t.have, Free: free}
			}
		}
		switch {
		case rerr == io.EOF && t.have < t.m.size:
			return true, "", fmt.Errorf("%w at %d of %d bytes", errShort, t.have, t.m.size)
		case rerr == io.EOF && t.have == t.m.size:
			// The body must end here: a byte more is a server sending more than it declared.
			return false, "", nil
		case rerr != nil:
			if ctx.Err() != nil {
				return false, "", ctx.Err()
			}
			return true, "", rerr
		}
	}
}

func (t *transfer) progress(c *Client) {
	t.prog.Done = t.have
	if now := time.Now(); now.Sub(t.last) > 100*time.Millisecond {
		t.last = now
		c.report(t.prog)
	}
}

// contentRange parses "bytes START-END/TOTAL" (TOTAL may be "*": -1).
func contentRange(s string) (start, total int64, ok bool) {
	v, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	span, size, found := strings.Cut(v, "/")
	first, _, found2 := strings.Cut(span, "-")
	if !found || !found2 {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	total = -1
	if size != "*" {
		if total, err = strconv.ParseInt(size, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}

// hasher computes what the Hub's ETag is: SHA-256 of LFS files, the git blob hash
// (SHA-1 of "blob SIZE\0" and the bytes, SIZE being the declared size) of the others.
type hasher struct {
	hash.Hash
	algo string // "sha256", "git-sha1", or "" for an ETag that is no known hash
}

func newHasher(m *fileMeta) *hasher {
	switch {
	case m.lfs || len(m.etag) == 64:
		return &hasher{Hash: sha256.New(), algo: "sha256"}
	case len(m.etag) == 40:
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", m.size)
		return &hasher{Hash: h, algo: "git-sha1"}
	}
	return &hasher{Hash: sha256.New()}
}

func (h *hasher) check(name string, m *fileMeta, n int64) error {
	if n != m.size {
		return &ChecksumError{File: name, Algorithm: "size", Want: strconv.FormatInt(m.size, 10), Got: strconv.FormatInt(n, 10)}
	}
	if h.algo == "" {
		return nil // not a hash: nothing to check against but the size
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, m.etag) {
		return &ChecksumError{File: name, Algorithm: h.algo, Want: m.etag, Got: got}
	}
	return nil
}
