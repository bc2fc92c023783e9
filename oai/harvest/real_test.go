package harvest_test

// The harvester against OAI-PMH data providers nobody here wrote (issue
// 21, section 3): HTTP::OAI's static repository gateway run as CGI, and
// recorded responses of real DSpace, ArchivesSpace and arXiv repositories
// replayed with the faults real repositories have (internal/testing/oaireal).

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/oaireal"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
)

// realHarvester is a Harvester of endpoint into fresh directories, with a
// loopback-only client, recording what it commits.
type realHarvester struct {
	*harvest.Harvester
	dir       string
	mu        sync.Mutex
	committed []string
	commits   int
	failAt    int // the Committed call that fails (0: none), as a crash would
}

func newReal(t *testing.T, endpoint string, edit func(*harvest.Config)) *realHarvester {
	t.Helper()
	c, _ := testnet.Client(t)
	rh := &realHarvester{dir: t.TempDir()}
	cfg := harvest.Config{
		Endpoint: endpoint,
		Dir:      rh.dir,
		State:    t.TempDir(),
		Client:   c,
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Committed: func(ctx context.Context, paths []string) error {
			rh.mu.Lock()
			defer rh.mu.Unlock()
			rh.commits++
			if rh.commits == rh.failAt {
				return errors.New("test: the journal failed")
			}
			rh.committed = append(rh.committed, paths...)
			return nil
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	h, err := harvest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	rh.Harvester = h
	return rh
}

func (rh *realHarvester) harvest(t *testing.T) harvest.Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := rh.Harvest(ctx)
	if err != nil {
		t.Fatalf("Harvest: %v (stats %+v)", err, st)
	}
	t.Logf("harvest: %+v", st)
	return st
}

// files lists the record files under the harvester's Dir (slash paths).
func (rh *realHarvester) files(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(rh.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(rh.dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func (rh *realHarvester) read(t *testing.T, identifier, prefix string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rh.dir, filepath.FromSlash(harvest.RecordPath(identifier, prefix))))
	if err != nil {
		t.Fatalf("record %s (%s): %v", identifier, prefix, err)
	}
	return b
}

// xmlNode is a namespace-resolved element tree: what two serialisations of
// the same metadata share whatever prefixes, attribute order and placement
// of namespace declarations each chose.
type xmlNode struct {
	Name     xml.Name
	Attrs    []xml.Attr // without namespace declarations, sorted
	Children []any      // *xmlNode or string (character data, verbatim)
}

func parseTree(b []byte) (*xmlNode, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	var stack []*xmlNode
	var root *xmlNode
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &xmlNode{Name: t.Name}
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
					continue
				}
				n.Attrs = append(n.Attrs, a)
			}
			slices.SortFunc(n.Attrs, func(a, b xml.Attr) int {
				return strings.Compare(a.Name.Space+" "+a.Name.Local, b.Name.Space+" "+b.Name.Local)
			})
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.Children = append(p.Children, n)
			} else if root == nil {
				root = n
			} else {
				return nil, errors.New("two root elements")
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				if k := len(p.Children); k > 0 {
					if s, ok := p.Children[k-1].(string); ok {
						p.Children[k-1] = s + string(t)
						continue
					}
				}
				p.Children = append(p.Children, string(t))
			}
		}
	}
	if root == nil {
		return nil, errors.New("no element")
	}
	return root, nil
}

func (n *xmlNode) String() string {
	var b strings.Builder
	var walk func(*xmlNode)
	walk = func(n *xmlNode) {
		fmt.Fprintf(&b, "<{%s}%s", n.Name.Space, n.Name.Local)
		for _, a := range n.Attrs {
			fmt.Fprintf(&b, " {%s}%s=%q", a.Name.Space, a.Name.Local, a.Value)
		}
		b.WriteString(">")
		for _, c := range n.Children {
			if cn, ok := c.(*xmlNode); ok {
				walk(cn)
			} else {
				fmt.Fprintf(&b, "%q", c)
			}
		}
		b.WriteString("</>")
	}
	walk(n)
	return b.String()
}

// sameXML fails t unless got (a record file) holds the same element as want
// (the metadata the repository was given or sent).
func sameXML(t *testing.T, what string, got, want []byte) {
	t.Helper()
	g, err := parseTree(got)
	if err != nil {
		t.Fatalf("%s: record file is not XML: %v\n%s", what, err, got)
	}
	w, err := parseTree(want)
	if err != nil {
		t.Fatalf("%s: expected metadata is not XML: %v", what, err)
	}
	if g.String() != w.String() {
		t.Fatalf("%s: record file differs from the repository's metadata:\n got %s\nwant %s\nfile:\n%s", what, g, w, got)
	}
}

// metadataOf returns the content of a recorded record's <metadata> element
// (the metadata child with the whitespace around it trimmed).
func metadataOf(t *testing.T, raw []byte) []byte {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("no metadata in %s: %v", raw, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "metadata" {
			start := d.InputOffset()
			if err := d.Skip(); err != nil {
				t.Fatal(err)
			}
			inner := raw[start:d.InputOffset()]
			inner = inner[:bytes.LastIndex(inner, []byte("</"))]
			return bytes.TrimSpace(inner)
		}
	}
}

// checkReplay fails t unless the harvester's Dir holds exactly the live
// records of prefix the replay serves, each with the repository's metadata.
func checkReplay(t *testing.T, rh *realHarvester, r *oaireal.Replay, prefix string) int {
	t.Helper()
	var want []string
	for _, rec := range r.Records(prefix) {
		if rec.Deleted {
			continue
		}
		want = append(want, harvest.RecordPath(rec.Identifier, prefix))
		sameXML(t, rec.Identifier, rh.read(t, rec.Identifier, prefix), metadataOf(t, rec.Raw))
	}
	slices.Sort(want)
	if got := rh.files(t); !slices.Equal(got, want) {
		t.Fatalf("record files:\n got %q\nwant %q", got, want)
	}
	return len(want)
}

// TestRealStaticGateway harvests HTTP::OAI's static repository gateway:
// every record, an unchanged re-harvest that writes nothing although the
// gateway serialises the metadata's namespace declarations in a different
// (hash) order on every request, changes, and a removal (the static format
// has no deleted records) found by the full pass.
func TestRealStaticGateway(t *testing.T) {
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	recs := oaireal.Records(30, 1, day)
	s := oaireal.StartStatic(t, recs)
	rh := newReal(t, s.URL, func(c *harvest.Config) { c.FullEvery = time.Nanosecond })

	check := func(recs []oaireal.StaticRecord) {
		t.Helper()
		var want []string
		for _, r := range recs {
			want = append(want, harvest.RecordPath(r.Identifier, "oai_dc"))
			sameXML(t, r.Identifier, rh.read(t, r.Identifier, "oai_dc"), []byte(r.Metadata))
		}
		slices.Sort(want)
		if got := rh.files(t); !slices.Equal(got, want) {
			t.Fatalf("record files:\n got %q\nwant %q", got, want)
		}
	}

	st := rh.harvest(t)
	if st.Written != 30 || st.Malformed != 0 {
		t.Fatalf("first harvest: %+v, want 30 written", st)
	}
	check(recs)
	if len(rh.committed) < 30 {
		t.Errorf("Committed saw %d paths, want the 30 written", len(rh.committed))
	}
	before := map[string][]byte{}
	for _, r := range recs {
		before[r.Identifier] = rh.read(t, r.Identifier, "oai_dc")
	}

	st = rh.harvest(t)
	if st.Written != 0 || st.Deleted != 0 {
		t.Fatalf("unchanged re-harvest: %+v, want nothing written or deleted", st)
	}
	for _, r := range recs {
		if b := rh.read(t, r.Identifier, "oai_dc"); !bytes.Equal(b, before[r.Identifier]) {
			t.Fatalf("%s: bytes changed on an unchanged re-harvest:\n%s\n%s", r.Identifier, before[r.Identifier], b)
		}
	}

	// Record 2 changes, 31 is new, 5 disappears.
	next := day.AddDate(0, 0, 1)
	recs[1].Metadata = oaireal.DC("title", "Record 2, version 2", "creator", "Ünïcode <&>")
	recs[1].Datestamp = next
	recs = append(recs[:4], recs[5:]...)
	recs = append(recs, oaireal.Records(31, 1, next)[30])
	if err := s.Set(recs); err != nil {
		t.Fatal(err)
	}
	// The full pass that finds record 5 gone is due once the gateway's
	// clock (whole seconds) has moved past the last harvest's start:
	// within the same second it is not, even with FullEvery 1ns.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	st = rh.harvest(t)
	if st.Written != 2 || st.Deleted != 1 {
		t.Fatalf("harvest after changes: %+v, want 2 written (record 2, record 31) and 1 deleted (record 5)", st)
	}
	check(recs)
}

// TestRealReplayDSpace harvests the recorded DSpace repository page by
// page, then its recording ten months later incrementally, then changes
// and deletions made here, through 503s, an expired token and malformed
// records.
func TestRealReplayDSpace(t *testing.T) {
	r := oaireal.StartReplay(t, oaireal.Recorded("dspace-eur-2003"))
	r.SetPageSize(5) // 16 records: 4 pages
	// The incremental harvests only: the full pass is off.
	rh := newReal(t, r.URL, func(c *harvest.Config) { c.FullEvery = -1 })

	st := rh.harvest(t)
	if st.Written != 16 || st.Pages < 4 {
		t.Fatalf("first harvest: %+v, want 16 written over at least 4 pages", st)
	}
	checkReplay(t, rh, r, "oai_dc")

	// The 2004 recording: 79 new records and 2 deleted ones the harvester
	// never saw; the harvest is incremental (from, overlapping a granule).
	if err := r.Load(oaireal.Recorded("dspace-eur-2004")); err != nil {
		t.Fatal(err)
	}
	r.SetDeletedRecord("persistent")
	n := len(r.Requests())
	st = rh.harvest(t)
	if st.Written != 79 || st.Full {
		t.Fatalf("incremental harvest: %+v, want 79 written, not a full harvest", st)
	}
	if got := checkReplay(t, rh, r, "oai_dc"); got != 95 {
		t.Fatalf("%d records after the 2004 harvest, want 95", got)
	}
	from := ""
	for _, q := range r.Requests()[n:] {
		if q.Get("verb") == "ListRecords" && q.Get("resumptionToken") == "" {
			from = q.Get("from")
		}
	}
	// The replay answers at the recording's time (2003-04-30T16:08:02Z,
	// its last datestamp 2003-04-29T15:57:01Z): from is one of those less a
	// granule, never the harvester's own clock.
	t.Logf("incremental from=%s", from)
	if !strings.HasPrefix(from, "2003-04-") {
		t.Errorf("incremental ListRecords from=%q, want the repository's time of the last harvest (2003-04-…) less a granule", from)
	}

	// Changes between harvests: a deletion, an update; 503s on the way.
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r.SetClock(at.Add(time.Minute))
	r.Delete("oai_dc", "hdl:1765/308", at)
	r.Put("oai_dc", "hdl:1765/309", at, []string{"1:2"}, oaireal.DC("title", "Moeilijk doen, herzien"))
	r.Fail(2, "1")
	st = rh.harvest(t)
	if st.Written != 1 || st.Deleted != 1 {
		t.Fatalf("harvest after a change and a deletion: %+v, want 1 written, 1 deleted", st)
	}
	checkReplay(t, rh, r, "oai_dc")
	if _, err := os.Stat(filepath.Join(rh.dir, harvest.RecordPath("hdl:1765/308", "oai_dc"))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("deleted record's file: %v", err)
	}

	// Malformed records are skipped, never abort the harvest.
	at = at.Add(time.Hour)
	r.SetClock(at.Add(time.Minute))
	r.PutRaw("oai_dc", "bad-utf8", at, []byte("<record><header><identifier>hdl:1765/bad-utf8</identifier><datestamp>"+r.Granularity().Format(at)+"</datestamp></header><metadata><oai_dc:dc xmlns:oai_dc=\"http://www.openarchives.org/OAI/2.0/oai_dc/\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:title>\xff\xfe</dc:title></oai_dc:dc></metadata></record>"))
	r.PutRaw("oai_dc", "no-identifier", at, []byte("<record><header><datestamp>"+r.Granularity().Format(at)+"</datestamp></header><metadata><oai_dc:dc xmlns:oai_dc=\"http://www.openarchives.org/OAI/2.0/oai_dc/\"/></metadata></record>"))
	r.Put("oai_dc", "hdl:1765/new", at, nil, oaireal.DC("title", "after the broken ones"))
	st = rh.harvest(t)
	if st.Malformed != 2 || st.Written != 1 {
		t.Fatalf("harvest with malformed records: %+v, want 2 malformed, 1 written", st)
	}
	sameXML(t, "hdl:1765/new", rh.read(t, "hdl:1765/new", "oai_dc"), []byte(oaireal.DC("title", "after the broken ones")))
}

// TestRealReplayExpiredToken: a token that expires mid-list (the
// repository restarted) does not lose records: the harvest fails or
// restarts the list, and the next harvest completes it.
func TestRealReplayExpiredToken(t *testing.T) {
	r := oaireal.StartReplay(t, oaireal.Recorded("dspace-eur-2003"), oaireal.Recorded("dspace-eur-2004"))
	r.SetPageSize(10)
	r.SetDeletedRecord("persistent")
	rh := newReal(t, r.URL, nil)
	r.ExpireNextToken()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := rh.Harvest(ctx); err != nil {
		t.Logf("harvest over an expired token: %v", err)
		rh.harvest(t)
	}
	checkReplay(t, rh, r, "oai_dc")
}

// TestRealReplayArchivesSpace: ArchivesSpace's recorded records (its own
// long opaque tokens replaced by the replay's, xmlns:dc redeclared on every
// element), 7 a page.
func TestRealReplayArchivesSpace(t *testing.T) {
	r := oaireal.StartReplay(t, oaireal.Recorded("archivesspace-2025"))
	r.SetPageSize(7)
	rh := newReal(t, r.URL, nil)
	if st := rh.harvest(t); st.Written != 25 {
		t.Fatalf("harvest: %+v, want 25 written", st)
	}
	checkReplay(t, rh, r, "oai_dc")
}

// TestRealReplayArxiv: arXiv's own metadata format (day granularity).
func TestRealReplayArxiv(t *testing.T) {
	r := oaireal.StartReplay(t, oaireal.Recorded("arxiv-2013"))
	rh := newReal(t, r.URL, func(c *harvest.Config) { c.Prefixes = []string{"arXiv"} })
	if st := rh.harvest(t); st.Written != 1 {
		t.Fatalf("harvest: %+v, want 1 written", st)
	}
	checkReplay(t, rh, r, "arXiv")
}

// TestRealReplayResume: a harvest that stops midway (here the journal
// fails on the third page) keeps the pages committed before and resumes
// from the last committed page with the repository's resumption token.
func TestRealReplayResume(t *testing.T) {
	r := oaireal.StartReplay(t, oaireal.Recorded("dspace-eur-2003"), oaireal.Recorded("dspace-eur-2004"))
	r.SetPageSize(10)
	r.SetDeletedRecord("persistent")
	harvest.SetBatch(t, 2)
	rh := newReal(t, r.URL, nil)
	rh.failAt = 3
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := rh.Harvest(ctx)
	if err == nil {
		t.Fatalf("harvest with a failing journal: no error (%+v)", st)
	}
	first := len(rh.files(t))
	if first == 0 || first >= 95 {
		t.Fatalf("%d record files after the failure, want the pages committed before it", first)
	}
	n := len(r.Requests())
	st = rh.harvest(t)
	var lists []string
	for _, q := range r.Requests()[n:] {
		if v := q.Get("verb"); v == "ListRecords" {
			lists = append(lists, q.Encode())
		}
	}
	if len(lists) == 0 || !strings.Contains(lists[0], "resumptionToken=") {
		t.Errorf("resumed harvest's first ListRecords: %q, want the token of the page after the last committed one", lists)
	}
	if st.Written+first != 95 {
		t.Errorf("resumed harvest wrote %d, %d before: want 95 in all", st.Written, first)
	}
	checkReplay(t, rh, r, "oai_dc")
	// Every record file reached the journal through a Committed call that
	// succeeded, the failed page's too.
	seen := map[string]bool{}
	for _, p := range rh.committed {
		seen[p] = true
	}
	for _, f := range rh.files(t) {
		if !seen[f] {
			t.Errorf("%s never committed", f)
		}
	}
}

// TestRealReplayFullPass: DSpace 2003 announces deletedRecord no, so a
// record it drops is only found missing by the full pass (ListRecords
// without from),
// and a pass that breaks midway (a truncated page) deletes nothing.
func TestRealReplayFullPass(t *testing.T) {
	r := oaireal.StartReplay(t, oaireal.Recorded("dspace-eur-2003"))
	r.SetPageSize(5)
	rh := newReal(t, r.URL, func(c *harvest.Config) { c.FullEvery = time.Nanosecond })
	rh.harvest(t)
	if !r.Remove("oai_dc", "hdl:1765/308") {
		t.Fatal("no hdl:1765/308 in the recording")
	}
	gone := filepath.Join(rh.dir, harvest.RecordPath("hdl:1765/308", "oai_dc"))
	// A day later by the repository's clock (responseDate has whole
	// seconds: within one the pass would not be due yet).
	r.SetClock(time.Date(2003, 5, 1, 16, 0, 0, 0, time.UTC))

	// The pass is interrupted on its second page (the harvest is
	// cancelled, as serve's shutdown or a kill would stop it, while the
	// repository dies mid-response).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pass := false
	r.Handle(func(w http.ResponseWriter, req *http.Request) bool {
		if req.Form.Get("verb") != "ListRecords" || req.Form.Has("from") {
			return false
		}
		if req.Form.Get("resumptionToken") == "" && !pass {
			pass = true
			return false
		}
		if !pass {
			return false
		}
		cancel()
		w.Header().Set("Content-Type", "text/xml")
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2003-05-01T16:00:00Z</responseDate><request verb="ListRecords">x</request><ListRecords><record><header><identifier>hdl:1765/3`)
		return true
	})
	st, err := rh.Harvest(ctx)
	t.Logf("harvest interrupted in the full pass: %+v, %v", st, err)
	if err == nil {
		t.Fatal("harvest interrupted in the full pass: no error")
	}
	if st.Deleted != 0 {
		t.Fatalf("an interrupted full pass deleted %d records", st.Deleted)
	}
	if _, err := os.Stat(gone); err != nil {
		t.Fatalf("an interrupted full pass removed the record: %v", err)
	}
	r.Handle(nil)
	if st = rh.harvest(t); st.Deleted != 1 {
		t.Fatalf("full pass: %+v, want 1 deleted", st)
	}
	checkReplay(t, rh, r, "oai_dc")
}

// TestRealReplayGranuleBoundary: a change the repository stamps one
// granule (second or day) before a harvest started but shows only after
// that harvest looked (a transaction committed late) is harvested next
// time: the one granule of overlap.
func TestRealReplayGranuleBoundary(t *testing.T) {
	for _, tc := range []struct {
		dir, prefix string
		unit        time.Duration
	}{
		{"archivesspace-2025", "oai_dc", time.Second},
		{"arxiv-2013", "arXiv", 24 * time.Hour},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			r := oaireal.StartReplay(t, oaireal.Recorded(tc.dir))
			start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			r.SetClock(start)
			rh := newReal(t, r.URL, func(c *harvest.Config) { c.Prefixes = []string{tc.prefix} })
			rh.harvest(t)
			r.Put(tc.prefix, "oai:boundary:1", start.Add(-tc.unit), nil, oaireal.DC("title", "stamped a granule early"))
			r.SetClock(start.Add(48 * time.Hour))
			if st := rh.harvest(t); st.Written != 1 {
				t.Fatalf("harvest after a change in the start granule: %+v, want 1 written", st)
			}
			checkReplay(t, rh, r, tc.prefix)
		})
	}
}
