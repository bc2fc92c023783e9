package destination_test

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/feed/activity"
)

// feedSource serves an IIIF Change Discovery stream and its objects on
// loopback: the collection at /activity/all-changes, pages of pageSize
// at /activity/page-N, objects at their paths.
type feedSource struct {
	mu       sync.Mutex
	base     string
	pageSize int
	items    []map[string]any
	objects  map[string]string // path → body
	gets     map[string]int
	pages    atomic.Int64
	// hooks for hostile variants
	pageHook func(n int, p map[string]any)
	redirect string // where the collection redirects, when set
}

func startFeed(t testing.TB, pageSize int) *feedSource {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs := &feedSource{base: "http://" + ln.Addr().String(), pageSize: pageSize, objects: map[string]string{}, gets: map[string]int{}}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: fs}}
	srv.Start()
	t.Cleanup(srv.Close)
	return fs
}

func (fs *feedSource) collection() string { return fs.base + "/activity/all-changes" }

// do records an activity at time at and applies it to the objects.
func (fs *feedSource) do(typ, path, body string, at time.Time) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	it := map[string]any{"type": typ, "endTime": at.UTC().Format(time.RFC3339Nano)}
	if path != "" {
		it["object"] = map[string]any{"id": fs.base + path, "type": "Manifest"}
	}
	if typ == activity.Refresh {
		delete(it, "endTime")
		it["startTime"] = at.UTC().Format(time.RFC3339Nano)
	}
	fs.items = append(fs.items, it)
	switch typ {
	case activity.Delete:
		delete(fs.objects, path)
	case activity.Create, activity.Update:
		fs.objects[path] = body
	}
}

func (fs *feedSource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.gets[r.URL.Path]++
	n := (len(fs.items) + fs.pageSize - 1) / fs.pageSize
	if n == 0 {
		n = 1
	}
	page := func(i int) string { return fs.base + "/activity/page-" + strconv.Itoa(i) }
	var doc map[string]any
	switch {
	case r.URL.Path == "/activity/all-changes" && fs.redirect != "":
		http.Redirect(w, r, fs.redirect, http.StatusFound)
		return
	case r.URL.Path == "/activity/all-changes":
		doc = map[string]any{"@context": activity.DiscoveryContext, "id": fs.collection(), "type": "OrderedCollection",
			"totalItems": len(fs.items), "first": map[string]any{"id": page(0), "type": "OrderedCollectionPage"},
			"last": map[string]any{"id": page(n - 1), "type": "OrderedCollectionPage"}}
	case strings.HasPrefix(r.URL.Path, "/activity/page-"):
		fs.pages.Add(1)
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/activity/page-"))
		if err != nil || i < 0 || i >= n {
			http.NotFound(w, r)
			return
		}
		hi := min((i+1)*fs.pageSize, len(fs.items))
		doc = map[string]any{"@context": activity.DiscoveryContext, "id": page(i), "type": "OrderedCollectionPage",
			"partOf":       map[string]any{"id": fs.collection(), "type": "OrderedCollection"},
			"orderedItems": fs.items[i*fs.pageSize : hi]}
		if i > 0 {
			doc["prev"] = map[string]any{"id": page(i - 1), "type": "OrderedCollectionPage"}
		}
		if i < n-1 {
			doc["next"] = map[string]any{"id": page(i + 1), "type": "OrderedCollectionPage"}
		}
		if fs.pageHook != nil {
			fs.pageHook(i, doc)
		}
	default:
		b, ok := fs.objects[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(b))
		return
	}
	w.Header().Set("Content-Type", activity.MediaType)
	json.NewEncoder(w).Encode(doc)
}

// want is DEST's files (the state directory left out) as path → body.
func destFiles(t *testing.T, dest string) map[string]string {
	t.Helper()
	got := map[string]string{}
	filepath.Walk(dest, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dest, p)
		if fi.IsDir() {
			if rel == destination.StateDirName {
				return filepath.SkipDir
			}
			return nil
		}
		b, _ := os.ReadFile(p)
		got["/"+filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return got
}

func sameFiles(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("DEST has %d files, the feed's objects are %d:\n got %v\nwant %v", len(got), len(want), got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func feedSync(t *testing.T, src, dest string, mut func(*destination.Options)) (*destination.Report, error) {
	t.Helper()
	opt := destination.Options{Dest: dest, Client: &http.Client{Timeout: 10 * time.Second}, Retries: 1,
		BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	if mut != nil {
		mut(&opt)
	}
	return destination.Sync(context.Background(), src, opt)
}

// TestFeedSync mirrors an IIIF Change Discovery stream: a first run takes
// every object, later runs read only the pages with new activities and
// apply updates and deletions; a page given directly works as its
// collection.
func TestFeedSync(t *testing.T) {
	fs := startFeed(t, 3)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 7 {
		fs.do(activity.Create, fmt.Sprintf("/iiif/%d/manifest", i), fmt.Sprintf("v1 of %d", i), t0.Add(time.Duration(i)*time.Second))
	}
	fs.do(activity.Update, "/iiif/2/manifest", "v2 of 2", t0.Add(10*time.Second))
	dest := t.TempDir()
	rep, err := feedSync(t, fs.collection(), dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK(false, false) {
		t.Fatalf("report not OK: %+v", rep.Sets)
	}
	sameFiles(t, destFiles(t, dest), fs.objects)
	if got := rep.Sets[0].Fetched; got != 7 {
		t.Errorf("fetched %d, want 7", got)
	}

	// Nothing new: only the last page is read, nothing fetched.
	before := fs.pages.Load()
	rep, err = feedSync(t, fs.collection(), dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := fs.pages.Load() - before; n != 1 {
		t.Errorf("an idle run read %d pages, want 1", n)
	}
	if rep.Sets[0].Fetched != 0 || rep.Sets[0].Deleted != 0 {
		t.Errorf("an idle run fetched %d, deleted %d", rep.Sets[0].Fetched, rep.Sets[0].Deleted)
	}

	// New activities: a deletion, an update, a creation, then a Move.
	fs.do(activity.Delete, "/iiif/0/manifest", "", t0.Add(20*time.Second))
	fs.do(activity.Update, "/iiif/5/manifest", "v2 of 5", t0.Add(21*time.Second))
	fs.do(activity.Create, "/iiif/9/manifest", "v1 of 9", t0.Add(22*time.Second))
	fs.do(activity.Update, "/iiif/9/manifest", "v2 of 9", t0.Add(23*time.Second))
	before = fs.pages.Load()
	rep, err = feedSync(t, fs.collection(), dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, destFiles(t, dest), fs.objects)
	if n := fs.pages.Load() - before; n > 3 {
		t.Errorf("an incremental run read %d pages, want at most 3 (the new ones and the one before)", n)
	}
	if s := rep.Sets[0]; s.Fetched != 2 || s.Deleted != 1 {
		t.Errorf("incremental run fetched %d, deleted %d; want 2, 1", s.Fetched, s.Deleted)
	}

	// The last page given directly: the same mirror (same base).
	fs.do(activity.Delete, "/iiif/9/manifest", "", t0.Add(30*time.Second))
	last := fs.base + "/activity/page-" + strconv.Itoa((len(fs.items)-1)/fs.pageSize)
	dest2 := t.TempDir()
	if _, err := feedSync(t, last, dest2, nil); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, destFiles(t, dest2), fs.objects)
}

// TestFeedRefresh: a Refresh newer than the position makes the run take
// deletions from before it and everything after it; a first run stops
// at the Refresh.
func TestFeedRefresh(t *testing.T) {
	fs := startFeed(t, 2)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	fs.do(activity.Create, "/a", "a1", t0)
	fs.do(activity.Create, "/b", "b1", t0.Add(time.Second))
	dest := t.TempDir()
	if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
		t.Fatal(err)
	}
	// Deleted while the publisher rebuilt its stream: the deletion is
	// dated before the Refresh, the refreshed objects after it.
	fs.do(activity.Delete, "/a", "", t0.Add(5*time.Second))
	fs.do(activity.Refresh, "", "", t0.Add(6*time.Second))
	fs.do(activity.Update, "/b", "b2", t0.Add(7*time.Second))
	fs.do(activity.Create, "/c", "c1", t0.Add(8*time.Second))
	if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, destFiles(t, dest), fs.objects)

	// A first run stops at the Refresh: /a's Create before it is not read.
	before := fs.pages.Load()
	dest2 := t.TempDir()
	if _, err := feedSync(t, fs.collection(), dest2, nil); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, destFiles(t, dest2), fs.objects)
	if n := fs.pages.Load() - before; n != 2 {
		t.Errorf("a first run read %d pages, want 2 (stopping at the Refresh)", n)
	}
}

// TestFeedHostile: a loop of prev, a future date, an object off-origin
// and a malformed page are each bounded and named.
func TestFeedHostile(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	t.Run("loop", func(t *testing.T) {
		fs := startFeed(t, 1)
		fs.do(activity.Create, "/a", "a", t0)
		fs.do(activity.Create, "/b", "b", t0.Add(time.Second))
		fs.pageHook = func(n int, p map[string]any) {
			if n == 0 {
				p["prev"] = map[string]any{"id": fs.base + "/activity/page-1"}
			}
		}
		_, err := feedSync(t, fs.collection(), t.TempDir(), nil)
		if !errors.Is(err, destination.ErrFeed) || !strings.Contains(err.Error(), "page-1") {
			t.Fatalf("err = %v, want ErrFeed naming page-1", err)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		fs := startFeed(t, 1)
		fs.do(activity.Create, "/a", "a", t0)
		fs.do(activity.Create, "/b", "b", t0.Add(time.Second))
		fs.pageHook = func(n int, p map[string]any) {
			if n == 0 {
				p["orderedItems"] = "not a list"
			}
		}
		_, err := feedSync(t, fs.collection(), t.TempDir(), nil)
		if !errors.Is(err, destination.ErrFeed) || !strings.Contains(err.Error(), "page-0") {
			t.Fatalf("err = %v, want ErrFeed naming page-0", err)
		}
	})
	t.Run("future", func(t *testing.T) {
		fs := startFeed(t, 10)
		fs.do(activity.Create, "/a", "a", t0)
		fs.do(activity.Create, "/b", "b", time.Now().Add(24*time.Hour))
		dest := t.TempDir()
		var warned atomic.Bool
		_, err := feedSync(t, fs.collection(), dest, func(o *destination.Options) {
			o.Events = func(ev destination.Event) {
				if ev.Kind == destination.EventWarning && strings.Contains(ev.Message, "future") {
					warned.Store(true)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if !warned.Load() {
			t.Error("no warning of the future date")
		}
		// The position is now, not tomorrow: a change made later is seen.
		fs.do(activity.Create, "/c", "c", time.Now().Add(time.Second))
		time.Sleep(1100 * time.Millisecond)
		if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
			t.Fatal(err)
		}
		sameFiles(t, destFiles(t, dest), fs.objects)
	})
	t.Run("paths", func(t *testing.T) {
		fs := startFeed(t, 10)
		fs.do(activity.Create, "/a", "a", t0)
		for i, p := range []string{"/.resourcesync/state.db", "/%2e%2e/escape", "/x/../../escape2"} {
			fs.mu.Lock()
			fs.items = append(fs.items, map[string]any{"type": "Create", "endTime": t0.Add(time.Duration(i+1) * time.Second).Format(time.RFC3339),
				"object": map[string]any{"id": fs.base + p}})
			fs.objects[p] = "hostile"
			fs.mu.Unlock()
		}
		parent := t.TempDir()
		dest := filepath.Join(parent, "dest")
		if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(dest, destination.StateDirName, "state.db")); err == nil && string(b) == "hostile" {
			t.Error("the feed overwrote the state")
		}
		for _, p := range []string{"escape", "escape2"} {
			if _, err := os.Stat(filepath.Join(parent, p)); err == nil {
				t.Errorf("%s written outside DEST", p)
			}
		}
		// The state still works: a second run reads it.
		if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("off-origin", func(t *testing.T) {
		fs := startFeed(t, 10)
		other := startFeed(t, 10)
		other.objects["/x"] = "elsewhere"
		fs.do(activity.Create, "/a", "a", t0)
		fs.mu.Lock()
		fs.items = append(fs.items, map[string]any{"type": "Create", "endTime": t0.Add(time.Second).Format(time.RFC3339),
			"object": map[string]any{"id": other.base + "/x"}})
		fs.mu.Unlock()
		dest := t.TempDir()
		rep, err := feedSync(t, fs.collection(), dest, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Sets[0].Failed != 1 {
			t.Errorf("off-origin object: failed = %d, want 1", rep.Sets[0].Failed)
		}
		if _, ok := destFiles(t, dest)["/x"]; ok {
			t.Error("the off-origin object was mirrored")
		}
		host := strings.TrimPrefix(other.base, "http://")
		dest2 := t.TempDir()
		rep, err = feedSync(t, fs.collection(), dest2, func(o *destination.Options) { o.AllowHosts = []string{host} })
		if err != nil {
			t.Fatal(err)
		}
		if rep.Sets[0].Failed != 0 || rep.Sets[0].Fetched != 2 {
			t.Errorf("with --allow-host: %+v", rep.Sets[0])
		}
	})
}

// TestFeedSpecExamples syncs the IIIF Change Discovery 1.0 specification's
// examples (testdata/iiif-discovery, see its README) served from loopback
// with their URLs rewritten, and matches the expected object set.
func TestFeedSpecExamples(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	docs := map[string]string{"/activity/all-changes": "collection.json", "/activity/page-0": "page-0.json", "/activity/page-1": "page-1.json"}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f, ok := docs[r.URL.Path]; ok {
			b, err := os.ReadFile(filepath.Join("testdata", "iiif-discovery", f))
			if err != nil {
				t.Error(err)
			}
			w.Header().Set("Content-Type", `application/ld+json;profile="http://iiif.io/api/discovery/1/context.json"`)
			w.Write([]byte(strings.ReplaceAll(string(b), "https://example.org", base)))
			return
		}
		if strings.HasPrefix(r.URL.Path, "/iiif/") {
			w.Write([]byte(`{"id":"` + base + r.URL.Path + `"}`))
			return
		}
		http.NotFound(w, r)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	dest := t.TempDir()
	rep, err := feedSync(t, base+"/activity/all-changes", dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK(false, false) {
		t.Fatalf("not OK: %+v", rep.Sets)
	}
	want := map[string]string{}
	for _, p := range []string{"/iiif/1/manifest", "/iiif/2/manifest", "/iiif/9/manifest"} {
		want[p] = `{"id":"` + base + p + `"}`
	}
	sameFiles(t, destFiles(t, dest), want)
}

// TestFeedSameSecond: feeds commonly date activities to the second. An
// activity published after a run, dated the same second as the newest the
// run read, is still mirrored by the next run (the consuming algorithm
// stops at activities before the last crawl, not at it, as the Change
// Lists' reader re-reads changes at its checkpoint).
func TestFeedSameSecond(t *testing.T) {
	fs := startFeed(t, 10)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	fs.do(activity.Create, "/a", "a", t0)
	dest := t.TempDir()
	if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
		t.Fatal(err)
	}
	fs.do(activity.Create, "/b", "b", t0) // same second, published later
	fs.do(activity.Delete, "/a", "", t0)
	if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, destFiles(t, dest), fs.objects)
	// Nothing new: the activities of that second are not fetched again.
	rep, err := feedSync(t, fs.collection(), dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Sets[0]; s.Fetched != 0 || s.Deleted != 0 {
		t.Errorf("an idle run fetched %d, deleted %d", s.Fetched, s.Deleted)
	}
	// /b changed again in that second, with a digest: taken.
	fs.mu.Lock()
	fs.items = append(fs.items, map[string]any{"type": "Update", "endTime": t0.UTC().Format(time.RFC3339),
		"object": map[string]any{"id": fs.base + "/b", "digest": "md5:" + fmt.Sprintf("%x", md5.Sum([]byte("b2")))}})
	fs.objects["/b"] = "b2"
	fs.mu.Unlock()
	if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, destFiles(t, dest), fs.objects)
}
