package destination_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/bulk"
)

// bulkCounts counts the requests a baseline makes.
type bulkCounts struct{ gets, posts atomic.Int64 }

func (c *bulkCounts) wrap(mode string, dir string) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/"+bulk.Path:
				c.posts.Add(1)
				if mode != "" {
					hostileBulk(w, r, mode, dir)
					return
				}
			case !strings.HasPrefix(r.URL.Path, "/.") && strings.HasSuffix(r.URL.Path, ".bin"):
				c.gets.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}
}

// hostileBulk answers a bulk request as a broken or hostile Source would.
func hostileBulk(w http.ResponseWriter, r *http.Request, mode, dir string) {
	paths, err := bulk.ParseRequest(r.Body)
	if err != nil || len(paths) == 0 {
		http.Error(w, "bad", 400)
		return
	}
	w.Header().Set("Content-Type", bulk.MediaType)
	var out []byte
	for i, p := range paths {
		u, _ := url.PathUnescape(p)
		b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(u)))
		if len(b) == 0 {
			b = []byte("?")
		}
		switch {
		case mode == "not asked" && i == 1:
			out = bulk.AppendHeader(out, 200, len(b), "../../outside.bin")
			out = append(out, b...)
		case mode == "wrong digest":
			b = append([]byte(nil), b...)
			b[0] ^= 0xff
			out = append(bulk.AppendHeader(out, 200, len(b), p), b...)
		case mode == "truncated" && i == len(paths)/2:
			out = append(bulk.AppendHeader(out, 200, len(b), p), b[:len(b)/2]...)
			w.Write(out)
			return // the stream ends inside a member
		case mode == "huge" && i == 0:
			out = bulk.AppendHeader(out, 200, 1<<40, p)
			out = append(out, strings.Repeat("z", 1<<16)...)
		default:
			out = append(bulk.AppendHeader(out, 200, len(b), p), b...)
		}
	}
	w.Write(append(out, bulk.End...))
}

func bulkTree(t *testing.T, n int) string {
	dir := t.TempDir()
	for i := range n {
		writeFile(t, dir, fmt.Sprintf("d%d/f%03d.bin", i%3, i), []byte(strings.Repeat(fmt.Sprintf("%d,", i), 20+i%40)))
	}
	writeFile(t, dir, "big.bin", []byte(strings.Repeat("B", bulk.MaxMember+1)))
	writeFile(t, dir, "sp ace%.bin", []byte("escaped"))
	return dir
}

// TestBulkBaseline: from our Source, a baseline of small files fetches
// them in bulk requests, not one GET each (the large one by GET), and
// installs the same tree.
func TestBulkBaseline(t *testing.T) {
	const n = 300
	dir := bulkTree(t, n)
	var c bulkCounts
	ts := startSource(t, dir, c.wrap("", dir), nil)
	dest := t.TempDir()
	rep := mustSync(t, ts.base, syncOpts(t, dest))
	sameTree(t, dir, dest)
	if sr := one(t, rep); sr.Fetched != n+2 || sr.Failed != 0 {
		t.Errorf("fetched %d, failed %d", sr.Fetched, sr.Failed)
	}
	t.Logf("%d GETs of resources, %d bulk requests", c.gets.Load(), c.posts.Load())
	if g, p := c.gets.Load(), c.posts.Load(); g != 1 || p < 1 || p > n/10 {
		t.Errorf("%d GETs of resources and %d bulk requests for %d small files and a large one", g, p, n+1)
	}
}

// TestBulkHostile: a bulk response that is broken or lies never installs
// a wrong byte nor a file outside DEST: the members it cannot vouch for
// are fetched by plain GETs, and the run ends in sync.
func TestBulkHostile(t *testing.T) {
	const n = 120
	for _, mode := range []string{"not asked", "wrong digest", "truncated", "huge"} {
		t.Run(mode, func(t *testing.T) {
			dir := bulkTree(t, n)
			var c bulkCounts
			ts := startSource(t, dir, c.wrap(mode, dir), nil)
			parent := t.TempDir()
			dest := filepath.Join(parent, "mirror")
			var warned atomic.Bool
			opt := syncOpts(t, dest)
			opt.Events = func(e destination.Event) {
				if e.Kind == destination.EventWarning && strings.Contains(e.Message, "bulk") {
					warned.Store(true)
				}
			}
			rep := mustSync(t, ts.base, opt)
			sameTree(t, dir, dest)
			if sr := one(t, rep); sr.Failed != 0 {
				t.Errorf("failed %d: %v", sr.Failed, sr.Failures)
			}
			if _, err := os.Stat(filepath.Join(parent, "outside.bin")); err == nil {
				t.Error("a member not asked for was written outside DEST")
			}
			if c.posts.Load() == 0 || c.gets.Load() == 0 {
				t.Errorf("%d bulk requests, %d GETs: the fallback was not taken", c.posts.Load(), c.gets.Load())
			}
			if mode == "wrong digest" && c.gets.Load() < n {
				t.Errorf("%d GETs after %d members with wrong bytes", c.gets.Load(), n)
			}
			t.Logf("%d bulk requests, %d GETs, warning %v", c.posts.Load(), c.gets.Load(), warned.Load())
		})
	}
}

// TestBulkOtherOrigin: an endpoint advertised on another origin is not
// used (the credentials of the Source would go there).
func TestBulkOtherOrigin(t *testing.T) {
	var hits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer other.Close()
	dir := bulkTree(t, 20)
	ts := startSource(t, dir, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/.") {
				w.Header().Set("Link", "<"+other.URL+"/"+bulk.Path+`>; rel="`+bulk.Rel+`"`)
				h.ServeHTTP(&linkDropper{ResponseWriter: w}, r)
				return
			}
			h.ServeHTTP(w, r)
		})
	}, nil)
	dest := t.TempDir()
	mustSync(t, ts.base, syncOpts(t, dest))
	sameTree(t, dir, dest)
	if hits.Load() != 0 {
		t.Errorf("%d requests to the other origin", hits.Load())
	}
}

// linkDropper keeps the Link header the test set and drops the Source's.
type linkDropper struct {
	http.ResponseWriter
	done bool
}

func (l *linkDropper) WriteHeader(code int) {
	if !l.done {
		l.done = true
		var keep []string
		for _, v := range l.Header().Values("Link") {
			if !strings.HasPrefix(v, "</") {
				keep = append(keep, v)
			}
		}
		l.Header()["Link"] = keep
	}
	l.ResponseWriter.WriteHeader(code)
}

func (l *linkDropper) Write(b []byte) (int, error) {
	if !l.done {
		l.WriteHeader(200)
	}
	return l.ResponseWriter.Write(b)
}
