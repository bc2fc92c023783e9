package destination_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/notify"
)

// notifiedSource starts a Source whose change notifications are captured
// (the channel starts before the first Resource List, as serve does it).
func notifiedSource(t *testing.T, dir string) (*testSource, *captured, func()) {
	t.Helper()
	pub := &captured{}
	ctx := context.Background()
	var n *notify.Notifier
	beforeFirstUpdate = func(ts *testSource) {
		n = &notify.Notifier{Pub: pub, Hub: ts.base + "hub", Topic: func(string) string { return ts.base + "topic" },
			CapabilityList: ts.src.CapabilityListURL, ResourceBase: ts.src.ResourceBase}
		if err := n.Init(ctx, "default", ts.src.Store("default")); err != nil {
			t.Fatal(err)
		}
	}
	ts := startSource(t, dir, nil, nil)
	beforeFirstUpdate = nil
	return ts, pub, func() { n.Notify(ctx, "default", ts.src.Store("default")) }
}

// TestNotifiedFilesRecorded: a file that arrives by notification is
// recorded in the state, whatever the durability mode, so that a later
// deletion at the Source removes it (issue 9, item 1).
func TestNotifiedFilesRecorded(t *testing.T) {
	for _, fsyncEach := range []bool{false, true} {
		t.Run(map[bool]string{false: "batched", true: "fsync"}[fsyncEach], func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "a.txt", []byte("a"))
			ts, pub, notifyNow := notifiedSource(t, dir)
			dest := t.TempDir()
			opt := syncOpts(t, dest)
			opt.FsyncEach = fsyncEach
			ctx := context.Background()
			m, err := destination.Open(ctx, ts.base, opt)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "p.txt", []byte("pushed"))
			ts.update(t)
			notifyNow()
			h, es := parse(t, pub.payloads[len(pub.payloads)-1])
			sr, err := m.Apply(ctx, "default", h, es)
			if err != nil || sr.Fetched != 1 {
				t.Fatalf("apply: %+v %v", sr, err)
			}
			m.Close()

			// a.txt came by the baseline, p.txt by the notification.
			os.Remove(filepath.Join(dir, "p.txt"))
			os.Remove(filepath.Join(dir, "a.txt"))
			ts.update(t)
			sr = one(t, mustSync(t, ts.base, opt))
			if sr.Deleted != 2 || sr.Kept != 0 || sr.Failed != 0 {
				t.Fatalf("deletion of a notified file: %+v", sr)
			}
			for _, n := range []string{"a.txt", "p.txt"} {
				if _, err := os.Stat(filepath.Join(dest, n)); !os.IsNotExist(err) {
					t.Fatalf("%s still here: %v", n, err)
				}
			}
			sameTree(t, dir, dest)
		})
	}
}

// failChangeLists answers the Change List Index with the status in code
// (0: served normally).
func failChangeLists(code *atomic.Int32) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c := int(code.Load()); c != 0 && strings.HasSuffix(r.URL.Path, "/changelist.xml") {
				http.Error(w, http.StatusText(c), c)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// scratchLeft lists what a run left in DEST's state directory besides
// the state itself.
func scratchLeft(t *testing.T, dest string) []string {
	t.Helper()
	var left []string
	filepath.WalkDir(filepath.Join(dest, destination.StateDirName), func(p string, d fs.DirEntry, err error) error {
		// state.db and base (the Source's base URL, for oai serve
		// --mirror) are the mirror's state, not scratch.
		if err == nil && !d.IsDir() && d.Name() != "state.db" && d.Name() != "base" {
			left = append(left, p)
		}
		return nil
	})
	return left
}

// TestChangeListUnreadable: an advertised Change List that cannot be
// fetched ends the run with an error that says so (a 5xx), or, when the
// Source answers 404 because it has not written one yet, is a gap that
// the Resource List repairs; never a crash, and no scratch database is
// left behind (issue 9, item 2).
func TestChangeListUnreadable(t *testing.T) {
	t.Run("500", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "a.txt", []byte("a"))
		var code atomic.Int32
		ts := startSource(t, dir, failChangeLists(&code), nil)
		dest := t.TempDir()
		if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Failed != 0 {
			t.Fatalf("baseline: %+v", sr)
		}
		code.Store(http.StatusInternalServerError)
		writeFile(t, dir, "b.txt", []byte("b"))
		ts.update(t)
		_, err := destination.Sync(context.Background(), ts.base, syncOpts(t, dest))
		if !errors.Is(err, destination.ErrDiscovery) || !errors.Is(err, destination.ErrChangeList) || !strings.Contains(err.Error(), "500") {
			t.Fatalf("want a Change List error naming the status, got %v", err)
		}
		t.Logf("error: %v", err)
		if left := scratchLeft(t, dest); len(left) > 0 {
			t.Fatalf("left behind: %v", left)
		}
		// Once the Source answers again, the run completes.
		code.Store(0)
		rep := mustSync(t, ts.base, syncOpts(t, dest))
		if sr := one(t, rep); sr.Failed != 0 || sr.Fetched != 1 || rep.Cleaned != 0 {
			t.Fatalf("after the Source recovered: %+v (cleaned %d)", sr, rep.Cleaned)
		}
		sameTree(t, dir, dest)
	})
	t.Run("404", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "a.txt", []byte("a"))
		var code atomic.Int32
		code.Store(http.StatusNotFound)
		ts := startSource(t, dir, failChangeLists(&code), nil)
		dest := t.TempDir()
		rep := mustSync(t, ts.base, syncOpts(t, dest))
		sr := one(t, rep)
		if sr.Failed != 0 || sr.Fetched != 1 || !sr.Checkpoint.Baseline || !strings.Contains(sr.Gap, "404") || !rep.OK(false, false) {
			t.Fatalf("baseline without a Change List: %+v", sr)
		}
		t.Logf("gap: %s", sr.Gap)
		// Changes are picked up from the Resource List while the Change
		// List is missing.
		writeFile(t, dir, "b.txt", []byte("b"))
		os.Remove(filepath.Join(dir, "a.txt"))
		ts.update(t)
		sr = one(t, mustSync(t, ts.base, syncOpts(t, dest)))
		if sr.Failed != 0 || sr.Fetched != 1 || sr.Deleted != 1 || !strings.Contains(sr.Mode, "gap repair") {
			t.Fatalf("second run: %+v", sr)
		}
		sameTree(t, dir, dest)
		if left := scratchLeft(t, dest); len(left) > 0 {
			t.Fatalf("left behind: %v", left)
		}
	})
}

// rewriteChangeLists passes every Change List (not indexes) through fn.
func rewriteChangeLists(fn func(*rs.Entry)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.URL.Path, "/changelists/") {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			h, es := parseT(rec.Body.Bytes())
			if h == nil || h.Capability() != rs.CapChangeList || h.IsIndex() {
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
				return
			}
			w.Header().Set("Content-Type", "application/xml")
			enc := rs.NewEncoder(w)
			enc.WriteHead(h)
			for _, e := range es {
				fn(e)
				enc.WriteEntry(e)
			}
			enc.Close()
		})
	}
}

func parseT(b []byte) (*rs.Head, []*rs.Entry) {
	dec := rs.NewDecoder(bytes.NewReader(b))
	h, err := dec.Head()
	if err != nil {
		return nil, nil
	}
	var es []*rs.Entry
	for e, err := range dec.All() {
		if err != nil {
			return nil, nil
		}
		es = append(es, e)
	}
	return h, es
}

// pyResyncDeletion makes a deletion look as py-resync writes it: no
// rs:md datetime, and the lastmod of the resource that was deleted.
func pyResyncDeletion(e *rs.Entry) {
	if e.MD.Change == rs.Deleted {
		e.MD.DateTime = rs.Time{}
		e.LastMod = rs.NewTime(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	}
}

// TestUndatedDeletionsApplied: deletions without an rs:md datetime and
// with an old lastmod are applied, from the Change Lists and from a
// notification (issue 9, item 4).
func TestUndatedDeletionsApplied(t *testing.T) {
	t.Run("changelist", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "a.txt", []byte("a"))
		writeFile(t, dir, "b.txt", []byte("b"))
		ts := startSource(t, dir, rewriteChangeLists(pyResyncDeletion), nil)
		dest := t.TempDir()
		if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Failed != 0 || sr.Fetched != 2 {
			t.Fatalf("baseline: %+v", sr)
		}
		os.Remove(filepath.Join(dir, "a.txt"))
		ts.update(t)
		sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
		if sr.Deleted != 1 || sr.Failed != 0 {
			t.Fatalf("undated deletion: %+v", sr)
		}
		sameTree(t, dir, dest)
	})
	t.Run("notification", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "a.txt", []byte("a"))
		ts, pub, notifyNow := notifiedSource(t, dir)
		dest := t.TempDir()
		ctx := context.Background()
		m, err := destination.Open(ctx, ts.base, syncOpts(t, dest))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if _, err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "a.txt"))
		ts.update(t)
		notifyNow()
		h, es := parse(t, pub.payloads[len(pub.payloads)-1])
		for _, e := range es {
			pyResyncDeletion(e)
		}
		sr, err := m.Apply(ctx, "default", h, es)
		if err != nil || sr.Deleted != 1 {
			t.Fatalf("apply: %+v %v", sr, err)
		}
		sameTree(t, dir, dest)
	})
}

// freezeResourceLists serves the Resource List documents as they were
// when frozen: a Source whose Resource List lags behind its resources.
type freezeResourceLists struct {
	mu     sync.Mutex
	frozen bool
	docs   map[string][]byte
	block  string // a resource path answered 404
}

func (f *freezeResourceLists) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.block != "" && r.URL.Path == f.block {
			http.NotFound(w, r)
			return
		}
		if !strings.Contains(r.URL.Path, "/resourcelist") {
			next.ServeHTTP(w, r)
			return
		}
		if b, ok := f.docs[r.URL.Path]; ok && f.frozen {
			w.Header().Set("Content-Type", "application/xml")
			w.Write(b)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		if rec.Code == http.StatusOK && !f.frozen {
			if f.docs == nil {
				f.docs = map[string][]byte{}
			}
			f.docs[r.URL.Path] = rec.Body.Bytes()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// TestBaselineCatchesUp: a baseline from a Resource List written before
// some resources changed or were deleted takes those from the Change
// Lists instead of failing; a failure they do not explain still counts
// (issue 9, item 3).
func TestBaselineCatchesUp(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.txt", "b.txt", "c.txt", "z.txt"} {
		writeFile(t, dir, n, []byte("v1 "+n))
	}
	var fr freezeResourceLists
	ts := startSource(t, dir, fr.wrap, nil)
	// A first reader fetches (and so freezes) the Resource List.
	mustSync(t, ts.base, syncOpts(t, t.TempDir()))
	fr.mu.Lock()
	fr.frozen = true
	fr.mu.Unlock()
	writeFile(t, dir, "b.txt", []byte("version 2 of b, longer"))
	os.Remove(filepath.Join(dir, "c.txt"))
	writeFile(t, dir, "n.txt", []byte("new"))
	ts.update(t)

	dest := t.TempDir()
	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Failed != 0 || !sr.Checkpoint.Baseline || sr.Checkpoint.Until.Equal(sr.Checkpoint.At) {
		t.Fatalf("baseline from a lagging Resource List: %+v", sr)
	}
	sameTree(t, dir, dest)
	// Nothing left to do.
	sr = one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Failed != 0 || sr.Fetched != 0 || sr.Deleted != 0 || sr.Mode != "incremental" {
		t.Fatalf("second run: %+v", sr)
	}

	// A resource that fails for a reason no change explains.
	fr.mu.Lock()
	fr.block = "/z.txt"
	fr.mu.Unlock()
	dest = t.TempDir()
	sr = one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Failed != 1 || len(sr.Failures) != 1 || !strings.HasSuffix(sr.Failures[0].URI, "/z.txt") || sr.Checkpoint.Baseline {
		t.Fatalf("unexplained failure: %+v", sr)
	}
}

const capListCL = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="capabilitylist"/>
  <url><loc>{base}resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
  <url><loc>{base}changelist.xml</loc><rs:md capability="changelist"/></url>
</urlset>`

func changeList(entries ...string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="changelist" from="2026-01-01T00:00:00Z" until="2026-01-02T00:00:00Z"/>
` + strings.Join(entries, "\n") + `
</urlset>`
}

// TestEquivalentURIsOneResource: /aA and /a%41 are one resource (RFC 3986
// §6.2.2.2): one file, one record, one download, in a list and across
// lists; two URIs that are not equivalent but map to one file are
// refused as a failure of the later one, in one list and against the
// state (issue 9, item 13).
func TestEquivalentURIsOneResource(t *testing.T) {
	t.Run("equivalent", func(t *testing.T) {
		base := staticSource(t, map[string]string{
			"/capabilitylist.xml": capListCL,
			"/resourcelist.xml": strings.ReplaceAll(resourceList("{base}aA.txt", "{base}a%41.txt", "{base}b.txt"),
				"</loc>", "</loc><lastmod>2025-06-01T00:00:00Z</lastmod>"),
			// The change names b.txt as %62.txt: the same resource.
			"/changelist.xml": changeList(`<url><loc>{base}%62.txt</loc><lastmod>2026-01-01T12:00:00Z</lastmod><rs:md change="updated" datetime="2026-01-01T12:00:00Z"/></url>`),
			"/aA.txt":         "A",
			"/a%41.txt":       "A",
			"/b.txt":          "b, updated",
			"/%62.txt":        "b, updated",
		})
		dest := t.TempDir()
		sr := one(t, mustSync(t, base+"capabilitylist.xml", syncOpts(t, dest)))
		if sr.Failed != 0 || sr.Fetched != 2 {
			t.Fatalf("%+v", sr)
		}
		if got := tree(t, dest); len(got) != 2 || string(got["aA.txt"]) != "A" || string(got["b.txt"]) != "b, updated" {
			t.Fatalf("DEST holds %v", got)
		}
		// Nothing is downloaded again, and nothing deleted.
		opt := syncOpts(t, dest)
		opt.Mode = destination.ModeBaseline
		sr = one(t, mustSync(t, base+"capabilitylist.xml", opt))
		if sr.Failed != 0 || sr.Fetched != 0 || sr.Deleted != 0 || sr.Kept != 0 {
			t.Fatalf("second baseline: %+v", sr)
		}
	})
	t.Run("collision", func(t *testing.T) {
		base := staticSource(t, map[string]string{
			"/capabilitylist.xml": capListCL,
			// a;b and a%3Bb are different URIs (';' is reserved) that
			// map to the same file name.
			"/resourcelist.xml": resourceList("{base}a;b.txt", "{base}a%3Bb.txt", "{base}c.txt"),
			"/changelist.xml":   changeList(`<url><loc>{base}c%3F.txt</loc><rs:md change="created" datetime="2026-01-01T12:00:00Z"/></url>`, `<url><loc>{base}c%3f%3F.txt</loc><rs:md change="created" datetime="2026-01-01T12:00:00Z"/></url>`),
			"/a;b.txt":          "semicolon",
			"/a%3Bb.txt":        "escaped semicolon",
			"/c.txt":            "c",
			"/c%3F.txt":         "c?",
			"/c%3F%3F.txt":      "c??",
		})
		dest := t.TempDir()
		sr := one(t, mustSync(t, base+"capabilitylist.xml", syncOpts(t, dest)))
		if sr.Failed != 1 || len(sr.Failures) != 1 || !strings.Contains(sr.Failures[0].Error, "both map to a;b.txt") || !strings.HasSuffix(sr.Failures[0].URI, "/a%3Bb.txt") {
			t.Fatalf("%+v", sr)
		}
		t.Logf("failure: %s", sr.Failures[0].Error)
		if b, _ := os.ReadFile(filepath.Join(dest, "a;b.txt")); string(b) != "semicolon" {
			t.Fatalf("a;b.txt = %q", b)
		}
	})
	t.Run("against the state", func(t *testing.T) {
		base := staticSource(t, map[string]string{
			"/capabilitylist.xml": capListCL,
			"/resourcelist.xml":   resourceList("{base}a;b.txt"),
			// Created after the list under a name that maps to the
			// recorded file.
			"/changelist.xml": changeList(`<url><loc>{base}a%3Bb.txt</loc><rs:md change="created" datetime="2026-01-01T12:00:00Z"/></url>`),
			"/a;b.txt":        "semicolon",
			"/a%3Bb.txt":      "escaped semicolon",
		})
		dest := t.TempDir()
		sr := one(t, mustSync(t, base+"capabilitylist.xml", syncOpts(t, dest)))
		if sr.Failed != 1 || len(sr.Failures) != 1 || !errorsIsText(sr.Failures[0].Error, destination.ErrPathCollision) || !strings.HasSuffix(sr.Failures[0].URI, "/a%3Bb.txt") {
			t.Fatalf("%+v", sr)
		}
		if b, _ := os.ReadFile(filepath.Join(dest, "a;b.txt")); string(b) != "semicolon" {
			t.Fatalf("a;b.txt = %q", b)
		}
	})
}

// errorsIsText reports whether a reported error message carries err's.
func errorsIsText(msg string, err error) bool { return strings.Contains(msg, err.Error()) }

// TestNotificationDuringSync: a notification applied while a sync of the
// same Mirror runs waits for it, and what either installs is recorded:
// the Source's later deletion removes it.
func TestNotificationDuringSync(t *testing.T) {
	dir := t.TempDir()
	for i := range 200 {
		writeFile(t, dir, fmt.Sprintf("f%03d.txt", i), []byte(fmt.Sprint("file ", i)))
	}
	ts, pub, notifyNow := notifiedSource(t, dir)
	dest := t.TempDir()
	ctx := context.Background()
	m, err := destination.Open(ctx, ts.base, syncOpts(t, dest))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		writeFile(t, dir, fmt.Sprintf("f%03d.txt", i), []byte(fmt.Sprint("file ", i, " v2")))
	}
	writeFile(t, dir, "p.txt", []byte("pushed"))
	ts.update(t)
	notifyNow()
	h, es := parse(t, pub.payloads[len(pub.payloads)-1])
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := m.Sync(ctx); err != nil {
			t.Error(err)
		}
	}()
	if sr, err := m.Apply(ctx, "default", h, es); err != nil || sr.Failed != 0 {
		t.Errorf("apply: %+v %v", sr, err)
	}
	wg.Wait()
	sameTree(t, dir, dest)
	m.Close()

	os.Remove(filepath.Join(dir, "p.txt"))
	os.Remove(filepath.Join(dir, "f000.txt"))
	ts.update(t)
	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Deleted != 2 || sr.Kept != 0 || sr.Failed != 0 {
		t.Fatalf("after: %+v", sr)
	}
	sameTree(t, dir, dest)
}

// TestBaselineChangeList5xx: a Source whose Change List answers 503 (the
// reference resync-simulator does until its first change) still gets its
// Resource List's snapshot installed; the run fails naming the Change
// List, the checkpoint stops at the Resource List's `at`, and once the
// Change List answers, the next run catches up from it (issue 19, 5c).
func TestBaselineChangeList5xx(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a"))
	writeFile(t, dir, "d/b.txt", []byte("b"))
	var code atomic.Int32
	code.Store(http.StatusServiceUnavailable)
	var hits atomic.Int32
	count := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/changelist.xml") {
				hits.Add(1)
			}
			next.ServeHTTP(w, r)
		})
	}
	ts := startSource(t, dir, func(h http.Handler) http.Handler { return count(failChangeLists(&code)(h)) }, nil)
	dest := t.TempDir()
	rep := mustSync(t, ts.base, syncOpts(t, dest))
	sr := one(t, rep)
	if sr.Fetched != 2 || sr.Failed != 1 || rep.OK(false, false) {
		t.Fatalf("baseline under a 503 Change List: %+v", sr)
	}
	if f := sr.Failures[0]; !strings.HasSuffix(f.URI, "/changelist.xml") || !strings.Contains(f.Error, "503") {
		t.Fatalf("the failure must name the Change List and its status: %+v", f)
	}
	if hits.Load() < 2 {
		t.Fatalf("the Change List was not retried (%d requests)", hits.Load())
	}
	cp := sr.Checkpoint
	if !cp.Baseline || cp.At.IsZero() || !cp.Until.Equal(cp.At) {
		t.Fatalf("the checkpoint must record the Resource List's at and no more: %+v", cp)
	}
	sameTree(t, dir, dest)
	t.Logf("failure: %s", sr.Failures[0].Error)

	// The Source recovers and changes: the next run is incremental from
	// the Resource List's at.
	code.Store(0)
	writeFile(t, dir, "c.txt", []byte("c"))
	os.Remove(filepath.Join(dir, "a.txt"))
	ts.update(t)
	rep = mustSync(t, ts.base, syncOpts(t, dest))
	sr = one(t, rep)
	if sr.Mode != "incremental" || sr.Failed != 0 || sr.Fetched != 1 || sr.Deleted != 1 || !rep.OK(false, false) {
		t.Fatalf("catch-up after the Change List recovered: %+v", sr)
	}
	sameTree(t, dir, dest)
}
