// Package hubtest serves model repositories over HTTP the way the Hugging Face Hub does, for
// tests of Hub clients without the Internet.
package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Server speaks the Hub's endpoints as huggingface_hub uses them:
//
//	GET  /api/models/{org}/{name}/revision/{rev}?blobs=true  → {"sha", "siblings": [{rfilename, size, blobId, lfs}]}
//	HEAD /{org}/{name}/resolve/{rev}/{file}                 → ETag (git blob sha1) and Content-Length for
//	     regular files; for LFS files 302 to the CDN with X-Linked-Etag (sha256), X-Linked-Size
//	GET  the same / the CDN URL                             → the bytes, honouring Range
//
// with X-Repo-Commit on resolve responses and X-Error-Code on errors.
type Server struct {
	t     testing.TB
	srv   *httptest.Server
	cdn   *httptest.Server
	repos map[string]*Repo // by "org/name"
	mu    sync.Mutex

	// Token is the bearer token a Gated repository requires.
	Token string
	Gated map[string]bool
	// Cut: file → bytes after which its next transfer breaks (once).
	Cut map[string]int
	// Flip: file → its next transfer has one corrupted byte (once).
	Flip map[string]bool
	// CutAlways: file → every transfer of it breaks after this many bytes of the response.
	CutAlways map[string]int
	// Limit: answer 429 (Retry-After: 0) to this many metadata calls first.
	Limit int
	// Duplicate lists every file twice in the revision metadata.
	Duplicate bool
	// Declare: file → the size the metadata and the HEAD declare instead of the true one;
	// HeadSize: file → the size only the HEAD declares.
	Declare, HeadSize map[string]int64
	// Body: file → a handler that replaces the transfer of its bytes b (GETs of the CDN
	// or resolve URL), to play a hostile or broken server.
	Body map[string]func(w http.ResponseWriter, r *http.Request, b []byte)

	ranges []string       // Range headers seen
	gets   map[string]int // GETs per file
}

// URL is the Hub's endpoint (HF_ENDPOINT).
func (h *Server) URL() string { return h.srv.URL }

// Close stops the Hub and its CDN.
func (h *Server) Close() { h.srv.Close(); h.cdn.Close() }

// Gets returns the number of GETs of a file's bytes so far.
func (h *Server) Gets(file string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gets[file]
}

// Ranges returns the Range headers seen, as "FILE bytes=N-".
func (h *Server) Ranges() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ranges...)
}

// Repo is a published repository.
type Repo struct {
	SHA   string            // the commit of its files
	Refs  map[string]string // branch → commit
	Files map[string][]byte
}

// IsLFS reports whether the Hub stores a file in LFS (here: the safetensors files).
func IsLFS(name string) bool { return strings.HasSuffix(name, ".safetensors") }

// GitSHA1 is the git blob hash, the ETag of a regular file.
func GitSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// SHA256 is the hex SHA-256, the ETag of an LFS file.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// New starts a Hub and its CDN on loopback; both stop when the test ends.
func New(t testing.TB) *Server {
	h := &Server{t: t, repos: map[string]*Repo{}, Gated: map[string]bool{},
		gets: map[string]int{}, Cut: map[string]int{}, Flip: map[string]bool{}, CutAlways: map[string]int{},
		Declare: map[string]int64{}, HeadSize: map[string]int64{}, Body: map[string]func(http.ResponseWriter, *http.Request, []byte){}}
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(func() { h.srv.Close(); h.cdn.Close() })
	return h
}

// AddFS publishes every file of fsys as repo at a made-up commit.
func (h *Server) AddFS(repo string, fsys fs.FS) *Repo {
	files := map[string][]byte{}
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, err := fs.ReadFile(fsys, p)
			if err != nil {
				h.t.Fatal(err)
			}
			files[p] = b
		}
		return nil
	})
	return h.Add(repo, files)
}

// Add publishes files as repo at a made-up commit.
func (h *Server) Add(repo string, files map[string][]byte) *Repo {
	sum := sha1.Sum([]byte(repo + strconv.Itoa(len(h.repos))))
	r := &Repo{SHA: hex.EncodeToString(sum[:]), Files: files}
	r.Refs = map[string]string{"main": r.SHA}
	h.repos[repo] = r
	return r
}

func (h *Server) fail(w http.ResponseWriter, status int, code string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", code)
	http.Error(w, code, status)
}

// repoFor splits "/org/name/rest…" and checks access.
func (h *Server) repoFor(w http.ResponseWriter, r *http.Request, p string) (*Repo, string, string, bool) {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	if len(parts) < 3 {
		h.fail(w, 404, "RepoNotFound")
		return nil, "", "", false
	}
	name := parts[0] + "/" + parts[1]
	repo := h.repos[name]
	if repo == nil {
		h.fail(w, 401, "RepoNotFound") // the Hub answers 401 for unknown or private repos
		return nil, "", "", false
	}
	if h.Gated[name] && r.Header.Get("Authorization") != "Bearer "+h.Token {
		if r.Header.Get("Authorization") == "" {
			h.fail(w, 401, "GatedRepo")
		} else {
			h.fail(w, 403, "GatedRepo")
		}
		return nil, "", "", false
	}
	return repo, name, parts[2], true
}

func (h *Server) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/api/models"); ok {
		h.mu.Lock()
		limited := h.Limit > 0
		if limited {
			h.Limit--
		}
		h.mu.Unlock()
		if limited {
			w.Header().Set("Retry-After", "0")
			h.fail(w, 429, "RateLimited")
			return
		}
		repo, _, tail, ok := h.repoFor(w, r, rest)
		if !ok {
			return
		}
		rev, ok := strings.CutPrefix(tail, "revision/")
		if !ok {
			h.fail(w, 404, "EntryNotFound")
			return
		}
		sha, ok := repo.Refs[rev]
		if !ok && rev != repo.SHA {
			h.fail(w, 404, "RevisionNotFound")
			return
		}
		if !ok {
			sha = rev
		}
		type lfs struct {
			SHA256 string `json:"sha256"`
			Size   int64  `json:"size"`
		}
		type sib struct {
			Name   string `json:"rfilename"`
			Size   int64  `json:"size"`
			BlobID string `json:"blobId"`
			LFS    *lfs   `json:"lfs,omitempty"`
		}
		out := struct {
			ID       string `json:"id"`
			SHA      string `json:"sha"`
			Siblings []sib  `json:"siblings"`
		}{ID: "x", SHA: sha}
		h.mu.Lock()
		for name, b := range repo.Files {
			size := int64(len(b))
			if n, ok := h.Declare[name]; ok {
				size = n
			}
			s := sib{Name: name, Size: size, BlobID: GitSHA1(b)}
			if IsLFS(name) {
				s.LFS = &lfs{SHA256: SHA256(b), Size: size}
			}
			out.Siblings = append(out.Siblings, s)
			if h.Duplicate {
				out.Siblings = append(out.Siblings, s)
			}
		}
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
		return
	}
	repo, name, tail, ok := h.repoFor(w, r, r.URL.Path)
	if !ok {
		return
	}
	rest, ok := strings.CutPrefix(tail, "resolve/")
	if !ok {
		h.fail(w, 404, "EntryNotFound")
		return
	}
	rev, file, _ := strings.Cut(rest, "/")
	sha, ok := repo.Refs[rev]
	if !ok && rev == repo.SHA {
		sha, ok = rev, true
	}
	if !ok {
		h.fail(w, 404, "RevisionNotFound")
		return
	}
	b, ok := repo.Files[file]
	if !ok {
		h.fail(w, 404, "EntryNotFound")
		return
	}
	w.Header().Set("X-Repo-Commit", sha)
	if IsLFS(file) {
		w.Header().Set("X-Linked-Etag", `"`+SHA256(b)+`"`)
		w.Header().Set("X-Linked-Size", strconv.FormatInt(h.headSize(file, b), 10))
		w.Header().Set("ETag", `W/"`+GitSHA1([]byte(file))+`"`)
		http.Redirect(w, r, h.cdn.URL+"/"+name+"/"+file, http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+GitSHA1(b)+`"`)
	h.send(w, r, file, b)
}

func (h *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		h.t.Errorf("the token was sent to the CDN host")
	}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3)
	repo := h.repos[parts[0]+"/"+parts[1]]
	b, ok := repo.Files[parts[2]]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.send(w, r, parts[2], b)
}

// headSize is the size a HEAD of file declares.
func (h *Server) headSize(file string, b []byte) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n, ok := h.HeadSize[file]; ok {
		return n
	}
	if n, ok := h.Declare[file]; ok {
		return n
	}
	return int64(len(b))
}

// send writes b honouring a Range header, breaking or corrupting the transfer when asked.
func (h *Server) send(w http.ResponseWriter, r *http.Request, file string, b []byte) {
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Length", strconv.FormatInt(h.headSize(file, b), 10))
		return
	}
	h.mu.Lock()
	h.gets[file]++
	rng := r.Header.Get("Range")
	if rng != "" {
		h.ranges = append(h.ranges, file+" "+rng)
	}
	hook := h.Body[file]
	if n, ok := h.CutAlways[file]; ok {
		h.Cut[file] = n
	}
	h.mu.Unlock()
	if hook != nil {
		hook(w, r, b)
		return
	}
	h.mu.Lock()
	cut, hasCut := h.Cut[file]
	delete(h.Cut, file)
	flip := h.Flip[file]
	delete(h.Flip, file)
	h.mu.Unlock()
	start := 0
	if v, ok := strings.CutPrefix(rng, "bytes="); ok {
		start, _ = strconv.Atoi(strings.TrimSuffix(v, "-"))
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(b)-1, len(b)))
		w.Header().Set("Content-Length", strconv.Itoa(len(b)-start))
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	}
	body := b[start:]
	if flip {
		body = append([]byte(nil), body...)
		body[len(body)/2] ^= 0x40
	}
	if hasCut && cut < len(body) {
		w.Write(body[:cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-body
	}
	w.Write(body)
}
