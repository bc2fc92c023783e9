package destination_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/bulk"
	"github.com/resourcesync-go/resourcesync/source"
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

// withBulk keeps the bulk GET on under startSource's wrapper.
func withBulk(c *source.Config) { c.NoBulk = false }

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
	ts := startSource(t, dir, c.wrap("", dir), withBulk)
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
			ts := startSource(t, dir, c.wrap(mode, dir), withBulk)
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
	}, withBulk)
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

// TestKill9Bulk is TestKill9 through the bulk GET: a baseline killed
// after a random number of bulk requests leaves no partial file under a
// final name and no temporary file once rerun, and the rerun fetches
// none of the files that were complete (the intents and the state tell
// them from a user's). Each bulk response is held back a little so that
// the kills land mid-run.
func TestKill9Bulk(t *testing.T) {
	trials := 8
	if testing.Short() {
		trials = 3
	}
	dir := t.TempDir()
	for i := range 600 {
		writeFile(t, dir, fmt.Sprintf("s/%02d/f%04d.txt", i%20, i), []byte(strings.Repeat(fmt.Sprint(i, " "), 20+i%200)))
	}
	var posts atomic.Int64
	var mu sync.Mutex
	var asked map[string]bool // paths asked for during a rerun, by GET or in bulk
	note := func(p string) {
		mu.Lock()
		if asked != nil {
			asked[p] = true
		}
		mu.Unlock()
	}
	ts := startSource(t, dir, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/"+bulk.Path:
				posts.Add(1)
				b, _ := io.ReadAll(r.Body)
				for _, p := range strings.Fields(string(b)) {
					note(p)
				}
				r.Body = io.NopCloser(bytes.NewReader(b))
				time.Sleep(3 * time.Millisecond)
			case isResource(r):
				note(strings.TrimPrefix(r.URL.Path, "/"))
			}
			h.ServeHTTP(w, r)
		})
	}, withBulk)
	want := tree(t, dir)
	rng := rand.New(rand.NewPCG(3, 4))
	killed := 0
	for trial := range trials {
		dest := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RS_CRASH_SOURCE="+ts.base, "RS_CRASH_DEST="+dest)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := posts.Load()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		var err error
		go func() { err = cmd.Wait(); close(exited) }()
		at := 1 + rng.Int64N(8)
	poll:
		for posts.Load()-start < at {
			select {
			case <-exited:
				break poll
			case <-time.After(200 * time.Microsecond):
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		if err != nil {
			killed++
		}
		complete := map[string]bool{}
		for k, v := range tree(t, dest) {
			if w, ok := want[k]; ok && bytes.Equal(v, w) {
				complete[k] = true
			} else if ok {
				t.Errorf("trial %d: %s is under its final name with other bytes", trial, k)
			}
		}
		mu.Lock()
		asked = map[string]bool{}
		mu.Unlock()
		sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
		mu.Lock()
		again := asked
		asked = nil
		mu.Unlock()
		if sr.Failed != 0 {
			t.Fatalf("trial %d: rerun failed: %+v", trial, sr)
		}
		sameTree(t, dir, dest)
		if n := leftovers(t, dest); n > 0 {
			t.Fatalf("trial %d: %d temporary files left", trial, n)
		}
		for p := range again {
			if complete[p] {
				t.Errorf("trial %d: %s was complete before the rerun and was downloaded again", trial, p)
			}
		}
		t.Logf("trial %d: killed after %d bulk requests: %d/%d files complete, rerun fetched %d, adopted %d", trial, posts.Load()-start, len(complete), len(want), sr.Fetched, sr.Adopted)
	}
	if killed < trials/2 {
		t.Errorf("only %d of %d trials were killed mid-run", killed, trials)
	}
}
