package harvest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/oai"
)

// fromShifted is a provider with the bug of a real PHP one: it answers
// from=D as if it were D a month later. It forwards to the repository at
// target with from moved a month forward.
func fromShifted(t *testing.T, target string, g oai.Granularity) string {
	c, _ := testnet.Client(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if f := q.Get("from"); f != "" {
			d, _, err := oai.ParseDatestamp(f)
			if err != nil {
				t.Errorf("from %q: %v", f, err)
			}
			q.Set("from", g.Format(d.AddDate(0, 1, 0)))
		}
		resp, err := c.Get(target + "?" + q.Encode())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/oai"
}

// TestFromBugFullPass: a repository whose from is a month off answers
// every incremental harvest with noRecordsMatch while records change. The
// full pass (now run for every repository, not only deletedRecord=no)
// lists the records, writes and journals exactly the changed ones (the
// others are compared by their canonical bytes and left alone), and says
// how many changes the repository's from missed.
func TestFromBugFullPass(t *testing.T) {
	for _, deleted := range []string{"persistent", "no"} {
		t.Run(deleted, func(t *testing.T) {
			s := oaitest.New(t, oaitest.Options{PageSize: 7, Granularity: oai.Day, DeletedRecord: deleted})
			r := newRig(t, oaitest.Options{}, func(c *Config) {
				c.Endpoint = fromShifted(t, s.URL, oai.Day)
				c.FullEvery = 24 * time.Hour
			})
			r.s = s
			s.Generate(30)
			if st := r.harvest(); st.Written != 30 {
				t.Fatalf("first harvest: %+v", st)
			}
			// Changes: the incremental harvests see none of them.
			s.Advance(time.Hour)
			s.Touch(oaitest.GenID(2))
			s.Touch(oaitest.GenID(17))
			s.Touch(oaitest.GenID(29))
			r.commits = nil
			if st := r.harvest(); st.Written != 0 || st.Full || st.Missed != 0 {
				t.Fatalf("incremental harvest through the bug: %+v (the provider's from is not wrong?)", st)
			}
			s.Advance(25 * time.Hour)
			s.Put("oai:x:new", nil, dc("new"))
			s.Delete(oaitest.GenID(5))
			before := r.ids()
			st := r.harvest()
			wantMissed := 5 // 3 changed, 1 new, 1 deleted
			if deleted == "no" {
				wantMissed = 4 // a deletion is found by the pass by design
			}
			if !st.Full || st.Written != 4 || st.Deleted != 1 || st.Missed != wantMissed || st.Unchanged != 26 {
				t.Errorf("full pass: %+v, want 4 written, 1 deleted, %d missed, 26 unchanged", st, wantMissed)
			}
			r.check(oai.DCPrefix)
			// Exactly the changed records were journaled; the others
			// were not rewritten.
			c := r.committed()
			var got []string
			for p := range c {
				got = append(got, p)
			}
			slices.Sort(got)
			var want []string
			for _, id := range []string{oaitest.GenID(2), oaitest.GenID(17), oaitest.GenID(29), "oai:x:new", oaitest.GenID(5)} {
				want = append(want, RecordPath(id, oai.DCPrefix))
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("journaled %v, want %v", got, want)
			}
			after := r.ids()
			for p, b := range before {
				if slices.Contains(want, p) {
					continue
				}
				if a, ok := after[p]; !ok || !os.SameFile(a.fi, b.fi) || !a.mtime.Equal(b.mtime) {
					t.Errorf("%s rewritten by the full pass though unchanged", p)
				}
			}
			if s := r.h.Status(); s.FullMissed != wantMissed || s.LastFull.IsZero() {
				t.Errorf("Status = %+v, want FullMissed %d", s, wantMissed)
			}
			if want := fmt.Sprintf("the repository's from missed %d changes", wantMissed); !strings.Contains(r.logb.String(), want) {
				t.Errorf("the log does not say %q:\n%s", want, r.logb)
			}
			// The next incremental harvest keeps the pass's count on the
			// status page.
			s.Advance(time.Hour)
			if st := r.harvest(); st.Full || st.Missed != 0 {
				t.Errorf("harvest after the pass: %+v", st)
			}
			if s := r.h.Status(); s.FullMissed != wantMissed {
				t.Errorf("Status after an incremental harvest: %+v", s)
			}
		})
	}
}

// TestFullEveryDisabled: a negative FullEvery (--oai-full-every 0) runs no
// full pass at all.
func TestFullEveryDisabled(t *testing.T) {
	r := newRig(t, oaitest.Options{DeletedRecord: "no"}, func(c *Config) { c.FullEvery = -1 })
	r.s.Generate(5)
	r.harvest()
	r.s.Advance(100 * 24 * time.Hour)
	r.s.Delete(oaitest.GenID(1))
	n := r.s.Requests(oai.ListRecords)
	if st := r.harvest(); st.Full || st.Deleted != 0 {
		t.Errorf("harvest with the pass disabled: %+v", st)
	}
	if k := r.s.Requests(oai.ListRecords) - n; k != 1 || r.s.Requests(oai.ListIdentifiers) != 0 {
		t.Errorf("%d ListRecords requests, %d ListIdentifiers: want the incremental one only", k, r.s.Requests(oai.ListIdentifiers))
	}
}

// TestSetLeftFullPass: a record that leaves the harvested set is not
// listed by the set's incremental harvests; the full pass of the set no
// longer returns it and its file is removed (journaled as a deletion).
// A pass that lists nothing at all (every list noRecordsMatch, as from a
// repository rebuilding its index) removes nothing.
func TestSetLeftFullPass(t *testing.T) {
	r := newRig(t, oaitest.Options{}, func(c *Config) { c.Sets = []string{"a"}; c.FullEvery = 24 * time.Hour })
	r.s.Put("oai:x:1", []string{"a"}, dc("one"))
	r.s.Put("oai:x:2", []string{"a", "b"}, dc("two"))
	r.s.Put("oai:x:3", []string{"b"}, dc("three"))
	r.s.Put("oai:x:4", []string{"a"}, dc("four"))
	if st := r.harvest(); st.Written != 3 {
		t.Fatalf("first harvest: %+v", st)
	}
	r.s.Advance(time.Hour)
	r.s.SetSets("oai:x:1", []string{"c"})
	r.s.SetSets("oai:x:2", []string{"b"})
	r.harvest()
	r.s.Advance(24 * time.Hour)
	r.commits = nil
	st := r.harvest()
	if !st.Full || st.Deleted != 2 {
		t.Errorf("full pass: %+v, want 2 deleted", st)
	}
	if got := r.files(); len(got) != 1 {
		t.Errorf("files: %v, want only oai:x:4's", got)
	}
	c := r.committed()
	if len(c) != 2 || c[RecordPath("oai:x:1", oai.DCPrefix)] != 1 || c[RecordPath("oai:x:2", oai.DCPrefix)] != 1 {
		t.Errorf("journaled %v", c)
	}
	// The last record leaves the set: the pass lists nothing and
	// removes nothing, with a warning.
	r.s.Advance(time.Hour)
	r.s.SetSets("oai:x:4", []string{"b"})
	r.s.Advance(24 * time.Hour)
	if st := r.harvest(); !st.Full || st.Deleted != 0 || len(r.files()) != 1 {
		t.Errorf("a pass listing nothing: %+v, %d files", st, len(r.files()))
	}
	if !strings.Contains(r.logb.String(), "listed no record at all") {
		t.Errorf("no warning:\n%s", r.logb)
	}
}

// TestSetHeader: a record listed for a harvested set whose header names
// sets none of which is (or lies under) a harvested one has left it: its
// file is removed, or not written. A header naming no set at all (many
// repositories leave setSpec out) keeps the record.
func TestSetHeader(t *testing.T) {
	sets1 := "<setSpec>a</setSpec>"
	x := newHostile(t, func(q map[string][]string) (string, string) {
		if q["verb"][0] == "Identify" {
			return "", fmt.Sprintf(identifyBody, "persistent")
		}
		if s := url.Values(q).Get("set"); s != "a" {
			t.Errorf("asked for set %q", s)
		}
		rec := func(id, sets string) string {
			return `<record><header><identifier>` + id + `</identifier><datestamp>2024-01-01T00:00:00Z</datestamp>` + sets + `</header><metadata><r xmlns="urn:r">` + id + `</r></metadata></record>`
		}
		return "", "<ListRecords>" + rec("oai:x:1", sets1) + rec("oai:x:2", "<setSpec>c</setSpec><setSpec>a:x</setSpec>") +
			rec("oai:x:3", "") + rec("oai:x:4", "<setSpec>ab</setSpec>") + "</ListRecords>"
	})
	x.h.Close()
	x.cfg.Sets = []string{"a"}
	h, err := New(x.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	x.h = h
	st, err := x.harvest()
	if err != nil || st.Written != 3 {
		t.Fatalf("harvest: %+v, %v; want 3 written (not oai:x:4, in set ab)", st, err)
	}
	sets1 = "<setSpec>c</setSpec>"
	st, err = x.harvest()
	if err != nil || st.Deleted != 1 || st.Written != 0 {
		t.Fatalf("harvest after oai:x:1 left set a: %+v, %v; want 1 deleted", st, err)
	}
	for id, want := range map[string]bool{"oai:x:1": false, "oai:x:2": true, "oai:x:3": true, "oai:x:4": false} {
		_, err := os.Stat(filepath.Join(x.cfg.Dir, filepath.FromSlash(RecordPath(id, oai.DCPrefix))))
		if (err == nil) != want {
			t.Errorf("%s: file exists %v, want %v", id, err == nil, want)
		}
	}
	if n := x.h.Status().Records; n != 2 {
		t.Errorf("Status.Records = %d, want 2", n)
	}
}

// nsBomb is a record declaring a uriLen-byte namespace URI once and using
// it on n children: the canonical form declares it on each child.
func nsBomb(uriLen, n int) string {
	uri := "urn:" + strings.Repeat("u", uriLen)
	return `<r xmlns:x="` + uri + `">` + strings.Repeat("<x:c/>", n) + `</r>`
}

// TestCanonicalBound: a record whose canonical form would grow far beyond
// its own size (a long namespace URI declared once, used on many
// children, declared again on each) is skipped with a warning naming it,
// and the harvest goes on; no file of it is written.
func TestCanonicalBound(t *testing.T) {
	old := maxCanonicalBytes
	maxCanonicalBytes = 4 << 20
	t.Cleanup(func() { maxCanonicalBytes = old })
	for _, tc := range []struct {
		name  string
		bomb  string
		multi bool // over the multiple of the input, not the cap
	}{
		// 64 KiB × 100 = 6.4 MiB > the 4 MiB cap; also > 16 × 71 KiB.
		{"cap", nsBomb(64<<10, 100), false},
		// 4 KiB × 300 = 1.2 MiB > 16 × 6 KiB (and 1 MiB), under the cap.
		{"multiple", nsBomb(4<<10, 300), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, oaitest.Options{}, nil)
			r.s.Put("oai:x:before", nil, dc("before"))
			r.s.Put("oai:x:bomb", nil, map[string]string{oai.DCPrefix: tc.bomb})
			r.s.Put("oai:x:after", nil, dc("after"))
			st := r.harvest()
			if st.Written != 2 || st.Malformed != 1 {
				t.Errorf("harvest: %+v, want 2 written, the bomb skipped", st)
			}
			if _, ok := r.files()[RecordPath("oai:x:bomb", oai.DCPrefix)]; ok {
				t.Error("the record's file was written")
			}
			if log := r.logb.String(); !strings.Contains(log, "oai:x:bomb") || !strings.Contains(log, "canonical form") {
				t.Errorf("no warning naming the record and why:\n%s", log)
			}
		})
	}
	// The same record well within the bounds is harvested.
	r := newRig(t, oaitest.Options{}, nil)
	r.s.Put("oai:x:fine", nil, map[string]string{oai.DCPrefix: nsBomb(100, 50)})
	if st := r.harvest(); st.Written != 1 || st.Malformed != 0 {
		t.Errorf("a record whose canonical form grows 8-fold: %+v", st)
	}
}

// TestCanonicalBoundDefault: with the default bound, the record of the
// attack (a 1 MiB URI on 1,000 children: 1 GiB canonical) is refused
// early, allocating a few times its own size, not gigabytes.
func TestCanonicalBoundDefault(t *testing.T) {
	doc := []byte(nsBomb(1<<20, 1000))
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	_, err := Canonical(doc)
	d := time.Since(t0)
	runtime.ReadMemStats(&m1)
	if err == nil || !strings.Contains(err.Error(), "canonical form") {
		t.Fatalf("Canonical: %v, want an error naming the canonical form's size", err)
	}
	t.Logf("a %d KiB record refused in %v, %d MiB allocated: %v", len(doc)>>10, d, (m1.TotalAlloc-m0.TotalAlloc)>>20, err)
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 128<<20 {
		t.Errorf("Canonical allocated %d MiB for a %d KiB record", alloc>>20, len(doc)>>10)
	}
	if d > 10*time.Second {
		t.Errorf("Canonical took %v", d)
	}
}

// TestMaxRecords: a repository listing endless distinct records stops at
// MaxRecords with a clear error; the pages before are committed whole,
// the page that would cross the bound writes nothing (no temporary file
// left), and the state stays consistent across a restart.
func TestMaxRecords(t *testing.T) {
	var page int
	x := newHostile(t, func(q map[string][]string) (string, string) {
		if q["verb"][0] == "Identify" {
			return "", fmt.Sprintf(identifyBody, "persistent")
		}
		page++
		var b strings.Builder
		b.WriteString("<ListRecords>")
		for i := range 10 {
			id := fmt.Sprintf("oai:endless:%d-%d", page, i)
			b.WriteString(hrec(id, "2024-01-01T00:00:00Z", `<r xmlns="urn:r">`+id+`</r>`))
		}
		// Endless, but ends after 100 pages so that a harvester
		// without the bound finishes (and fails the test) rather
		// than filling the disk.
		if page < 100 {
			fmt.Fprintf(&b, "<resumptionToken>t%d</resumptionToken>", page)
		}
		b.WriteString("</ListRecords>")
		return "", b.String()
	})
	x.h.Close()
	var commits []string
	x.cfg.MaxRecords = 55
	x.cfg.Committed = func(_ context.Context, paths []string) error {
		commits = append(commits, paths...)
		return nil
	}
	open := func() {
		h, err := New(x.cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		x.h = h
	}
	open()
	st, err := x.harvest()
	if err == nil || !strings.Contains(err.Error(), "more than 55 records") {
		t.Fatalf("harvest of an endless repository: %+v, %v; want an error naming the bound", st, err)
	}
	if page > 10 {
		t.Errorf("%d pages asked for; the harvest should stop at the bound", page)
	}
	files := 0
	filepath.WalkDir(x.cfg.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if strings.HasPrefix(d.Name(), tmpPrefix) {
				t.Errorf("temporary file left: %s", p)
			}
			files++
		}
		return nil
	})
	if files != 50 || len(commits) != 50 || x.h.Status().Records != 50 {
		t.Errorf("%d files, %d journaled, Status.Records %d: want the 5 pages under the bound, 50", files, len(commits), x.h.Status().Records)
	}
	if s := x.h.Status(); !strings.Contains(s.LastError, "more than 55 records") {
		t.Errorf("Status.LastError = %q", s.LastError)
	}
	// A restart resumes at the page refused and refuses it again.
	x.h.Close()
	open()
	if x.h.Status().Records != 50 {
		t.Errorf("after a restart: %+v", x.h.Status())
	}
	if _, err := x.harvest(); err == nil || !strings.Contains(err.Error(), "more than 55 records") {
		t.Errorf("resumed harvest: %v", err)
	}
}

// TestMinFree: a page whose files would leave less than MinFree free on
// Dir's file system is not written (no file, no temporary file) and the
// harvest fails with a clear error; the next harvest with room writes it.
func TestMinFree(t *testing.T) {
	if _, ok, _ := freeBytes(t.TempDir()); !ok {
		t.Skip("the free space cannot be known on " + runtime.GOOS)
	}
	x := newHostile(t, func(q map[string][]string) (string, string) {
		if q["verb"][0] == "Identify" {
			return "", fmt.Sprintf(identifyBody, "persistent")
		}
		return "", "<ListRecords>" + hrec("oai:x:1", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) + hrec("oai:x:2", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) + "</ListRecords>"
	})
	x.h.Close()
	x.cfg.MinFree = 1 << 62
	h, err := New(x.cfg)
	if err != nil {
		t.Fatal(err)
	}
	x.h = h
	st, err := x.harvest()
	if !errors.Is(err, ErrLowDiskSpace) || !strings.Contains(err.Error(), "free on the file system") {
		t.Fatalf("harvest with no room: %+v, %v", st, err)
	}
	filepath.WalkDir(x.cfg.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("file left: %s", p)
		}
		return nil
	})
	h.Close()
	x.cfg.MinFree = -1
	if h, err = New(x.cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	x.h = h
	if st, err := x.harvest(); err != nil || st.Written != 2 {
		t.Fatalf("harvest with the floor off: %+v, %v", st, err)
	}
}
