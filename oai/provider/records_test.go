package provider

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/oai"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
)

const dcRecord = `<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>%s</dc:title></oai_dc:dc>`

// Harvested records (harvest.RecordPath files) are served as themselves:
// their identifiers, their formats, their bytes; deleted ones as deleted.
func TestRecords(t *testing.T) {
	ids := []string{"oai:arXiv.org:1234.5678", "oai:repo:a/b c", "oai:repo:x%25y&z"}
	files := map[string]string{"default/README.txt": "not a record"}
	for _, id := range ids {
		files["default/"+harvest.RecordPath(id, "oai_dc")] = strings.Replace(dcRecord, "%s", "title of "+strings.NewReplacer("&", "&amp;").Replace(id), 1)
	}
	files["default/"+harvest.RecordPath(ids[0], "rec")] = `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<rec xmlns="urn:example:rec">R</rec>`
	f := newFixture(t, []string{"default"}, files, 2)
	f.clk.Set(f.clk.Now().Add(time.Hour))
	f.remove("default/" + harvest.RecordPath(ids[1], "oai_dc"))
	f.update()
	c, err := NewStoreRecords(StoreSet{Name: "default", Dir: f.dirs["default"], Store: f.src.Store("default"), Base: f.src.ResourceBase("default")})
	if err != nil {
		t.Fatal(err)
	}
	f.h, err = New(c, Config{BaseURL: f.srv.URL + "/oai", PageSize: 2, Now: f.clk.Now,
		Formats: []Format{{Prefix: "rec", Namespace: recNS, Schema: "http://example.org/rec.xsd"}}})
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]byte{}
	get := func(q string) response { b := f.get(q); docs[q] = b; return parse(t, b) }
	// Every oai_dc record, through tokens.
	var got []string
	q := "verb=ListRecords&metadataPrefix=oai_dc"
	for {
		r := get(q)
		for _, rec := range r.Records {
			got = append(got, rec.Header.Identifier+" "+rec.Header.Status+" "+rec.Metadata.Inner)
		}
		if r.RecToken == nil || r.RecToken.Value == "" {
			break
		}
		q = "verb=ListRecords&resumptionToken=" + url.QueryEscape(r.RecToken.Value)
	}
	want := map[string]bool{
		ids[0] + "  " + strings.Replace(dcRecord, "%s", "title of "+ids[0], 1): ids[0] != "",
		ids[1] + " deleted ": true,
		ids[2] + "  " + strings.Replace(dcRecord, "%s", "title of oai:repo:x%25y&amp;z", 1): true,
	}
	if len(got) != len(want) {
		t.Fatalf("records: %q", got)
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("unexpected record %q", g)
		}
	}
	r := get("verb=GetRecord&metadataPrefix=rec&identifier=" + url.QueryEscape(ids[0]))
	if r.Record == nil || r.Record.Metadata.Inner != `<rec xmlns="urn:example:rec">R</rec>` {
		t.Errorf("GetRecord rec: %+v", r)
	}
	if r := get("verb=ListMetadataFormats&identifier=" + url.QueryEscape(ids[0])); strings.Join(r.Formats, ",") != "oai_dc,rec" {
		t.Errorf("formats of %s: %v", ids[0], r.Formats)
	}
	if r := get("verb=ListMetadataFormats&identifier=" + url.QueryEscape(ids[2])); strings.Join(r.Formats, ",") != "oai_dc" {
		t.Errorf("formats of %s: %v", ids[2], r.Formats)
	}
	if r := get("verb=GetRecord&metadataPrefix=rec&identifier=" + url.QueryEscape(ids[2])); r.code() != oai.CannotDisseminateFormat {
		t.Errorf("GetRecord in a format it lacks: %v", r.Errors)
	}
	if r := get("verb=GetRecord&metadataPrefix=oai_dc&identifier=%25bad%25"); r.code() != oai.IDDoesNotExist {
		t.Errorf("GetRecord of an unknown identifier: %v", r.Errors)
	}
	if r := get("verb=ListIdentifiers&metadataPrefix=rec"); len(r.Headers) != 1 || r.Headers[0].Identifier != ids[0] {
		t.Errorf("ListIdentifiers rec: %+v", r.Headers)
	}
	if r := get("verb=ListSets"); r.code() != oai.NoSetHierarchy {
		t.Errorf("ListSets: %v", r.Errors)
	}
	get("verb=Identify")
	validate(t, docs)
}
