package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DefaultEndpoint is the Hub's address when Client.Endpoint is empty.
const DefaultEndpoint = "https://huggingface.co"

// Client downloads model repositories from the Hub into a Cache.
//
// Every request and every file transfer gets MaxRetries+1 tries (5 by default, as
// huggingface_hub): a refused or reset connection, a timeout, a 429 or 5xx answer or a
// body cut short is tried again after RetryWait (doubled per try) or what Retry-After
// asks, and a cut transfer continues with a Range request from the bytes it has. A file
// is never written past its declared size, a pull that would not fit on the cache's disk
// is refused before it starts, and the cache is written only through real folders and
// regular files inside it.
type Client struct {
	Endpoint string       // the Hub or a mirror; DefaultEndpoint when empty
	Token    string       // sent as a bearer token to Endpoint only (gated and private models)
	HTTP     *http.Client // nil: a transport with the timeouts below that follows redirects only within a host
	Cache    Cache
	// Offline forbids network access: only what the cache holds resolves.
	Offline bool
	// Parallel is the number of files downloaded at once (0: DefaultParallel).
	Parallel int
	// Progress, if set, is called as files start, advance and finish; calls for different
	// files may come from different goroutines, never two at once.
	Progress func(Progress)

	// Timeouts of each try; 0 means the Default… constant. ConnectTimeout bounds the TCP
	// and TLS handshakes, HeaderTimeout the wait for a response's headers once the request
	// is sent, ReadTimeout the wait for the next bytes of a body (a stalled transfer), and
	// MetadataTimeout a whole metadata request (the file list, a file's HEAD).
	ConnectTimeout, HeaderTimeout, ReadTimeout, MetadataTimeout time.Duration
	// MaxRetries is the number of tries after the first (0: DefaultMaxRetries, so 5 tries).
	MaxRetries int
	// RetryWait is the wait before the second try, doubled for each later one
	// (0: DefaultRetryWait); MaxRetryWait caps it and the wait a Retry-After header asks
	// for (0: DefaultMaxRetryWait).
	RetryWait, MaxRetryWait time.Duration
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

// maxFiles bounds the files a revision may ask export to download.
const maxFiles = 10_000

// Pull asks the Hub for ref's current commit and downloads what the cache lacks of it.
// Files are verified before they enter the cache; a transfer cut short continues by itself
// (see Client), and what a failed pull leaves resumes the next time.
func (c *Client) Pull(ctx context.Context, ref Ref) (string, error) {
	if c.Offline {
		dir, err := c.Cache.Snapshot(ref)
		if err != nil {
			return "", fmt.Errorf("%s: %w (unset HF_HUB_OFFLINE to download it)", ref, ErrOffline)
		}
		return dir, nil
	}
	s, err := c.settings()
	if err != nil {
		return "", err
	}
	if !httpURL(c.endpoint()) {
		return "", fmt.Errorf("hub: endpoint %q is not an http or https URL", c.endpoint())
	}
	client, closeIdle := c.newHTTP(s)
	defer closeIdle()
	p := &pull{c: c, s: s, ref: ref, http: client, repo: filepath.Base(c.Cache.RepoDir(ref.Repo))}
	info, err := p.revisionInfo(ctx)
	if err != nil {
		return "", err
	}
	p.commit = info.SHA
	files, err := exportFiles(ref, info.Siblings)
	if err != nil {
		return "", err
	}
	if p.cache, err = openCacheRoot(c.Cache.Dir); err != nil {
		return "", err
	}
	defer p.cache.Close()
	if err := p.checkSpace(files); err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	if err := p.downloadAll(ctx, files); err != nil {
		return "", err
	}
	if !IsCommit(ref.Revision) {
		if err := p.cache.writeAtomic(filepath.Join(p.repo, "refs", filepath.FromSlash(ref.Revision)), []byte(info.SHA)); err != nil {
			return "", fmt.Errorf("%s: %w", ref, err)
		}
	}
	snap := filepath.Join(c.Cache.RepoDir(ref.Repo), "snapshots", info.SHA)
	if missing := missingFiles(snap); len(missing) > 0 {
		return "", fmt.Errorf("%s: after download the snapshot lacks %s", ref, strings.Join(missing, ", "))
	}
	return snap, nil
}

// exportFiles picks the files export needs from a revision's list, once each: a file
// listed twice the same way counts once, twice with different sizes or hashes is an error.
func exportFiles(ref Ref, siblings []sibling) ([]sibling, error) {
	var files []sibling
	var weights []string
	seen := map[string]sibling{}
	for _, s := range siblings {
		if !safeRelPath(s.Name) {
			continue
		}
		if prev, dup := seen[s.Name]; dup {
			if !prev.same(s) && wanted(s.Name) {
				return nil, fmt.Errorf("%s: %w: %s is listed twice with different sizes or hashes", ref, ErrBadMetadata, s.Name)
			}
			continue
		}
		seen[s.Name] = s
		if wanted(s.Name) {
			if len(files) == maxFiles {
				return nil, fmt.Errorf("%s: %w: the revision lists more than %d files export would need", ref, ErrBadMetadata, maxFiles)
			}
			files = append(files, s)
		}
		if isWeights(s.Name) {
			weights = append(weights, s.Name)
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
		return nil, fmt.Errorf("%s: %w: hfstatic exports Hugging Face safetensors checkpoints; the repository has %s", ref, ErrNoSafetensors, found)
	}
	if !hasName(files, "config.json") {
		return nil, fmt.Errorf("%s: %w: the repository has no config.json", ref, ErrNotFound)
	}
	for _, f := range files {
		if n, ok := f.size(); ok && n < 0 {
			return nil, fmt.Errorf("%s: %w: %s has size %d", ref, ErrBadMetadata, f.Name, n)
		}
	}
	return files, nil
}

// isWeights reports whether a file holds weights in a format the error for a repository
// without safetensors names.
func isWeights(name string) bool {
	for _, ext := range []string{".safetensors", ".gguf", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
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
	Size   *int64 `json:"size"`
	BlobID string `json:"blobId"`
	LFS    *struct {
		SHA256 string `json:"sha256"`
		Size   *int64 `json:"size"`
	} `json:"lfs"`
}

// size is the file's size as the metadata declares it.
func (s sibling) size() (int64, bool) {
	if s.LFS != nil && s.LFS.Size != nil {
		return *s.LFS.Size, true
	}
	if s.Size != nil {
		return *s.Size, true
	}
	return 0, false
}

// etag is the name the metadata implies for the file's blob: the LFS SHA-256, else the
// git blob hash; "" if neither is given.
func (s sibling) etag() string {
	if s.LFS != nil && s.LFS.SHA256 != "" {
		return strings.ToLower(s.LFS.SHA256)
	}
	return s.BlobID
}

func (s sibling) same(o sibling) bool {
	n1, ok1 := s.size()
	n2, ok2 := o.size()
	return n1 == n2 && ok1 == ok2 && s.etag() == o.etag()
}

// revisionInfo is what Pull keeps of the revision metadata.
type revisionInfo struct {
	SHA      string
	Siblings []sibling // files export needs, and weights of other formats
	kept     int       // how many such siblings were listed
}

func (c *Client) endpoint() string {
	if c.Endpoint == "" {
		return DefaultEndpoint
	}
	return strings.TrimRight(c.Endpoint, "/")
}

// maxMetadata bounds the revision metadata's size.
const maxMetadata = 64 << 20

var errMetadataTooLarge = fmt.Errorf("the answer is larger than %d MiB", maxMetadata>>20)

// capReader fails once more than n bytes are read.
type capReader struct {
	r io.Reader
	n int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errMetadataTooLarge
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

// revisionInfo reads the revision's commit and file list; a body cut short or stalled is
// tried again like a failed request.
func (p *pull) revisionInfo(ctx context.Context) (*revisionInfo, error) {
	ref := p.ref
	u := p.c.endpoint() + "/api/models/" + ref.Repo + "/revision/" + url.PathEscape(ref.Revision) + "?blobs=true"
	for try := 1; ; try++ {
		resp, err := p.do(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		info, err := decodeRevision(&capReader{r: resp.Body, n: maxMetadata})
		resp.Body.Close()
		if err != nil {
			if ctx.Err() == nil && transient(err) && try < p.s.tries {
				if err := p.pause(ctx, try, ""); err != nil {
					return nil, err
				}
				continue
			}
			return nil, fmt.Errorf("%s: reading the Hub's revision metadata (%d tries): %w", ref, try, err)
		}
		if !IsCommit(info.SHA) {
			return nil, fmt.Errorf("%s: the Hub's revision metadata has no commit hash (sha %q)", ref, info.SHA)
		}
		if info.kept > maxKept {
			return nil, fmt.Errorf("%s: %w: the revision lists more than %d weight and configuration files", ref, ErrBadMetadata, maxKept)
		}
		return info, nil
	}
}

// maxKept bounds the siblings kept from a revision's list: those export needs (at most
// maxFiles) and weight files of other formats (named in an error).
const maxKept = 2*maxFiles + 1000

// decodeRevision reads {"sha": …, "siblings": [...]} one sibling at a time, keeping only
// files export needs or a weights error would name, so a list of millions of entries
// costs no more memory than one.
func decodeRevision(r io.Reader) (*revisionInfo, error) {
	dec := json.NewDecoder(r)
	info := &revisionInfo{}
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch tok {
		case "sha":
			if err := dec.Decode(&info.SHA); err != nil {
				return nil, err
			}
		case "siblings":
			if err := expectDelim(dec, '['); err != nil {
				return nil, err
			}
			for dec.More() {
				var s sibling
				if err := dec.Decode(&s); err != nil {
					return nil, err
				}
				if wanted(s.Name) || isWeights(s.Name) {
					if info.kept++; info.kept <= maxKept {
						info.Siblings = append(info.Siblings, s)
					}
				}
			}
			if err := expectDelim(dec, ']'); err != nil {
				return nil, err
			}
		default:
			if err := skipValue(dec); err != nil {
				return nil, err
			}
		}
	}
	return info, expectDelim(dec, '}')
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("want %q, found %v", d, tok)
	}
	return nil
}

// skipValue reads past one JSON value token by token (no buffer of the whole value).
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if depth++; depth > 1000 {
				return errors.New("values nested more than 1000 deep")
			}
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
