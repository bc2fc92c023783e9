package provider

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/oai"
	"github.com/resourcesync-go/resourcesync/source"
)

// clock is a settable time source shared by the Source and the provider.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// fixture is a Source over real directories, its state, and the provider
// serving it.
type fixture struct {
	t    *testing.T
	dirs map[string]string
	src  *source.Source
	clk  *clock
	srv  *httptest.Server
	h    *Handler
}

const recNS = "urn:example:rec"

func newFixture(t *testing.T, sets []string, files map[string]string, pageSize int) *fixture {
	t.Helper()
	tmp := t.TempDir()
	f := &fixture{t: t, dirs: map[string]string{}, clk: &clock{t: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}}
	var cfg source.Config
	for _, s := range sets {
		d := filepath.Join(tmp, s)
		os.MkdirAll(d, 0o755)
		f.dirs[s] = d
		cfg.Sets = append(cfg.Sets, source.SetConfig{Name: s, Dir: d})
	}
	for p, c := range files {
		f.write(p, c)
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.h.ServeHTTP(w, r) }))
	t.Cleanup(f.srv.Close)
	cfg.BaseURL = "http://repo.example.org/data/"
	cfg.StateDir = filepath.Join(tmp, "state")
	cfg.Now = f.clk.Now
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	src, err := source.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	f.src = src
	f.update()
	var ss []StoreSet
	for _, s := range sets {
		ss = append(ss, StoreSet{Name: s, Dir: f.dirs[s], Store: src.Store(s), Base: src.ResourceBase(s)})
	}
	c, err := NewStoreCollection(ss)
	if err != nil {
		t.Fatal(err)
	}
	f.h, err = New(c, Config{BaseURL: f.srv.URL + "/oai", RepositoryIdentifier: "repo.example.org", PageSize: pageSize,
		Formats: []Format{{Prefix: "rec", Namespace: recNS, Schema: "http://example.org/rec.xsd"}}, Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// write puts a file; p is "SET/path".
func (f *fixture) write(p, content string) {
	set, rel, _ := strings.Cut(p, "/")
	fp := filepath.Join(f.dirs[set], filepath.FromSlash(rel))
	os.MkdirAll(filepath.Dir(fp), 0o755)
	if err := os.WriteFile(fp, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) remove(p string) {
	set, rel, _ := strings.Cut(p, "/")
	if err := os.Remove(filepath.Join(f.dirs[set], filepath.FromSlash(rel))); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) update() {
	f.t.Helper()
	if _, err := f.src.Update(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) get(query string) []byte {
	f.t.Helper()
	resp, err := http.Get(f.srv.URL + "/oai?" + query)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		f.t.Fatalf("%s: %d %v", query, resp.StatusCode, err)
	}
	return b
}

// response is the parts of an OAI-PMH response the tests look at.
type response struct {
	Request struct {
		Attrs []xml.Attr `xml:",any,attr"`
	} `xml:"request"`
	Errors []struct {
		Code string `xml:"code,attr"`
	} `xml:"error"`
	Identify struct {
		Earliest string `xml:"earliestDatestamp"`
		Deleted  string `xml:"deletedRecord"`
	} `xml:"Identify"`
	Formats []string `xml:"ListMetadataFormats>metadataFormat>metadataPrefix"`
	Sets    []string `xml:"ListSets>set>setSpec"`
	Headers []header `xml:"ListIdentifiers>header"`
	Records []record `xml:"ListRecords>record"`
	Record  *record  `xml:"GetRecord>record"`
	Token   *struct {
		Value   string `xml:",chardata"`
		Expires string `xml:"expirationDate,attr"`
	} `xml:"ListIdentifiers>resumptionToken"`
	RecToken *struct {
		Value string `xml:",chardata"`
	} `xml:"ListRecords>resumptionToken"`
}

type header struct {
	Status     string   `xml:"status,attr"`
	Identifier string   `xml:"identifier"`
	Datestamp  string   `xml:"datestamp"`
	Sets       []string `xml:"setSpec"`
}

type record struct {
	Header   header `xml:"header"`
	Metadata struct {
		Inner string `xml:",innerxml"`
	} `xml:"metadata"`
}

func parse(t *testing.T, b []byte) response {
	t.Helper()
	var r response
	if err := xml.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return r
}

func (r response) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	return r.Errors[0].Code
}

// validate runs xmllint over every document against the OAI-PMH schema
// (with oai_dc's and the test format's).
func validate(t *testing.T, docs map[string][]byte) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatalf("xmllint not found (apt-get install libxml2-utils): %v", err)
	}
	dir := t.TempDir()
	args := []string{"--noout", "--nonet", "--schema", filepath.Join("testdata", "schemas", "all.xsd")}
	i := 0
	for name, b := range docs {
		p := filepath.Join(dir, fmt.Sprintf("%03d.xml", i))
		i++
		os.WriteFile(p, b, 0o644)
		args = append(args, p)
		t.Logf("%s: %s", p, name)
	}
	out, err := exec.Command(xmllint, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("xmllint: %v\n%s", err, out)
	}
}

var baseFiles = map[string]string{
	"default/a.txt":         "hello\n",
	"default/dir/b.xml":     `<?xml version="1.0" encoding="UTF-8"?>` + "\n<!-- a comment -->\n" + `<r:rec xmlns:r="urn:example:rec"><r:t>B</r:t></r:rec>` + "\n",
	"default/c.xml":         `<other xmlns="urn:example:other"/>`,
	"default/sp ace.txt":    "space\n",
	"default/gone.txt":      "to be deleted\n",
	"default/notxml.xml":    "<rec xmlns='urn:example:rec'>unclosed",
	"default/ünï/cødé.html": "<p>x</p>",
}

// Every verb, and every error, validates against the schema and answers
// what the protocol says.
func TestVerbsAndErrorsValidate(t *testing.T) {
	f := newFixture(t, []string{"default"}, baseFiles, 2)
	f.clk.Set(f.clk.Now().Add(time.Hour))
	f.remove("default/gone.txt")
	f.update()
	docs := map[string][]byte{}
	expect := func(query, code string) response {
		t.Helper()
		b := f.get(query)
		docs[query] = b
		r := parse(t, b)
		if r.code() != code {
			t.Fatalf("%s: error %q, want %q\n%s", query, r.code(), code, b)
		}
		if (code == oai.BadVerb || code == oai.BadArgument) && len(r.Request.Attrs) > 0 {
			t.Errorf("%s: request element has attributes on %s", query, code)
		}
		return r
	}
	id := func(p string) string { return url.QueryEscape("oai:repo.example.org:" + p) }
	r := expect("verb=Identify", "")
	if r.Identify.Deleted != "persistent" || r.Identify.Earliest != "2024-01-02T03:04:05Z" {
		t.Errorf("Identify: %+v", r.Identify)
	}
	if r := expect("verb=ListMetadataFormats", ""); strings.Join(r.Formats, ",") != "oai_dc,rec" {
		t.Errorf("formats %v", r.Formats)
	}
	if r := expect("verb=ListMetadataFormats&identifier="+id("dir/b.xml"), ""); strings.Join(r.Formats, ",") != "oai_dc,rec" {
		t.Errorf("formats of b.xml %v", r.Formats)
	}
	for _, p := range []string{"a.txt", "c.xml", "notxml.xml", "gone.txt"} {
		if r := expect("verb=ListMetadataFormats&identifier="+id(p), ""); strings.Join(r.Formats, ",") != "oai_dc" {
			t.Errorf("formats of %s %v", p, r.Formats)
		}
	}
	expect("verb=ListSets", oai.NoSetHierarchy)
	r = expect("verb=GetRecord&metadataPrefix=rec&identifier="+id("dir/b.xml"), "")
	if got := r.Record.Metadata.Inner; got != `<r:rec xmlns:r="urn:example:rec"><r:t>B</r:t></r:rec>`+"\n" {
		t.Errorf("rec metadata %q", got)
	}
	r = expect("verb=GetRecord&metadataPrefix=oai_dc&identifier="+id("sp%20ace.txt"), "")
	for _, want := range []string{"<dc:identifier>http://repo.example.org/data/sp%20ace.txt</dc:identifier>", "<dc:title>sp ace.txt</dc:title>",
		"<dc:format>text/plain; charset=utf-8</dc:format>", "<dc:format>6 bytes</dc:format>"} {
		if !strings.Contains(r.Record.Metadata.Inner, want) {
			t.Errorf("oai_dc lacks %s: %s", want, r.Record.Metadata.Inner)
		}
	}
	r = expect("verb=GetRecord&metadataPrefix=oai_dc&identifier="+id("gone.txt"), "")
	if r.Record.Header.Status != "deleted" || r.Record.Header.Datestamp != "2024-01-02T04:04:05Z" {
		t.Errorf("deleted record: %+v", r.Record.Header)
	}
	expect("verb=GetRecord&metadataPrefix=oai_dc&identifier="+id("%C3%BCn%C3%AF/c%C3%B8d%C3%A9.html"), "")
	expect("verb=GetRecord&metadataPrefix=rec&identifier="+id("a.txt"), oai.CannotDisseminateFormat)
	expect("verb=GetRecord&metadataPrefix=rec&identifier="+id("notxml.xml"), oai.CannotDisseminateFormat)
	expect("verb=GetRecord&metadataPrefix=marc&identifier="+id("a.txt"), oai.CannotDisseminateFormat)
	expect("verb=GetRecord&metadataPrefix=oai_dc&identifier="+id("nope"), oai.IDDoesNotExist)
	expect("verb=GetRecord&metadataPrefix=oai_dc&identifier="+id("sp ace.txt"), oai.IDDoesNotExist) // not the canonical spelling
	expect("verb=GetRecord&metadataPrefix=oai_dc&identifier=oai:other.org:a.txt", oai.IDDoesNotExist)
	expect("verb=GetRecord&metadataPrefix=oai_dc&identifier=a%20%3Cb%3E%22%0A", oai.IDDoesNotExist)
	expect("verb=ListRecords&metadataPrefix=a%20b", oai.CannotDisseminateFormat)
	expect("verb=GetRecord&metadataPrefix=oai_dc", oai.BadArgument)
	expect("verb=GetRecord&identifier="+id("a.txt"), oai.BadArgument)
	expect("verb=GetRecord&metadataPrefix=oai_dc&metadataPrefix=oai_dc&identifier="+id("a.txt"), oai.BadArgument)
	expect("verb=GetRecord&metadataPrefix=oai_dc&identifier="+id("a.txt")+"&from=2024-01-01", oai.BadArgument)
	expect("verb=Identify&x=1", oai.BadArgument)
	expect("verb=Bogus", oai.BadVerb)
	expect("", oai.BadVerb)
	expect("verb=Identify&verb=Identify", oai.BadVerb)
	expect("verb=ListRecords", oai.BadArgument)
	expect("verb=ListRecords&metadataPrefix=oai_dc&from=yesterday", oai.BadArgument)
	expect("verb=ListRecords&metadataPrefix=oai_dc&from=2024-01-01&until=2024-01-02T00:00:00Z", oai.BadArgument)
	expect("verb=ListRecords&metadataPrefix=oai_dc&from=2024-01-03&until=2024-01-02", oai.BadArgument)
	expect("verb=ListRecords&metadataPrefix=oai_dc&set=a%20b", oai.BadArgument)
	expect("verb=ListRecords&metadataPrefix=oai_dc&set=x", oai.NoSetHierarchy)
	expect("verb=ListRecords&metadataPrefix=marc", oai.CannotDisseminateFormat)
	expect("verb=ListRecords&metadataPrefix=oai_dc&from=2030-01-01", oai.NoRecordsMatch)
	expect("verb=ListRecords&metadataPrefix=oai_dc&until=2023-12-31T23:59:59Z", oai.NoRecordsMatch)
	expect("verb=ListRecords&resumptionToken=junk", oai.BadResumptionToken)
	expect("verb=ListRecords&resumptionToken=", oai.BadResumptionToken)
	expect("verb=ListSets&resumptionToken=x", oai.BadResumptionToken)
	expect("verb=ListIdentifiers&metadataPrefix=oai_dc&resumptionToken=x", oai.BadArgument)

	// Whole lists, through tokens, in both formats and both verbs.
	all := map[string]string{}
	for _, verb := range []string{"ListRecords", "ListIdentifiers"} {
		for _, prefix := range []string{"oai_dc", "rec"} {
			q := "verb=" + verb + "&metadataPrefix=" + prefix
			var got []string
			for pages := 0; ; pages++ {
				r := expect(q, "")
				var tok string
				hs := r.Headers
				if r.Token != nil {
					tok = r.Token.Value
				}
				for _, rec := range r.Records {
					hs = append(hs, rec.Header)
				}
				if r.RecToken != nil {
					tok = r.RecToken.Value
				}
				for _, h := range hs {
					got = append(got, h.Identifier+" "+h.Status)
					if prefix == "oai_dc" {
						all[h.Identifier] = h.Datestamp
					}
				}
				if tok == "" {
					break
				}
				q = "verb=" + verb + "&resumptionToken=" + url.QueryEscape(tok)
			}
			want := map[string]string{
				"oai_dc": "a.txt ,c.xml ,dir/b.xml ,notxml.xml ,sp%20ace.txt ,%C3%BCn%C3%AF/c%C3%B8d%C3%A9.html ,gone.txt deleted",
				"rec":    "dir/b.xml ,gone.txt deleted",
			}[prefix]
			if g := strings.ReplaceAll(strings.Join(got, ","), "oai:repo.example.org:", ""); g != want {
				t.Errorf("%s %s: %s, want %s", verb, prefix, g, want)
			}
		}
	}
	// POST answers as GET.
	resp, err := http.Post(f.srv.URL+"/oai", "application/x-www-form-urlencoded", strings.NewReader("verb=ListIdentifiers&metadataPrefix=oai_dc&from=2024-01-02T04:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	docs["POST"] = b
	if r := parse(t, b); len(r.Headers) != 1 || r.Headers[0].Status != "deleted" {
		t.Errorf("POST from after the baseline: %s", b)
	}
	validate(t, docs)
}

// Incremental harvests: from = the previous responseDate returns every
// change recorded since, a file copied in with an old mtime included, and
// deletions with the datestamp of their journal record.
func TestIncrementalFrom(t *testing.T) {
	f := newFixture(t, []string{"default"}, map[string]string{"default/a.txt": "a", "default/b.txt": "b", "default/c.txt": "c"}, 100)
	t0 := f.clk.Now()
	f.clk.Set(t0.Add(10 * time.Minute))
	f.write("default/old.txt", "copied in")
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(f.dirs["default"], "old.txt"), old, old)
	f.write("default/a.txt", "changed")
	f.remove("default/b.txt")
	f.update()
	f.clk.Set(t0.Add(20 * time.Minute))
	f.write("default/c.txt", "changed too")
	f.update()
	list := func(from string) string {
		r := parse(t, f.get("verb=ListIdentifiers&metadataPrefix=oai_dc&from="+from))
		var s []string
		for _, h := range r.Headers {
			s = append(s, strings.TrimPrefix(h.Identifier, "oai:repo.example.org:")+"@"+h.Datestamp[11:16]+h.Status)
		}
		return strings.Join(s, ",")
	}
	for from, want := range map[string]string{
		oai.Second.Format(t0.Add(5 * time.Minute)):  "a.txt@03:14,b.txt@03:14deleted,old.txt@03:14,c.txt@03:24",
		oai.Second.Format(t0.Add(10 * time.Minute)): "a.txt@03:14,b.txt@03:14deleted,old.txt@03:14,c.txt@03:24",
		oai.Second.Format(t0.Add(15 * time.Minute)): "c.txt@03:24",
		oai.Second.Format(t0):                       "a.txt@03:14,c.txt@03:24,old.txt@03:14,b.txt@03:14deleted",
		"2024-01-02":                                "a.txt@03:14,c.txt@03:24,old.txt@03:14,b.txt@03:14deleted",
	} {
		if got := list(from); got != want {
			t.Errorf("from=%s: %s, want %s", from, got, want)
		}
	}
	// until is inclusive to its granule.
	r := parse(t, f.get("verb=ListIdentifiers&metadataPrefix=oai_dc&until="+oai.Second.Format(t0.Add(10*time.Minute))))
	if len(r.Headers) != 3 {
		t.Errorf("until the first change: %d headers, want 3 (a, old, b deleted)", len(r.Headers))
	}
}

// Sets: each --set is an OAI set.
func TestSets(t *testing.T) {
	f := newFixture(t, []string{"books", "maps"}, map[string]string{"books/a.txt": "a", "maps/b.txt": "b", "maps/c.txt": "c"}, 100)
	docs := map[string][]byte{}
	get := func(q string) response { b := f.get(q); docs[q] = b; return parse(t, b) }
	if r := get("verb=ListSets"); strings.Join(r.Sets, ",") != "books,maps" {
		t.Errorf("sets %v", r.Sets)
	}
	r := get("verb=ListIdentifiers&metadataPrefix=oai_dc&set=maps")
	if len(r.Headers) != 2 || r.Headers[0].Identifier != "oai:repo.example.org:maps/b.txt" || strings.Join(r.Headers[0].Sets, ",") != "maps" {
		t.Errorf("set maps: %+v", r.Headers)
	}
	if r := get("verb=ListIdentifiers&metadataPrefix=oai_dc&set=nope"); r.code() != oai.NoRecordsMatch {
		t.Errorf("unknown set: %v", r.Errors)
	}
	if r := get("verb=GetRecord&metadataPrefix=oai_dc&identifier=oai:repo.example.org:books/a.txt"); r.Record == nil ||
		!strings.Contains(r.Record.Metadata.Inner, "http://repo.example.org/data/books/a.txt") {
		t.Errorf("GetRecord in a set: %+v", r)
	}
	validate(t, docs)
}

// Tokens: damaged, altered, for another verb, expired.
func TestTokens(t *testing.T) {
	f := newFixture(t, []string{"default"}, map[string]string{"default/a": "a", "default/b": "b", "default/c": "c"}, 1)
	r := parse(t, f.get("verb=ListRecords&metadataPrefix=oai_dc"))
	tok := r.RecToken.Value
	if tok == "" {
		t.Fatal("no token")
	}
	for name, q := range map[string]string{
		"damaged":    "verb=ListRecords&resumptionToken=" + url.QueryEscape(tok[:len(tok)-2]),
		"altered":    "verb=ListRecords&resumptionToken=" + url.QueryEscape("A"+tok[1:]),
		"other verb": "verb=ListIdentifiers&resumptionToken=" + url.QueryEscape(tok),
	} {
		if r := parse(t, f.get(q)); r.code() != oai.BadResumptionToken {
			t.Errorf("%s: %v", name, r.Errors)
		}
	}
	if r := parse(t, f.get("verb=ListRecords&resumptionToken="+url.QueryEscape(tok))); r.code() != "" || len(r.Records) != 1 {
		t.Errorf("good token: %+v", r)
	}
	f.clk.Set(f.clk.Now().Add(25 * time.Hour))
	if r := parse(t, f.get("verb=ListRecords&resumptionToken="+url.QueryEscape(tok))); r.code() != oai.BadResumptionToken {
		t.Errorf("expired: %v", r.Errors)
	}
}
