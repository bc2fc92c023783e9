package harvest

import (
	"errors"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/oai"
)

const envelope = `<?xml version="1.0" encoding="UTF-8"?>
<oai:OAI-PMH xmlns:oai="http://www.openarchives.org/OAI/2.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
<oai:responseDate>2024-01-02T03:04:05Z</oai:responseDate><oai:request verb="ListRecords">http://x/</oai:request>
<oai:ListRecords>%s</oai:ListRecords></oai:OAI-PMH>`

func rec(id, meta string) string {
	return `<oai:record><oai:header><oai:identifier>` + id + `</oai:identifier><oai:datestamp>2024-01-01</oai:datestamp><oai:setSpec>s</oai:setSpec></oai:header><oai:metadata>` + meta + `</oai:metadata><oai:about><x><identifier>no</identifier></x></oai:about></oai:record>`
}

func parseAll(doc string) (*response, []*item, error) {
	var items []*item
	r, err := parseResponse(strings.NewReader(doc), func(it *item) error { items = append(items, it); return nil })
	return r, items, err
}

func TestParse(t *testing.T) {
	body := rec("ok1", `<dc:title>a</dc:title>`) +
		rec("badutf8", "<dc:title>\xff</dc:title>") +
		rec("mismatch", `<a><b></a>`) +
		rec("marc", `<record xmlns="http://www.loc.gov/MARC21/slim"><leader>l</leader></record>`) +
		rec("undeclared", `<q:x/>`) +
		rec("two", `<a/><b/>`) +
		`<oai:record><oai:header status="deleted"><oai:identifier>gone</oai:identifier><oai:datestamp>2024-01-01</oai:datestamp></oai:header></oai:record>` +
		`<oai:record><oai:header><oai:datestamp>2024-01-01</oai:datestamp></oai:header><oai:metadata><a/></oai:metadata></oai:record>` +
		rec("ok2", `<dc:title>b</dc:title>`) +
		`<oai:resumptionToken expirationDate="2024-02-01T00:00:00Z" completeListSize="100" cursor="10">tok&amp;1</oai:resumptionToken>`
	r, items, err := parseAll(strings.Replace(envelope, "%s", body, 1))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id, meta string
		bad      bool
	}{
		{"ok1", `<dc:title xmlns:dc="http://purl.org/dc/elements/1.1/">a</dc:title>`, false},
		{"badutf8", "", true},
		{"mismatch", "", true},
		{"marc", `<record xmlns="http://www.loc.gov/MARC21/slim"><leader>l</leader></record>`, false},
		{"undeclared", "", true},
		{"two", "", true},
		{"gone", "", false},
		{"", "", true},
		{"ok2", `<dc:title xmlns:dc="http://purl.org/dc/elements/1.1/">b</dc:title>`, false},
	}
	if len(items) != len(want) {
		t.Fatalf("%d items, want %d", len(items), len(want))
	}
	for i, w := range want {
		it := items[i]
		if it.Identifier != w.id || (it.Bad != nil) != w.bad || (!w.bad && string(it.Metadata) != w.meta) {
			t.Errorf("item %d = %q %q %v; want %q %q bad=%v", i, it.Identifier, it.Metadata, it.Bad, w.id, w.meta, w.bad)
		}
	}
	if !items[6].Deleted || items[0].Datestamp != "2024-01-01" || len(items[0].Sets) != 1 {
		t.Errorf("headers: %+v %+v", items[6], items[0])
	}
	if r.Token != "tok&1" || r.CompleteListSize != 100 || r.Cursor != 10 || r.Expiration != "2024-02-01T00:00:00Z" || r.Verb != oai.ListRecords || r.ResponseDate != "2024-01-02T03:04:05Z" {
		t.Errorf("response = %+v", r)
	}

	for _, tc := range []struct {
		doc  string
		want error
	}{
		{`<html><body>busy</body></html>`, errResponse},
		{``, errResponse},
		{strings.Replace(envelope, "%s", rec("x", "<a/>"), 1)[:300], errTruncated},
		{`<OAI-PMH><ListRecords></OAI-PMH>`, errResponse},
	} {
		if _, _, err := parseAll(tc.doc); !errors.Is(err, tc.want) {
			t.Errorf("parse(%.40q) = %v, want %v", tc.doc, err, tc.want)
		}
	}
	r, _, err = parseAll(`<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><error code="noRecordsMatch">none</error></OAI-PMH>`)
	if err != nil || r.Err == nil || r.Err.Code != oai.NoRecordsMatch || r.Err.Message != "none" {
		t.Errorf("error response: %+v %v", r, err)
	}
}

// FuzzParse: the parser never panics, and what it returns as a record's
// metadata is canonical.
func FuzzParse(f *testing.F) {
	f.Add([]byte(strings.Replace(envelope, "%s", rec("a", `<dc:t x="1">&amp;</dc:t>`)+rec("b", "<x>\xff</x>")+rec("c", "<y/>"), 1)))
	f.Add([]byte(`<OAI-PMH><ListIdentifiers><header status="deleted"><identifier>x</identifier></header><resumptionToken completeListSize="2"/></ListIdentifiers></OAI-PMH>`))
	f.Add([]byte(`<OAI-PMH><Identify><granularity>YYYY-MM-DD</granularity></Identify></OAI-PMH>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		_, items, err := parseAll(string(doc))
		if err != nil {
			return
		}
		for _, it := range items {
			if it.Bad != nil || it.Metadata == nil {
				continue
			}
			c, err := Canonical(it.Metadata)
			if err != nil || string(c) != string(it.Metadata) {
				t.Fatalf("metadata %q of %q not canonical: %q, %v", it.Metadata, doc, c, err)
			}
		}
	})
}

// TestParseResync: after a malformed record whose metadata holds elements
// of the record's own name, the parser finds the record's real end.
func TestParseResync(t *testing.T) {
	r := func(id, meta string) string {
		return `<record><header><identifier>` + id + `</identifier><datestamp>2024-01-01</datestamp></header><metadata>` + meta + `</metadata></record>`
	}
	doc := `<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><ListRecords>` +
		r("m1", `<record xmlns="M"><x>`+"\xff"+`</x><record/></record>`) +
		r("m2", `<record xmlns="M"><record><a></b></record></record>`) +
		r("ok", `<record xmlns="M"><record/></record>`) +
		`</ListRecords></OAI-PMH>`
	_, items, err := parseAll(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 || items[0].Bad == nil || items[1].Bad == nil || items[2].Bad != nil || items[2].Identifier != "ok" {
		for _, it := range items {
			t.Logf("%+v", it)
		}
		t.Fatalf("items wrong")
	}
}
