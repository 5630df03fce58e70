// Package webui is the chat page hfstatic serve shows at /: one HTML page, a script and a
// style sheet, embedded in the binary. The page talks only to the server that served it
// (GET /v1/models, POST /v1/chat/completions or, for a program without a chat template,
// /v1/completions, streamed) and keeps conversations in the browser's localStorage.
// Model output is rendered as Markdown by building DOM nodes, never as HTML.
//
// It owns the page and the headers it is sent with (a Content-Security-Policy that allows
// nothing from other hosts and no inline script); it does not know the API, which package
// server answers.
package webui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var files embed.FS

// contentSecurityPolicy keeps the page to its own origin: no request to any other host, no
// inline script or style, no plugins, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the page: GET / is index.html, GET /ui/NAME the page's other files.
func Handler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded directory name is a compile-time constant
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := "index.html"
		if r.URL.Path != "/" {
			rest, ok := strings.CutPrefix(r.URL.Path, "/ui/")
			if !ok || rest == "" || rest == "index.html" || path.Clean(rest) != rest {
				http.NotFound(w, r)
				return
			}
			name = rest
		}
		data, err := fs.ReadFile(static, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache") // a new binary brings a new page
		h.Set("Content-Type", contentType(name))
		if r.Method == http.MethodHead {
			return
		}
		w.Write(data)
	})
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	}
	return "application/octet-stream"
}
