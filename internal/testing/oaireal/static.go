package oaireal

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Debian packages, for the messages of Need.
const (
	PkgHTTPOAI     = "libhttp-oai-perl libxml-sax-writer-perl"
	PkgCatmandu    = "libcatmandu-perl libcatmandu-oai-perl"
	installCommand = "apt-get install "
)

// Need returns the path of the program name (perl, catmandu, oai_pmh); when
// it is missing the test fails on Linux, where scripts/test.sh installs
// pkgs, and is skipped elsewhere.
func Need(t testing.TB, name, pkgs string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if runtime.GOOS == "linux" {
		t.Fatalf("%s not found (scripts/test.sh installs it): %s%s", name, installCommand, pkgs)
	}
	t.Skipf("%s not found: %s%s", name, installCommand, pkgs)
	return ""
}

// needHTTPOAI checks that perl can load what the gateway uses.
func needHTTPOAI(t testing.TB) string {
	t.Helper()
	perl := Need(t, "perl", PkgHTTPOAI)
	out, err := exec.Command(perl, "-MHTTP::OAI", "-MXML::SAX::Writer", "-MCGI", "-e", "1").CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("perl modules HTTP::OAI, XML::SAX::Writer or CGI missing (%v: %s): %s%s", err, bytes.TrimSpace(out), installCommand, PkgHTTPOAI)
		if runtime.GOOS == "linux" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return perl
}

// Testdata returns the absolute path of this package's testdata directory
// (or of rel under it), for tests in other packages.
func Testdata(rel ...string) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("oaireal: no caller information")
	}
	return filepath.Join(append([]string{filepath.Dir(file), "testdata"}, rel...)...)
}

// StaticRecord is one record of a static repository (oai_dc only).
type StaticRecord struct {
	Identifier string
	Datestamp  time.Time // day granularity: the time of day is dropped
	// Metadata is the record's oai_dc:dc element, declaring its own
	// namespaces (DC builds one).
	Metadata string
}

// Static is HTTP::OAI's static repository gateway serving one static
// repository file.
type Static struct {
	// URL is the gateway's base URL (the harvester's endpoint).
	URL  string
	file string
	mu   sync.Mutex
}

// StartStatic writes a static repository of records and starts the gateway
// over it on 127.0.0.1; the server stops with the test.
func StartStatic(t testing.TB, records []StaticRecord) *Static {
	t.Helper()
	perl := needHTTPOAI(t)
	dir := t.TempDir()
	s := &Static{file: filepath.Join(dir, "repository.xml")}
	h := &cgi.Handler{
		Path: perl,
		Root: "/oai",
		Dir:  dir,
		Args: []string{Testdata("oai_static_gateway.pl")},
		Env:  []string{"OAI_STATIC_REPO=file://" + filepath.ToSlash(s.file)},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// One request at a time: Set replaces the file under the gateway.
		s.mu.Lock()
		defer s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/oai"
	if err := s.Set(records); err != nil {
		t.Fatal(err)
	}
	return s
}

// Set replaces the repository's records (between harvests: change a
// record's Metadata and Datestamp to update it, drop it to remove it).
func (s *Static) Set(records []StaticRecord) error {
	b, err := StaticRepository(s.URL, records)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tmp := s.file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.file)
}

// StaticRepository returns the static repository document (namespace
// http://www.openarchives.org/OAI/2.0/static-repository) of records, in
// identifier order, with baseURL as its Identify's baseURL.
func StaticRepository(baseURL string, records []StaticRecord) ([]byte, error) {
	recs := append([]StaticRecord(nil), records...)
	sort.Slice(recs, func(i, j int) bool { return recs[i].Identifier < recs[j].Identifier })
	earliest := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range recs {
		if r.Identifier == "" {
			return nil, fmt.Errorf("oaireal: record %d has no identifier", i)
		}
		if i > 0 && recs[i-1].Identifier == r.Identifier {
			return nil, fmt.Errorf("oaireal: identifier %q twice", r.Identifier)
		}
		if d := r.Datestamp.UTC(); d.Before(earliest) {
			earliest = d
		}
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<Repository xmlns="http://www.openarchives.org/OAI/2.0/static-repository"
            xmlns:oai="http://www.openarchives.org/OAI/2.0/"
            xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
            xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/static-repository http://www.openarchives.org/OAI/2.0/static-repository.xsd">
  <Identify>
    <oai:repositoryName>oaireal static repository</oai:repositoryName>
`)
	fmt.Fprintf(&b, "    <oai:baseURL>%s</oai:baseURL>\n", escape(baseURL))
	b.WriteString("    <oai:protocolVersion>2.0</oai:protocolVersion>\n    <oai:adminEmail>nobody@example.org</oai:adminEmail>\n")
	fmt.Fprintf(&b, "    <oai:earliestDatestamp>%s</oai:earliestDatestamp>\n", earliest.Format("2006-01-02"))
	b.WriteString(`    <oai:deletedRecord>no</oai:deletedRecord>
    <oai:granularity>YYYY-MM-DD</oai:granularity>
  </Identify>
  <ListMetadataFormats>
    <oai:metadataFormat>
      <oai:metadataPrefix>oai_dc</oai:metadataPrefix>
      <oai:schema>http://www.openarchives.org/OAI/2.0/oai_dc.xsd</oai:schema>
      <oai:metadataNamespace>http://www.openarchives.org/OAI/2.0/oai_dc/</oai:metadataNamespace>
    </oai:metadataFormat>
  </ListMetadataFormats>
  <ListRecords metadataPrefix="oai_dc">
`)
	for _, r := range recs {
		fmt.Fprintf(&b, "    <oai:record><oai:header><oai:identifier>%s</oai:identifier><oai:datestamp>%s</oai:datestamp></oai:header>\n      <oai:metadata>%s</oai:metadata></oai:record>\n",
			escape(r.Identifier), r.Datestamp.UTC().Format("2006-01-02"), r.Metadata)
	}
	b.WriteString("  </ListRecords>\n</Repository>\n")
	return b.Bytes(), nil
}

// DC returns an oai_dc:dc element with one dc element per pair of
// (name, value): DC("title", "A", "creator", "B").
func DC(pairs ...string) string {
	var b strings.Builder
	b.WriteString(`<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/oai_dc/ http://www.openarchives.org/OAI/2.0/oai_dc.xsd">`)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "<dc:%s>%s</dc:%s>", pairs[i], escape(pairs[i+1]), pairs[i])
	}
	b.WriteString("</oai_dc:dc>")
	return b.String()
}

// Records returns n generated records oai:oaireal.example:1 … n, their
// titles and dates depending on version (so that a new version changes
// every record), datestamp day.
func Records(n, version int, day time.Time) []StaticRecord {
	recs := make([]StaticRecord, n)
	for i := range recs {
		id := fmt.Sprintf("oai:oaireal.example:%d", i+1)
		recs[i] = StaticRecord{
			Identifier: id,
			Datestamp:  day,
			Metadata: DC("title", fmt.Sprintf("Record %d, version %d", i+1, version),
				"creator", "Brody, Tim & Sompel, Herbert <OAI>",
				"identifier", id,
				"date", day.Format("2006-01-02"),
				"description", fmt.Sprintf("Généré pour le test — ünïcödé %d", i+1)),
		}
	}
	return recs
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

func escape(s string) string { return xmlEscaper.Replace(s) }
