package harvest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/oai"
)

// rig is a harvester of an oaitest repository, recording what it commits
// and logs.
type rig struct {
	t    testing.TB
	s    *oaitest.Server
	cfg  Config
	h    *Harvester
	logb *syncBuffer

	mu        sync.Mutex
	commits   [][]string
	failAfter int // Committed fails from this call on (0: never)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newRig(t testing.TB, o oaitest.Options, mod func(*Config)) *rig {
	t.Helper()
	r := &rig{t: t, s: oaitest.New(t, o), logb: &syncBuffer{}}
	c, _ := testnet.Client(t)
	base := t.TempDir()
	r.cfg = Config{
		Endpoint: r.s.URL,
		Dir:      filepath.Join(base, "records"),
		State:    filepath.Join(base, "state"),
		Client:   c,
		Log:      slog.New(slog.NewTextHandler(r.logb, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Committed: func(_ context.Context, paths []string) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.failAfter > 0 && len(r.commits)+1 >= r.failAfter {
				r.failAfter = 0
				return errors.New("journal refused")
			}
			r.commits = append(r.commits, slices.Clone(paths))
			return nil
		},
	}
	if mod != nil {
		mod(&r.cfg)
	}
	r.open()
	return r
}

func (r *rig) open() {
	r.t.Helper()
	h, err := New(r.cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.h = h
	r.t.Cleanup(func() { h.Close() })
}

func (r *rig) harvest() Stats {
	r.t.Helper()
	st, err := r.h.Harvest(context.Background())
	if err != nil {
		r.t.Fatalf("Harvest: %v\nlog:\n%s", err, r.logb)
	}
	return st
}

// files returns the record files under Dir: slash path → bytes.
func (r *rig) files() map[string]string {
	r.t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(r.cfg.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(r.cfg.Dir, p)
		m[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

// want returns what Dir should hold for prefix: the repository's live
// records, canonicalised.
func (r *rig) want(prefix string) map[string]string {
	r.t.Helper()
	m := map[string]string{}
	for rec := range r.s.All() {
		meta, ok := rec.Metadata[prefix]
		if rec.Deleted || !ok || rec.Malformed != oaitest.WellFormed {
			continue
		}
		c, err := Canonical([]byte(meta))
		if err != nil {
			continue // malformed on purpose: never harvested
		}
		m[RecordPath(rec.Identifier, prefix)] = string(c)
	}
	return m
}

func (r *rig) committed() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]int{}
	for _, c := range r.commits {
		for _, p := range c {
			m[p]++
		}
	}
	return m
}

func (r *rig) check(prefix string) {
	r.t.Helper()
	got, want := r.files(), r.want(prefix)
	for p, w := range want {
		if got[p] != w {
			r.t.Errorf("%s: got %q, want %q", p, got[p], w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			r.t.Errorf("%s: not in the repository", p)
		}
	}
}

func dc(title string) map[string]string {
	return map[string]string{oai.DCPrefix: `<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>` + title + `</dc:title></oai_dc:dc>`}
}

type fileID struct {
	fi    os.FileInfo
	mtime time.Time
}

func (r *rig) ids() map[string]fileID {
	m := map[string]fileID{}
	for p := range r.files() {
		fi, err := os.Stat(filepath.Join(r.cfg.Dir, p))
		if err != nil {
			r.t.Fatal(err)
		}
		m[p] = fileID{fi, fi.ModTime()}
	}
	return m
}

func TestHarvestFirstAndIncremental(t *testing.T) {
	for _, g := range []oai.Granularity{oai.Second, oai.Day} {
		t.Run(g.String(), func(t *testing.T) {
			// The incremental harvests only: the full pass is off.
			setBatch(t, 3)
			r := newRig(t, oaitest.Options{PageSize: 40, Granularity: g}, func(c *Config) { c.FullEvery = -1 })
			r.s.Generate(250)
			r.s.Put("oai:x:a/b?c", []string{"x"}, dc("slash &amp; query"))
			var froms []string
			r.s.OnRequest(func(verb string, q url.Values) {
				if verb == oai.ListRecords && !q.Has("resumptionToken") {
					froms = append(froms, q.Get("from"))
				}
			})
			st := r.harvest()
			if st.Written != 251 || st.Pages != 7 || !st.Full || st.Malformed != 0 {
				t.Errorf("first harvest: %+v", st)
			}
			r.check(oai.DCPrefix)
			if n := len(r.committed()); n != 251 {
				t.Errorf("committed %d paths, want 251", n)
			}
			if len(r.commits) != 3 {
				t.Errorf("Committed called %d times, want once per batch of 3 pages (3)", len(r.commits))
			}
			// mtime is the datestamp.
			rec, _ := r.s.Get("oai:x:a/b?c")
			fi, err := os.Stat(filepath.Join(r.cfg.Dir, RecordPath("oai:x:a/b?c", oai.DCPrefix)))
			if err != nil || !fi.ModTime().Equal(rec.Datestamp) {
				t.Errorf("mtime %v, want the datestamp %v (%v)", fi.ModTime(), rec.Datestamp, err)
			}
			if s := r.h.Status(); s.Records != 251 || s.Granularity != g.String() || s.LastError != "" {
				t.Errorf("Status = %+v", s)
			}

			// Unchanged re-harvest: nothing written, no file touched.
			before := r.ids()
			r.commits = nil
			r.s.Advance(time.Hour)
			st = r.harvest()
			if st.Written != 0 || st.Deleted != 0 || len(r.commits) != 0 || st.Full {
				t.Errorf("unchanged re-harvest: %+v, commits %v", st, r.commits)
			}
			if after := r.ids(); !maps_equal(before, after) {
				t.Error("unchanged re-harvest touched files")
			}

			// Changes: two updates, an addition, a deletion.
			r.s.Advance(48 * time.Hour)
			r.s.Touch(oaitest.GenID(3))
			r.s.Touch(oaitest.GenID(200))
			r.s.Put("oai:x:new", nil, dc("new"))
			r.s.Delete(oaitest.GenID(7))
			r.commits = nil
			st = r.harvest()
			if st.Written != 3 || st.Deleted != 1 || st.Unchanged != 0 && g == oai.Second {
				t.Errorf("incremental harvest: %+v", st)
			}
			r.check(oai.DCPrefix)
			c := r.committed()
			for _, id := range []string{oaitest.GenID(3), oaitest.GenID(200), "oai:x:new", oaitest.GenID(7)} {
				if c[RecordPath(id, oai.DCPrefix)] != 1 {
					t.Errorf("%s not committed once: %v", id, c)
				}
			}
			// The incremental froms: the start of the previous harvest
			// minus one granule.
			start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			want := []string{"", g.Format(start.Add(-g.Unit())), g.Format(start.Add(time.Hour - g.Unit()))}
			if !slices.Equal(froms, want) {
				t.Errorf("from = %q, want %q", froms, want)
			}
			if s := r.h.Status(); s.Records != 251 {
				t.Errorf("Status.Records = %d, want 251", s.Records)
			}
		})
	}
}

func maps_equal(a, b map[string]fileID) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !os.SameFile(w.fi, v.fi) || !w.mtime.Equal(v.mtime) {
			return false
		}
	}
	return true
}

// TestBoundaryOverlap: a record stamped in the granule the last harvest
// started in, after that harvest looked, is caught by the next one.
func TestBoundaryOverlap(t *testing.T) {
	for _, g := range []oai.Granularity{oai.Second, oai.Day} {
		t.Run(g.String(), func(t *testing.T) {
			r := newRig(t, oaitest.Options{Granularity: g, Start: time.Date(2024, 5, 5, 10, 0, 0, 0, time.UTC)}, nil)
			r.s.Put("oai:x:1", nil, dc("one"))
			r.harvest()
			// Same second (and day) as the harvest's start.
			r.s.Put("oai:x:2", nil, dc("two"))
			r.s.Put("oai:x:1", nil, dc("one, changed"))
			st := r.harvest()
			if st.Written != 2 {
				t.Errorf("second harvest wrote %d, want 2", st.Written)
			}
			r.check(oai.DCPrefix)
		})
	}
}

// TestNamespacePlacement: the canonical bytes do not depend on where the
// repository declared the namespaces.
func TestNamespacePlacement(t *testing.T) {
	const want = `<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/"><dc:title xmlns:dc="http://purl.org/dc/elements/1.1/" xml:lang="en">A &amp; B</dc:title><dc:creator xmlns:dc="http://purl.org/dc/elements/1.1/">C</dc:creator></oai_dc:dc>`
	nsRoot := map[string]string{"oai_dc": oai.DCNamespace, "dc": oai.DCElements}
	for _, tc := range []struct {
		name string
		ns   map[string]string
		meta string
	}{
		{"on the child", nil, `<oai_dc:dc xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:unused="u"><dc:title xml:lang='en'>A &#38; B</dc:title><dc:creator>C</dc:creator></oai_dc:dc>`},
		{"on each element", nil, `<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/"><dc:title xmlns:dc="http://purl.org/dc/elements/1.1/" xml:lang="en"><![CDATA[A & B]]></dc:title><!-- c --><dc:creator xmlns:dc="http://purl.org/dc/elements/1.1/">C</dc:creator></oai_dc:dc>`},
		{"on the response's root", nsRoot, `<oai_dc:dc><dc:title xml:lang="en">A &amp; B</dc:title><dc:creator>C</dc:creator></oai_dc:dc>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, oaitest.Options{Namespaces: tc.ns}, nil)
			r.s.Put("oai:x:1", nil, map[string]string{oai.DCPrefix: tc.meta})
			r.harvest()
			if got := r.files()[RecordPath("oai:x:1", oai.DCPrefix)]; got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestTokenExpiry: a token that expires in the middle of a list makes the
// harvester list again from the saved from; nothing is lost or written
// twice.
func TestTokenExpiry(t *testing.T) {
	setBatch(t, 2) // pages 1 and 2 committed before the expiry
	r := newRig(t, oaitest.Options{PageSize: 10}, nil)
	r.s.Generate(55)
	n := 0
	r.s.OnRequest(func(verb string, q url.Values) {
		if verb == oai.ListRecords {
			if n++; n == 3 {
				r.s.ExpireTokens()
			}
		}
	})
	st := r.harvest()
	if st.Written != 55 || st.Unchanged != 20 {
		t.Errorf("harvest with an expired token: %+v", st)
	}
	if !strings.Contains(r.logb.String(), "resumption token refused") {
		t.Errorf("expiry not logged:\n%s", r.logb)
	}
	r.check(oai.DCPrefix)
	for p, k := range r.committed() {
		if k != 1 {
			t.Errorf("%s committed %d times", p, k)
		}
	}
}

// TestRetryAfter: 503 and 429 with Retry-After are retried after the
// wait asked for.
func TestRetryAfter(t *testing.T) {
	for _, code := range []int{503, 429} {
		r := newRig(t, oaitest.Options{}, nil)
		r.s.Put("oai:x:1", nil, dc("one"))
		r.s.Fail(1, code, time.Second)
		t0 := time.Now()
		r.harvest()
		if d := time.Since(t0); d < time.Second {
			t.Errorf("%d: harvest took %v, less than the Retry-After", code, d)
		}
		if n := r.s.Requests(""); n != 3 {
			t.Errorf("%d: %d requests, want 3", code, n)
		}
		r.check(oai.DCPrefix)
	}
}

// TestMalformed: bad records are skipped with a warning naming them.
func TestMalformed(t *testing.T) {
	r := newRig(t, oaitest.Options{PageSize: 7}, nil)
	r.s.Generate(30)
	r.s.Put("oai:x:undeclared", nil, map[string]string{oai.DCPrefix: `<a:b>x</a:b>`})
	r.s.SetMalformed(oaitest.GenID(2), oaitest.BadXML)
	r.s.SetMalformed(oaitest.GenID(9), oaitest.BadUTF8)
	r.s.SetMalformed(oaitest.GenID(20), oaitest.NoIdentifier)
	st := r.harvest()
	if st.Malformed != 4 || st.Written != 27 {
		t.Errorf("harvest: %+v", st)
	}
	log := r.logb.String()
	for _, id := range []string{oaitest.GenID(2), oaitest.GenID(9), "oai:x:undeclared", "identifier=(none)"} {
		if !strings.Contains(log, id) {
			t.Errorf("no warning naming %s:\n%s", id, log)
		}
	}
	r.check(oai.DCPrefix)
	got := r.files()
	if len(got) != 27 {
		t.Errorf("%d files, want 27", len(got))
	}
	if _, ok := got[RecordPath(oaitest.GenID(21), oai.DCPrefix)]; !ok {
		t.Error("the record after a malformed one is missing")
	}
}

// TestDeletedRecordNo: a repository that keeps no deleted records is
// reconciled by the full pass (ListRecords without from), which removes
// nothing unless it completed.
func TestDeletedRecordNo(t *testing.T) {
	r := newRig(t, oaitest.Options{PageSize: 10, DeletedRecord: "no"}, func(c *Config) { c.FullEvery = time.Hour })
	r.s.Generate(35)
	r.harvest()
	r.s.Advance(30 * time.Minute)
	r.s.Delete(oaitest.GenID(4))
	r.s.Delete(oaitest.GenID(31))
	if st := r.harvest(); st.Full || st.Deleted != 0 {
		t.Errorf("harvest before the pass is due: %+v", st)
	}
	// The pass fails halfway: nothing removed.
	r.s.Advance(time.Hour)
	pass := 0
	r.s.OnRequest(func(verb string, q url.Values) {
		if verb != oai.ListRecords || q.Has("from") {
			return
		}
		if pass > 0 || !q.Has("resumptionToken") {
			if pass++; pass == 2 {
				r.s.Fail(100, 404, 0)
			}
		}
	})
	if _, err := r.h.Harvest(context.Background()); err == nil {
		t.Fatal("harvest with a failing pass succeeded")
	}
	if len(r.files()) != 35 {
		t.Errorf("interrupted pass removed files: %d left", len(r.files()))
	}
	if s := r.h.Status(); s.LastError == "" {
		t.Error("Status.LastError empty after a failure")
	}
	// Completed: the two are removed and committed.
	r.s.Fail(0, 0, 0)
	r.commits = nil
	st := r.harvest()
	if !st.Full || st.Deleted != 2 {
		t.Errorf("harvest with the pass: %+v", st)
	}
	r.check(oai.DCPrefix)
	c := r.committed()
	if len(c) != 2 || c[RecordPath(oaitest.GenID(4), oai.DCPrefix)] != 1 {
		t.Errorf("committed %v", c)
	}
}

// TestResume: a harvest stopped in the middle of a list, by a failure
// of Committed (the journal) or of the repository, resumes in a new
// process where it stopped: the page whose Committed failed is reported
// again; no page is lost and none before it is requested twice.
func TestResume(t *testing.T) {
	for _, tc := range []struct {
		name        string
		journal     bool
		commits     int // successful Committed calls before the failure
		wantErr     string
		pagesLeft   int
		writtenLeft int
	}{
		{"journal fails", true, 2, "journal refused", 3, 30},
		{"repository fails", false, 3, "Not Found", 3, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setBatch(t, 1) // TestKillBatch covers batches of pages
			r := newRig(t, oaitest.Options{PageSize: 10}, nil)
			r.s.Generate(60)
			if tc.journal {
				r.failAfter = 3
			} else {
				n := 0
				r.s.OnRequest(func(verb string, q url.Values) {
					if verb == oai.ListRecords {
						if n++; n == 4 {
							r.s.Fail(1, 404, 0)
						}
					}
				})
			}
			if _, err := r.h.Harvest(context.Background()); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Harvest = %v, want %q", err, tc.wantErr)
			}
			if len(r.commits) != tc.commits {
				t.Fatalf("%d pages committed before the failure, want %d", len(r.commits), tc.commits)
			}
			// A new process on the same state.
			r.h.Close()
			r.open()
			before := r.s.Requests(oai.ListRecords)
			st := r.harvest()
			if got := r.s.Requests(oai.ListRecords) - before; got != tc.pagesLeft {
				t.Errorf("resumed harvest asked for %d pages, want the %d left", got, tc.pagesLeft)
			}
			if st.Written != tc.writtenLeft || !st.Full {
				t.Errorf("resumed harvest: %+v", st)
			}
			c := r.committed()
			if len(c) != 60 || len(r.commits) != 6 {
				t.Errorf("%d paths in %d commits, want 60 in 6", len(c), len(r.commits))
			}
			for p, k := range c {
				if k != 1 {
					t.Errorf("%s committed %d times", p, k)
				}
			}
			r.check(oai.DCPrefix)
		})
	}
}

// TestSetsAndPrefixes: each prefix × set is listed; a record in two sets
// is written once.
func TestSetsAndPrefixes(t *testing.T) {
	r := newRig(t, oaitest.Options{}, func(c *Config) {
		c.Prefixes = []string{oai.DCPrefix, "marc"}
		c.Sets = []string{"a", "b"}
	})
	r.s.AddFormat("marc", "http://www.loc.gov/standards/marcxml/schema/MARC21slim.xsd", "http://www.loc.gov/MARC21/slim")
	m := dc("both")
	m["marc"] = `<record xmlns="http://www.loc.gov/MARC21/slim"><leader>x</leader></record>`
	r.s.Put("oai:x:1", []string{"a", "b"}, m)
	r.s.Put("oai:x:2", []string{"c"}, dc("neither"))
	st := r.harvest()
	if st.Written != 2 || st.Unchanged != 2 {
		t.Errorf("harvest: %+v", st)
	}
	var got []string
	for p := range r.files() {
		got = append(got, p)
	}
	sort.Strings(got)
	want := []string{RecordPath("oai:x:1", "marc"), RecordPath("oai:x:1", oai.DCPrefix)}
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
}

func TestNewChecks(t *testing.T) {
	d := t.TempDir()
	for _, c := range []Config{
		{Endpoint: "ftp://x/", Dir: d, State: d + "/s"},
		{Endpoint: "http://127.0.0.1/", Dir: d, State: filepath.Join(d, "state")},
		{Endpoint: "http://127.0.0.1/", Dir: d},
	} {
		if h, err := New(c); err == nil {
			h.Close()
			t.Errorf("New(%+v) accepted", c)
		}
	}
}
