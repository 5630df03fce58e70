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
	"strconv"
	"strings"
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
// template files, the safetensors weights with their index, sentence-transformers' files
// (modules.json and its module folders' configs and weights, prompts, the maximum length)
// and the model card (which tells a Qwen3-Reranker).
func wanted(name string) bool {
	if dir, file, ok := strings.Cut(name, "/"); ok {
		// Other subfolders hold other models' parts (e.g. onnx/, original/).
		return sentenceModule(dir) && !strings.ContainsAny(file, "/\\") && (file == "config.json" || strings.HasSuffix(file, ".safetensors"))
	}
	switch name {
	case "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
		"special_tokens_map.json", "chat_template.json", "chat_template.jinja", safetensorsIndex,
		"modules.json", "config_sentence_transformers.json", "sentence_bert_config.json", "README.md":
		return true
	}
	return strings.HasSuffix(name, ".safetensors")
}

// sentenceModule reports whether dir is named as sentence-transformers names its module
// folders: an index, "_", a name ("1_Pooling", "2_Dense").
func sentenceModule(dir string) bool {
	i := 0
	for i < len(dir) && dir[i] >= '0' && dir[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(dir) && dir[i] == '_' && !strings.ContainsAny(dir, "/\\.")
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
