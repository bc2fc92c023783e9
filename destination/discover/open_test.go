package discover

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/faultserver"
	"github.com/resourcesync-go/resourcesync/rs"
)

func resourceList(n int) string {
	items := make([]item, n)
	for i := range items {
		items[i] = item{loc: fmt.Sprintf("http://example.org/r/%d", i)}
	}
	return xmlDoc("urlset", "resourcelist", "http://example.org/cl.xml", items...)
}

func countEntries(t *testing.T, d *Doc) int {
	t.Helper()
	n := 0
	for _, err := range d.All() {
		if err != nil {
			t.Fatalf("entry %d: %v", n, err)
		}
		n++
	}
	return n
}

// TestOpenRetries serves every fault kind through faultserver (twice per
// path, then the real response) and expects the document intact.
func TestOpenRetries(t *testing.T) {
	body := resourceList(200)
	for _, f := range []faultserver.Fault{faultserver.Status500, faultserver.Status429, faultserver.Truncated, faultserver.Reset} {
		t.Run(f.String(), func(t *testing.T) {
			var hits atomic.Int32
			inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.Header().Set("Content-Type", "application/xml")
				io.WriteString(w, body)
			})
			fs := faultserver.New(inner, 1, 7)
			fs.Faults = []faultserver.Fault{f}
			srv := httptest.NewServer(fs)
			defer srv.Close()
			g := getter(t)
			var retries []error
			g.OnRetry = func(_ string, _ int, err error) { retries = append(retries, err) }
			d, err := g.Open(context.Background(), srv.URL+"/rl.xml")
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if d.Attempts != 3 || len(retries) != 2 || fs.Injected() != 2 {
				t.Errorf("attempts %d, retries %v, injected %d; want 3, 2, 2", d.Attempts, retries, fs.Injected())
			}
			if d.Capability() != rs.CapResourceList || d.Head.Link(rs.RelUp) != "http://example.org/cl.xml" {
				t.Errorf("head %+v", d.Head)
			}
			if n := countEntries(t, d); n != 200 {
				t.Errorf("%d entries, want 200", n)
			}
		})
	}
}

// TestOpenNotRetried: client errors are final after one request.
func TestOpenNotRetried(t *testing.T) {
	for _, code := range []int{404, 403, 410, 400} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				http.Error(w, "no", code)
			}))
			defer srv.Close()
			_, err := getter(t).Open(context.Background(), srv.URL+"/x.xml")
			var se *StatusError
			if !errors.As(err, &se) || se.Code != code || se.URL != srv.URL+"/x.xml" || !errors.Is(err, ErrStatus) {
				t.Fatalf("err = %v, want a StatusError %d", err, code)
			}
			if hits.Load() != 1 {
				t.Errorf("%d requests, want 1", hits.Load())
			}
		})
	}
}

// TestOpenGivesUp: a server that always fails is tried Retries+1 times and
// the last status is reported.
func TestOpenGivesUp(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "0")
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	g := getter(t)
	g.Retries = 3
	_, err := g.Open(context.Background(), srv.URL+"/x.xml")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 503 {
		t.Fatalf("err = %v", err)
	}
	if hits.Load() != 4 {
		t.Errorf("%d requests, want 4", hits.Load())
	}
}

// TestOpenRetryAfter: the wait a 429 asks for is honoured (up to
// MaxRetryAfter) instead of the backoff.
func TestOpenRetryAfter(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, resourceList(1))
	}))
	defer srv.Close()
	g := getter(t)
	g.MaxRetryAfter = 150 * time.Millisecond
	start := time.Now()
	d, err := g.Open(context.Background(), srv.URL+"/x.xml")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("retried after %v, want at least the capped Retry-After (150ms)", el)
	}
}

// TestOpenCloseDelimited: a body without Content-Length or chunking that
// is cut by the connection's close is detected and retried.
func TestOpenCloseDelimited(t *testing.T) {
	body := resourceList(50)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		conn, bw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		b := body
		if n == 1 {
			b = body[:len(body)/2]
		}
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nConnection: close\r\n\r\n" + b)
		bw.Flush()
	}))
	defer srv.Close()
	d, err := getter(t).Open(context.Background(), srv.URL+"/x.xml")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Attempts != 2 {
		t.Errorf("attempts %d, want 2", d.Attempts)
	}
	if n := countEntries(t, d); n != 50 {
		t.Errorf("%d entries", n)
	}
}

func TestOpenSizeCap(t *testing.T) {
	body := resourceList(100)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprint("chunked=", chunked), func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				if !chunked {
					w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				}
				io.WriteString(w, body[:100])
				w.(http.Flusher).Flush()
				io.WriteString(w, body[100:])
			}))
			defer srv.Close()
			g := getter(t)
			g.MaxBytes = 1000
			_, err := g.Open(context.Background(), srv.URL+"/x.xml")
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if hits.Load() != 1 {
				t.Errorf("%d requests, want 1 (not retried)", hits.Load())
			}
			g.MaxBytes = int64(len(body))
			d, err := g.Open(context.Background(), srv.URL+"/x.xml")
			if err != nil {
				t.Fatalf("at exactly the cap: %v", err)
			}
			d.Close()
		})
	}
}

func TestOpenNotResourceSync(t *testing.T) {
	s := newSite(t, map[string]page{
		"/page.html": {body: "<!DOCTYPE html><html><head><title>x</title></head></html>", ctype: "text/html"},
		"/plain.xml": {body: `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://e.org/</loc></url></urlset>`},
		"/bad.xml":   {body: "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n<rs:md capability=\"x\"/"},
	})
	for _, tc := range []struct {
		path   string
		syntax bool
		target error
	}{
		{"/page.html", true, nil},
		{"/plain.xml", false, ErrNoCapability},
		{"/bad.xml", true, nil},
	} {
		t.Run(tc.path, func(t *testing.T) {
			_, err := getter(t).Open(context.Background(), s.URL+tc.path)
			var de *DocumentError
			if !errors.Is(err, ErrNotResourceSync) || !errors.As(err, &de) || de.URL != s.URL+tc.path {
				t.Fatalf("err = %v", err)
			}
			var se *rs.SyntaxError
			if tc.syntax && (!errors.As(err, &se) || se.Pos.Line == 0 || !strings.Contains(err.Error(), "line ")) {
				t.Errorf("err = %v, want a syntax error with line:col", err)
			}
			if tc.target != nil && !errors.Is(err, tc.target) {
				t.Errorf("err = %v, want %v", err, tc.target)
			}
			if s.hitCount(tc.path) != 1 {
				t.Errorf("%d requests, want 1", s.hitCount(tc.path))
			}
		})
	}
}

// TestOpenDoc: final URL after redirects, Link headers resolved against
// it, gzip bodies, Close idempotent.
func TestOpenDoc(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, resourceList(3))
	zw.Close()
	s := newSite(t, map[string]page{
		"/old.xml": {status: http.StatusMovedPermanently, header: map[string]string{"Location": "/docs/new.xml"}},
		"/docs/new.xml": {body: resourceList(3), header: map[string]string{
			"Link": `<topic.xml>; rel="self", <BASE/hub>; rel="hub"; title="a, b", <../cl.xml>; rel="resourcesync up"`}},
		"/rl.xml.gz": {body: gz.String(), ctype: "application/gzip"},
	})
	g := getter(t)
	d, err := g.Open(context.Background(), s.URL+"/old.xml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Requested != s.URL+"/old.xml" || d.URL != s.URL+"/docs/new.xml" {
		t.Errorf("Requested %s URL %s", d.Requested, d.URL)
	}
	for rel, want := range map[string]string{"self": s.URL + "/docs/topic.xml", "hub": s.URL + "/hub", "resourcesync": s.URL + "/cl.xml", "UP": s.URL + "/cl.xml", "none": ""} {
		if got := d.HeaderLink(rel); got != want {
			t.Errorf("HeaderLink(%s) = %q, want %q", rel, got, want)
		}
	}
	if len(d.Links) != 3 || d.Links[1].Params["title"] != "a, b" {
		t.Errorf("links %+v", d.Links)
	}
	if n := countEntries(t, d); n != 3 {
		t.Errorf("%d entries", n)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	d, err = Open(context.Background(), g.Client, s.URL+"/rl.xml.gz", rs.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n := countEntries(t, d); n != 3 {
		t.Errorf("gzip: %d entries", n)
	}
}

func TestOpenContextCancelled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", 500)
	}))
	defer srv.Close()
	g := getter(t)
	g.BaseDelay, g.MaxDelay = time.Hour, time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := g.Open(ctx, srv.URL)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

// TestOpenDecoderLimits: the caller's limits reach the decoder.
func TestOpenDecoderLimits(t *testing.T) {
	s := newSite(t, map[string]page{"/rl.xml": {body: resourceList(10)}})
	c := getter(t).Client
	_, err := Open(context.Background(), c, s.URL+"/rl.xml", rs.Limits{MaxDocumentBytes: 100})
	if !errors.Is(err, rs.ErrDocumentTooLarge) || !errors.Is(err, ErrNotResourceSync) {
		t.Fatalf("err = %v", err)
	}
}

// TestCloseDelimitedPage: a close-delimited page that merely mentions a
// urlset is not taken for a cut document.
func TestCloseDelimitedPage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, bw, _ := w.(http.Hijacker).Hijack()
		defer conn.Close()
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n" +
			"<html><p>A <urlset> lists resources.</p>")
		bw.Flush()
	}))
	defer srv.Close()
	g := getter(t)
	b, err := g.get(context.Background(), srv.URL, g.maxBytes(), false)
	if err != nil {
		t.Fatal(err)
	}
	b.close()
	if b.attempts != 1 {
		t.Errorf("%d attempts", b.attempts)
	}
}
