package oaitest

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/oai"
)

func get(t *testing.T, c *http.Client, s *Server, q string) (int, string) {
	t.Helper()
	resp, err := c.Get(s.URL + "?" + q)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var tokenRE = regexp.MustCompile(`<resumptionToken[^>]*>([^<]*)</resumptionToken>`)

func TestServer(t *testing.T) {
	c, _ := testnet.Client(t)
	s := New(t, Options{PageSize: 7, Granularity: oai.Day})
	s.Generate(20)
	s.Advance(48 * time.Hour)
	s.Put("oai:x:1", []string{"a:b"}, map[string]string{"oai_dc": "<dc/>"})
	s.Delete(GenID(3))

	// Paging: 21 records (one deleted) in pages of 7.
	n, q := 0, "verb=ListRecords&metadataPrefix=oai_dc"
	for pages := 0; ; pages++ {
		code, body := get(t, c, s, q)
		if code != 200 || strings.Contains(body, "<error") {
			t.Fatalf("%s: %d %s", q, code, body)
		}
		n += strings.Count(body, "<record>")
		m := tokenRE.FindStringSubmatch(body)
		if pages == 0 && !strings.Contains(body, `completeListSize="21"`) {
			t.Errorf("no completeListSize: %s", body)
		}
		if m == nil || m[1] == "" {
			break
		}
		q = "verb=ListRecords&resumptionToken=" + url.QueryEscape(m[1])
	}
	if n != 21 {
		t.Errorf("listed %d records, want 21", n)
	}
	for _, tc := range []struct{ q, want string }{
		{"verb=ListIdentifiers&metadataPrefix=oai_dc&from=2024-01-03", `<identifier>oai:gen:3</identifier>`},
		{"verb=ListIdentifiers&metadataPrefix=oai_dc&from=2024-01-04", `noRecordsMatch`},
		{"verb=ListIdentifiers&metadataPrefix=oai_dc&from=2024-01-03T00:00:00Z", `badArgument`},
		{"verb=ListRecords&metadataPrefix=oai_dc&set=a", `oai:x:1`},
		{"verb=ListRecords&metadataPrefix=marc", `cannotDisseminateFormat`},
		{"verb=GetRecord&metadataPrefix=oai_dc&identifier=oai:gen:4", `Generated record 4, version 0`},
		{"verb=Identify", `<deletedRecord>persistent</deletedRecord><granularity>YYYY-MM-DD</granularity>`},
		{"verb=ListSets", `<setSpec>a:b</setSpec>`},
		{"verb=Nope", `badVerb`},
		{"verb=ListRecords&resumptionToken=zz", `badResumptionToken`},
	} {
		if _, body := get(t, c, s, tc.q); !strings.Contains(body, tc.want) {
			t.Errorf("%s: no %q in %s", tc.q, tc.want, body)
		}
	}
	// Expiry on demand, failures with Retry-After.
	_, body := get(t, c, s, "verb=ListIdentifiers&metadataPrefix=oai_dc")
	tok := tokenRE.FindStringSubmatch(body)[1]
	s.ExpireTokens()
	if _, body := get(t, c, s, "verb=ListIdentifiers&resumptionToken="+tok); !strings.Contains(body, "badResumptionToken") {
		t.Errorf("expired token accepted: %s", body)
	}
	s.Fail(1, 0, 2*time.Second)
	resp, err := c.Get(s.URL + "?verb=Identify")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("Fail: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	s.SetMalformed("oai:x:1", NoIdentifier)
	if _, body := get(t, c, s, "verb=ListRecords&metadataPrefix=oai_dc&set=a"); strings.Contains(body, "<identifier>") {
		t.Errorf("NoIdentifier: %s", body)
	}
}

func TestGenerateLarge(t *testing.T) {
	s := New(t, Options{PageSize: 1000})
	s.Generate(200000)
	c, _ := testnet.Client(t)
	_, body := get(t, c, s, "verb=ListIdentifiers&metadataPrefix=oai_dc&set=gen:odd")
	if !strings.Contains(body, `completeListSize="100000"`) {
		t.Errorf("set gen:odd: %.300s", body)
	}
}
