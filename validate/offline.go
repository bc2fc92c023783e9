package validate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
)

// ErrOffline is wrapped by the fetch error of a URL that WalkDir cannot
// read from the directory: one outside the base URL.
var ErrOffline = errors.New("outside the base URL: not read offline")

// WalkDir validates a Source tree written to the directory dir (the output
// of `resourcesync publish`, before it is uploaded) as Walk would once dir
// is served at base: the walk starts at base and every URL under base is
// read from the file at its path relative to base, with no network. A
// document linked outside base is reported with rule RS-FETCH (wrapping
// ErrOffline). A directory, a URL with a query, or a path that would leave
// dir answers 404, as a static web server would.
func WalkDir(ctx context.Context, base, dir string, opts Options, report func(Problem)) (*WalkSummary, error) {
	bu, err := url.Parse(base)
	if err != nil || (bu.Scheme != "http" && bu.Scheme != "https") || bu.Host == "" || bu.RawQuery != "" || bu.Fragment != "" {
		return nil, fmt.Errorf("base URL %q: want an absolute http(s) URL with no query", base)
	}
	if !strings.HasSuffix(bu.Path, "/") {
		bu.Path += "/"
		bu.RawPath = ""
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	client := &http.Client{Transport: &dirTransport{base: bu, root: root}}
	return Walk(ctx, client, bu.String(), opts, report)
}

// dirTransport answers requests for URLs under base from the files of
// root; it never dials.
type dirTransport struct {
	base *url.URL
	root *os.Root
}

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Hostname()) + ":" + port
}

func (t *dirTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	u := req.URL
	if !strings.EqualFold(u.Scheme, t.base.Scheme) || hostPort(u) != hostPort(t.base) ||
		!strings.HasPrefix(u.EscapedPath()+"/", t.base.EscapedPath()) {
		return nil, fmt.Errorf("%s: %w %s", u, ErrOffline, t.base)
	}
	rel := strings.TrimPrefix(u.Path, t.base.Path)
	if u.Path+"/" == t.base.Path {
		rel = ""
	}
	status := func(code int) *http.Response {
		return &http.Response{StatusCode: code, Status: strconv.Itoa(code) + " " + http.StatusText(code),
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
			Body: io.NopCloser(strings.NewReader("")), Request: req}
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return status(http.StatusMethodNotAllowed), nil
	}
	if rel == "" || strings.HasSuffix(rel, "/") || u.RawQuery != "" || strings.ContainsRune(rel, 0) {
		return status(http.StatusNotFound), nil
	}
	// Only a regular file is opened: the open of a named pipe would block.
	if fi, err := t.root.Stat(rel); err != nil || !fi.Mode().IsRegular() {
		return status(http.StatusNotFound), nil
	}
	f, err := t.root.Open(rel) // os.Root: no path leaves dir, no link either
	if err != nil {
		return status(http.StatusNotFound), nil
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return status(http.StatusNotFound), nil
	}
	resp := status(http.StatusOK)
	resp.ContentLength = fi.Size()
	resp.Header.Set("Content-Type", contentType(rel))
	resp.Header.Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
	if req.Method == http.MethodHead {
		f.Close()
		return resp, nil
	}
	resp.Body = f
	return resp, nil
}

// contentType is what a static server would say of the file rel: by its
// extension, application/xml for the extension-less Source Description.
func contentType(rel string) string {
	ext := path.Ext(rel)
	if ext == "" || ext == ".xml" {
		return "application/xml"
	}
	if ct := mime.TypeByExtension(ext); ct != "" {
		return ct
	}
	return "application/octet-stream"
}
