package hub

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// settings are a Client's options with their defaults applied.
type settings struct {
	connect, header, read, metadata time.Duration
	tries                           int // per request and per file transfer
	retryWait, maxRetryWait         time.Duration
	parallel                        int
}

// Defaults of the Client's options. The timeouts are huggingface_hub's
// (HF_HUB_DOWNLOAD_TIMEOUT and HF_HUB_ETAG_TIMEOUT are 10 s); so is the number of tries
// of a cut transfer (5).
const (
	DefaultConnectTimeout  = 10 * time.Second
	DefaultHeaderTimeout   = 10 * time.Second
	DefaultReadTimeout     = 10 * time.Second
	DefaultMetadataTimeout = 60 * time.Second
	DefaultMaxRetries      = 4
	DefaultRetryWait       = time.Second
	DefaultMaxRetryWait    = time.Minute
	DefaultParallel        = 4
)

func (c *Client) settings() (settings, error) {
	pick := func(field string, v, def time.Duration) (time.Duration, error) {
		if v < 0 {
			return 0, fmt.Errorf("hub: Client.%s is negative (%v); 0 means the default, %v", field, v, def)
		}
		if v == 0 {
			return def, nil
		}
		return v, nil
	}
	var s settings
	var err error
	for _, f := range []struct {
		name   string
		v, def time.Duration
		dst    *time.Duration
	}{
		{"ConnectTimeout", c.ConnectTimeout, DefaultConnectTimeout, &s.connect},
		{"HeaderTimeout", c.HeaderTimeout, DefaultHeaderTimeout, &s.header},
		{"ReadTimeout", c.ReadTimeout, DefaultReadTimeout, &s.read},
		{"MetadataTimeout", c.MetadataTimeout, DefaultMetadataTimeout, &s.metadata},
		{"RetryWait", c.RetryWait, DefaultRetryWait, &s.retryWait},
		{"MaxRetryWait", c.MaxRetryWait, DefaultMaxRetryWait, &s.maxRetryWait},
	} {
		if *f.dst, err = pick(f.name, f.v, f.def); err != nil {
			return s, err
		}
	}
	switch {
	case c.MaxRetries < 0:
		return s, fmt.Errorf("hub: Client.MaxRetries is negative (%d); 0 means the default, %d", c.MaxRetries, DefaultMaxRetries)
	case c.Parallel < 0:
		return s, fmt.Errorf("hub: Client.Parallel is negative (%d); 0 means the default, %d", c.Parallel, DefaultParallel)
	}
	s.tries, s.parallel = DefaultMaxRetries+1, DefaultParallel
	if c.MaxRetries > 0 {
		s.tries = c.MaxRetries + 1
	}
	if c.Parallel > 0 {
		s.parallel = c.Parallel
	}
	return s, nil
}

// newHTTP is the HTTP client of one Pull and what releases its idle connections: c.HTTP
// if set (the timeouts then still apply, as timers around each try), else a transport
// with the connect and header timeouts that does not follow redirects to other hosts.
func (c *Client) newHTTP(s settings) (*http.Client, func()) {
	if c.HTTP != nil {
		return c.HTTP, func() {}
	}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: s.connect, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   s.connect,
		ResponseHeaderTimeout: s.header,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   s.parallel,
		IdleConnTimeout:       90 * time.Second,
	}
	return &http.Client{Transport: t, CheckRedirect: sameHostRedirects}, t.CloseIdleConnections
}

var errTooManyRedirects = errors.New("too many redirects")

// sameHostRedirects follows redirects within a host (renamed repositories) and stops at a
// redirect to another host (the CDN of LFS files), whose Location the caller reads.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errTooManyRedirects
	}
	if req.URL.Host != via[0].URL.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// send makes one try of a request. Until the response's headers arrive the try may take
// the connect and header timeouts; after that each read of the body must bring bytes
// within the read timeout; total, if positive, bounds the whole try, body included. The
// returned body's Close releases the try; an expired timer shows as a *TimeoutError from
// send or from the body's Read.
func (p *pull) send(ctx context.Context, method, u string, hdr http.Header, total time.Duration) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	release := func() { cancel(nil) }
	if total > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, total, &TimeoutError{URL: u, Phase: "request", After: total})
		release = func() { stop(); cancel(nil) }
	}
	headers := time.AfterFunc(p.s.connect+p.s.header, func() {
		cancel(&TimeoutError{URL: u, Phase: "response headers", After: p.s.header})
	})
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		headers.Stop()
		release()
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "hfstatic")
	if p.c.Token != "" && sameHost(u, p.c.endpoint()) {
		req.Header.Set("Authorization", "Bearer "+p.c.Token)
	}
	resp, err := p.http.Do(req)
	headers.Stop()
	if err != nil {
		err = p.netError(ctx, u, err)
		release()
		return nil, err
	}
	b := &timedBody{body: resp.Body, ctx: ctx, idle: p.s.read, release: release}
	b.timer = time.AfterFunc(p.s.read, func() {
		cancel(&TimeoutError{URL: u, Phase: "body", After: p.s.read})
	})
	resp.Body = b
	return resp, nil
}

// timedBody ends its try when no bytes arrive for idle.
type timedBody struct {
	body    io.ReadCloser
	ctx     context.Context
	timer   *time.Timer
	idle    time.Duration
	release func()
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	if err != nil && err != io.EOF {
		if te := timeoutCause(b.ctx); te != nil {
			err = te
		}
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.timer.Stop()
	err := b.body.Close()
	b.release()
	return err
}

func timeoutCause(ctx context.Context) *TimeoutError {
	var te *TimeoutError
	if errors.As(context.Cause(ctx), &te) {
		return te
	}
	return nil
}

// netError names the timeout behind a failed request, if one expired.
func (p *pull) netError(ctx context.Context, u string, err error) error {
	if te := timeoutCause(ctx); te != nil {
		return te
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			return &TimeoutError{URL: u, Phase: "connect", After: p.s.connect}
		}
		return &TimeoutError{URL: u, Phase: "response headers", After: p.s.header}
	}
	return err
}

// transient reports whether a request's error may pass on another try: timeouts, refused
// or reset connections, bodies cut short, 429 and 5xx answers. A host that does not
// resolve, a certificate that does not verify, a redirect loop, any other answer and any
// error of the cache or the checks are final.
func transient(err error) bool {
	var he *HTTPError
	var de *net.DNSError
	var ce *tls.CertificateVerificationError
	switch {
	case errors.As(err, &he):
		return he.Status == http.StatusTooManyRequests || he.Status >= 500
	case errors.Is(err, ErrTimeout):
		return true
	case errors.As(err, &de):
		return de.IsTimeout || de.IsTemporary
	case errors.As(err, &ce), errors.Is(err, errTooManyRedirects), errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, errShort):
		return true
	}
	var ue *url.Error
	var oe *net.OpError
	return errors.As(err, &ue) || errors.As(err, &oe)
}

// errShort: the server ended a body before the file's size.
var errShort = errors.New("the server ended the transfer early")

// pause waits before try+1: RetryWait doubled per try, or what a Retry-After header (in
// seconds) asks, at most MaxRetryWait.
func (p *pull) pause(ctx context.Context, try int, retryAfter string) error {
	wait := p.s.retryWait << min(try-1, 16)
	if s, err := strconv.Atoi(retryAfter); err == nil && s >= 0 {
		wait = time.Duration(s) * time.Second
	}
	wait = min(wait, p.s.maxRetryWait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do sends a metadata request (the revision's file list, a file's HEAD) with up to
// tries tries, each bounded by the metadata timeout, and turns error statuses into
// *HTTPError. 2xx and 3xx responses are returned with their bodies open.
func (p *pull) do(ctx context.Context, method, u string, hdr http.Header) (*http.Response, error) {
	for try := 1; ; try++ {
		resp, err := p.send(ctx, method, u, hdr, p.s.metadata)
		retryAfter := ""
		if err == nil {
			if resp.StatusCode < 400 {
				return resp, nil
			}
			retryAfter = resp.Header.Get("Retry-After")
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			err = p.statusError(u, resp)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !transient(err) || try >= p.s.tries {
			if _, ok := err.(*HTTPError); ok {
				return nil, err
			}
			return nil, fmt.Errorf("%s: cannot reach the Hub at %s (%d tries): %w (set HF_HUB_OFFLINE=1 to use only the cache, HF_ENDPOINT for a mirror)", p.ref, p.c.endpoint(), try, err)
		}
		if err := p.pause(ctx, try, retryAfter); err != nil {
			return nil, err
		}
	}
}

func (p *pull) statusError(u string, resp *http.Response) error {
	c, ref := p.c, p.ref
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

// httpURL reports whether u is an absolute http or https URL.
func httpURL(u string) bool {
	v, err := url.Parse(u)
	return err == nil && (v.Scheme == "http" || v.Scheme == "https") && v.Host != ""
}
