package oaireal

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

func byID(recs []Harvested) map[string]Harvested {
	m := map[string]Harvested{}
	for _, r := range recs {
		m[r.Identifier] = r
	}
	return m
}

// TestStaticGatewayCatmandu: HTTP::OAI's gateway serves the static
// repository we write, and a second real harvester sees every change
// between harvests.
func TestStaticGatewayCatmandu(t *testing.T) {
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	recs := Records(12, 1, day)
	s := StartStatic(t, recs)

	got, err := Catmandu(t, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 12 {
		t.Fatalf("first harvest: %d records, want 12", len(got))
	}
	m := byID(got)
	for _, r := range recs {
		h, ok := m[r.Identifier]
		if !ok {
			t.Fatalf("%s not harvested", r.Identifier)
		}
		if h.Datestamp != "2026-03-01" || !strings.Contains(h.Metadata, "version 1<") ||
			!strings.Contains(h.Metadata, "Brody, Tim &amp; Sompel, Herbert &lt;OAI&gt;") ||
			!strings.Contains(h.Metadata, "ünïcödé") {
			t.Fatalf("%s harvested as %+v", r.Identifier, h)
		}
	}

	// Between harvests: record 2 changes, record 5 disappears, 13 is new.
	next := day.AddDate(0, 0, 1)
	recs[1].Metadata = DC("title", "Record 2, version 2")
	recs[1].Datestamp = next
	recs = append(recs[:4], recs[5:]...)
	recs = append(recs, Records(13, 1, next)[12])
	if err := s.Set(recs); err != nil {
		t.Fatal(err)
	}
	got, err = Catmandu(t, s.URL, "--from", next.Format("2006-01-02"))
	if err != nil {
		t.Fatal(err)
	}
	m = byID(got)
	// The gateway ignores from: every record, every harvest.
	if len(got) != 12 {
		t.Fatalf("second harvest: %d records, want 12 (the gateway ignores from)", len(got))
	}
	if _, ok := m["oai:oaireal.example:5"]; ok {
		t.Error("removed record 5 still harvested")
	}
	if h := m["oai:oaireal.example:2"]; h.Datestamp != "2026-03-02" || !strings.Contains(h.Metadata, "Record 2, version 2") {
		t.Errorf("changed record 2 harvested as %+v", h)
	}
	if h, ok := m["oai:oaireal.example:13"]; !ok || h.Datestamp != "2026-03-02" {
		t.Errorf("new record 13 harvested as %+v (present %v)", h, ok)
	}
}

// TestStaticGatewayProtocol: what the gateway answers beyond ListRecords,
// through a loopback-only client.
func TestStaticGatewayProtocol(t *testing.T) {
	s := StartStatic(t, Records(3, 1, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)))
	c, _ := testnet.Client(t)
	for _, tc := range []struct{ query, want string }{
		{"verb=Identify", "<granularity>YYYY-MM-DD</granularity>"},
		{"verb=Identify", "<deletedRecord>no</deletedRecord>"},
		{"verb=ListIdentifiers&metadataPrefix=oai_dc", "<identifier>oai:oaireal.example:3</identifier>"},
		{"verb=GetRecord&metadataPrefix=oai_dc&identifier=oai:oaireal.example:2", "Record 2, version 1"},
		{"verb=GetRecord&metadataPrefix=oai_dc&identifier=oai:nope", `code='idDoesNotExist'`},
		{"verb=ListSets", `code='noSetHierarchy'`},
		{"verb=ListRecords&resumptionToken=x", `code='badArgument'`},
		{"verb=Nope", `code='badVerb'`},
	} {
		body := get(t, c, s.URL+"?"+tc.query)
		if !strings.Contains(body, tc.want) {
			t.Errorf("%s: no %s in\n%.600s", tc.query, tc.want, body)
		}
	}
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b)
}

// TestRecordedFixtures: every recorded response parses, with the records
// the real repositories sent.
func TestRecordedFixtures(t *testing.T) {
	for _, tc := range []struct {
		dir            string
		prefix         string
		records, dels  int
		firstID, gran  string // firstID: one record's identifier
		identifyLoaded bool
	}{
		{"dspace-eur-2003", "oai_dc", 16, 0, "hdl:1765/308", "YYYY-MM-DDThh:mm:ssZ", true},
		{"dspace-eur-2004", "oai_dc", 81, 2, "hdl:1765/9", "YYYY-MM-DD", false},
		{"archivesspace-2025", "oai_dc", 25, 0, "oai:archivesspace:/repositories/2/archival_objects/1", "YYYY-MM-DDThh:mm:ssZ", true},
		{"arxiv-2013", "arXiv", 1, 0, "oai:arXiv.org:0801.3931", "YYYY-MM-DD", false},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			r := StartReplay(t, Recorded(tc.dir))
			recs := r.Records(tc.prefix)
			dels := 0
			for _, rec := range recs {
				if rec.Deleted {
					dels++
				}
			}
			if len(recs) != tc.records || dels != tc.dels {
				t.Fatalf("%d records (%d deleted), want %d (%d)", len(recs), dels, tc.records, tc.dels)
			}
			found := false
			for _, rec := range recs {
				found = found || rec.Identifier == tc.firstID
			}
			if !found {
				t.Errorf("no record %q", tc.firstID)
			}
			if g := r.Granularity().String(); g != tc.gran {
				t.Errorf("granularity %s, want %s", g, tc.gran)
			}
		})
	}
}

// TestReplayCatmandu: a real harvester walks the replayed DSpace recording
// page by page, then sees its later recording (changes and deletions)
// incrementally, retries a 503 and fails on an expired token.
func TestReplayCatmandu(t *testing.T) {
	r := StartReplay(t, Recorded("dspace-eur-2003"))
	// 16 records: 4 pages, 3 resumption tokens. (No 503 here: HTTP::OAI
	// sleeps Retry-After plus 10 s.)
	r.SetPageSize(5)
	got, err := Catmandu(t, r.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 16 {
		t.Fatalf("first harvest: %d records, want 16", len(got))
	}
	if h := byID(got)["hdl:1765/308"]; !strings.Contains(h.Metadata, "Kijken in het brein") || h.Datestamp != "2003-04-15T10:18:51Z" {
		t.Errorf("hdl:1765/308 harvested as %+v", h)
	}
	tokens := 0
	for _, q := range r.Requests() {
		if q.Get("resumptionToken") != "" {
			tokens++
		}
	}
	if tokens != 3 {
		t.Errorf("%d requests with a resumptionToken, want 3", tokens)
	}

	// Ten months later: the 2004 recording of the same repository.
	if err := r.Load(Recorded("dspace-eur-2004")); err != nil {
		t.Fatal(err)
	}
	r.SetDeletedRecord("persistent")
	got, err = Catmandu(t, r.URL, "--from", "2004-01-01")
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, h := range got {
		if h.Status == "deleted" {
			deleted++
		}
	}
	if len(got) != 81 || deleted != 2 {
		t.Fatalf("incremental harvest: %d records (%d deleted), want 81 (2)", len(got), deleted)
	}

	// Changes made here, between harvests.
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r.Delete(dcPrefix, "hdl:1765/308", at)
	r.Put(dcPrefix, "hdl:1765/309", at, []string{"1:2"}, DC("title", "Moeilijk doen, herzien"))
	got, err = Catmandu(t, r.URL, "--from", "2026-03-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	m := byID(got)
	if len(got) != 2 || m["hdl:1765/308"].Status != "deleted" || !strings.Contains(m["hdl:1765/309"].Metadata, "herzien") {
		t.Fatalf("after changes: %+v", got)
	}

	// An expired token ends Catmandu's harvest after the first page
	// without an error (it does not restart the list): the fault is
	// visible to a real harvester, and a harvester that trusts the list
	// loses records.
	r.ExpireNextToken()
	got, err = Catmandu(t, r.URL)
	t.Logf("harvest over an expired token: %d records, %v", len(got), err)
	if err == nil && len(got) != 5 {
		t.Fatalf("harvest over an expired token: %d records and no error, want the first page (5) or a failure", len(got))
	}
}

// TestReplayOAIPMH: HTTP::OAI's own command-line harvester lists the
// replayed ArchivesSpace recording, across tokens.
func TestReplayOAIPMH(t *testing.T) {
	r := StartReplay(t, Recorded("archivesspace-2025"))
	r.SetPageSize(7)
	out, err := OAIPMH(t, "-X", "ListIdentifiers", "--metadataPrefix", "oai_dc", r.URL)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "oai:archivesspace:/repositories/2/archival_objects/"); n != 25 {
		t.Fatalf("oai_pmh listed %d identifiers, want 25:\n%.2000s", n, out)
	}
}

// TestStaticGatewayOAIPMH: HTTP::OAI's harvester over HTTP::OAI's gateway.
func TestStaticGatewayOAIPMH(t *testing.T) {
	s := StartStatic(t, Records(4, 7, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)))
	out, err := OAIPMH(t, "--metadataPrefix", "oai_dc", s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), ", version 7</dc:title>"); n != 4 {
		t.Fatalf("oai_pmh got %d records, want 4:\n%.2000s", n, out)
	}
}

// TestReplayProtocol: the replay's own answers (errors, sets, tokens,
// malformed records).
func TestReplayProtocol(t *testing.T) {
	r := StartReplay(t, Recorded("dspace-eur-2003"))
	r.SetPageSize(100)
	c, _ := testnet.Client(t)
	for _, tc := range []struct{ query, want string }{
		{"verb=Identify", "<baseURL>" + r.URL + "</baseURL>"},
		{"verb=Identify", "<responseDate>2003-04-30T16:"}, // the recording's clock, running
		{"verb=ListRecords&metadataPrefix=oai_dc&set=1:1", "<identifier>hdl:1765/325</identifier>"},
		{"verb=ListRecords&metadataPrefix=oai_dc&from=2003-04-29T15:00:00Z", "<identifier>hdl:1765/323</identifier>"},
		{"verb=ListRecords&metadataPrefix=oai_dc&from=2004-01-01T00:00:00Z", `code="noRecordsMatch"`},
		{"verb=ListRecords&metadataPrefix=oai_dc&from=2003-13-29", `code="badArgument"`},
		{"verb=ListRecords&metadataPrefix=oai_dc&from=2003-04-29&until=2003-04-29T23:59:59Z", `code="badArgument"`},
		{"verb=ListRecords&metadataPrefix=marc", `code="cannotDisseminateFormat"`},
		{"verb=ListRecords&resumptionToken=nope", `code="badResumptionToken"`},
		{"verb=GetRecord&metadataPrefix=oai_dc&identifier=hdl:1765/315", "THE WOMEN'S MOVEMENT ONLINE"},
		{"verb=ListSets", "<setSpec>1:2</setSpec>"},
	} {
		if body := get(t, c, r.URL+"?"+tc.query); !strings.Contains(body, tc.want) {
			t.Errorf("%s: no %s in\n%.800s", tc.query, tc.want, body)
		}
	}
	// from at day granularity is wrong for this seconds repository, but
	// until and from at seconds filter: 4 records on 2003-04-29.
	body := get(t, c, r.URL+"?verb=ListIdentifiers&metadataPrefix=oai_dc&from=2003-04-29T00:00:00Z&until=2003-04-29T23:59:59Z")
	if n := strings.Count(body, "<header>"); n != 7 {
		t.Errorf("%d headers on 2003-04-29, want 7:\n%s", n, body)
	}
	r.Fail(2, "3")
	for range 2 {
		resp, err := c.Get(r.URL + "?verb=Identify")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "3" {
			t.Fatalf("Fail: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
		}
	}
	get(t, c, r.URL+"?verb=Identify")

	r.PutRaw(dcPrefix, "broken", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), []byte("<record><header><datestamp>2026-01-01T00:00:00Z</datestamp></header><metadata><oai_dc:dc>\xff</metadata></record>"))
	body = get(t, c, r.URL+"?verb=ListRecords&metadataPrefix=oai_dc&from=2026-01-01T00:00:00Z")
	if !strings.Contains(body, "<oai_dc:dc>\xff</metadata>") {
		t.Errorf("malformed record not served verbatim:\n%s", body)
	}
}

func FuzzParseResponse(f *testing.F) {
	for _, name := range []string{"dspace-eur-2003/Identify.xml", "dspace-eur-2003/GetRecord.xml", "archivesspace-2025/ListIdentifiers.xml", "arxiv-2013/ListRecords.xml"} {
		b, err := os.ReadFile(Testdata("recorded", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		resp, err := ParseResponse(doc)
		if err != nil {
			return
		}
		for _, rec := range resp.Records {
			if !bytes.HasPrefix(rec.Raw, []byte("<")) || !bytes.Contains(rec.Raw, rec.Header) {
				t.Fatalf("record %q: header %q not inside raw %q", rec.Identifier, rec.Header, rec.Raw)
			}
		}
	})
}
