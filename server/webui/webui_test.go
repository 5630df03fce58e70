package webui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/server/webui"
)

// The page and its files are served with a policy that keeps the browser to this origin;
// other paths are not found.
func TestHandlerServesThePageAndItsFiles(t *testing.T) {
	ts := httptest.NewServer(webui.Handler())
	defer ts.Close()
	for _, c := range []struct{ path, typ string }{
		{"/", "text/html; charset=utf-8"}, {"/ui/app.js", "text/javascript; charset=utf-8"}, {"/ui/style.css", "text/css; charset=utf-8"},
	} {
		resp, err := http.Get(ts.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.typ || len(body) == 0 ||
			!strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: %d, %q, %d bytes, CSP %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body), csp)
		}
		// Nothing in the page names another host: no CDN, no web font.
		if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`).Find(body); m != nil {
			t.Errorf("%s refers to %s", c.path, m)
		}
	}
	for _, path := range []string{"/ui/", "/ui/index.html", "/ui/../webui.go", "/ui/missing.js", "/other"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}
