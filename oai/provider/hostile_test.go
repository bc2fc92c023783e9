package provider

import (
	"context"
	"fmt"
	"io"
	"math"
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
)

// bytesCollection serves fixed bytes per item.
type bytesCollection struct {
	memCollection
	body map[string]string
}

func (c bytesCollection) Open(_ context.Context, it Item) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(c.body[it.ID])), nil
}

// A resource whose root is in a format's namespace is embedded in the
// response: whatever else its bytes hold, the response stays a
// namespace-well-formed document (checked by xmllint) and the record
// means what the file means.
func TestHostileResourcesStayWellFormed(t *testing.T) {
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Skip("xmllint not installed")
	}
	bodies := map[string]string{
		"doctype-after": `<r xmlns="urn:r">x</r><!DOCTYPE r>`,
		"dup-attr":      `<r xmlns="urn:r" a="1" a="2"/>`,
		"undeclared":    `<r xmlns="urn:r"><q:x/></r>`,
		"double-colon":  `<r xmlns="urn:r" xmlns:a="urn:a"><a:b:c/></r>`,
		"cdata-end":     `<r xmlns="urn:r">a]]>b</r>`,
		"pi-after":      `<r xmlns="urn:r"/><?pi x?><!-- c -->`,
		"decl-doctype":  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE r>\n<r xmlns=\"urn:r\">ok</r>",
		"xml-pi-inside": `<r xmlns="urn:r"><?xml version="1.0"?></r>`,
		"prefixed-root": `<p:r xmlns:p="urn:r"><child/></p:r>`,
		"xmlns-prefix":  `<r xmlns="urn:r" xmlns:xmlns="urn:bad"/>`,
		"xml-prefix":    `<r xmlns="urn:r" xmlns:xml="urn:bad"/>`,
	}
	t0 := time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC)
	var c bytesCollection
	c.body = bodies
	i := 0
	for id := range bodies {
		c.memCollection = append(c.memCollection, Item{ID: id, URL: "http://example.org/" + id, Datestamp: t0, Type: "text/xml", Cursor: string(rune('a' + i))})
		i++
	}
	h, err := New(c, Config{BaseURL: "http://example.org/oai", Formats: []Format{{Prefix: "r", Namespace: "urn:r"}}, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for id := range bodies {
		req := httptest.NewRequest("GET", "/oai?verb=GetRecord&metadataPrefix=r&identifier=oai:example.org:"+id, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		p := filepath.Join(dir, id+".xml")
		os.WriteFile(p, rec.Body.Bytes(), 0o666)
		out, err := exec.Command("xmllint", "--noout", p).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("%s: response not well-formed: %v %s\n%s", id, err, out, rec.Body.Bytes())
		}
		if served := strings.Contains(rec.Body.String(), "<metadata>"); served != (id == "decl-doctype" || id == "pi-after" || id == "prefixed-root") {
			t.Errorf("%s: served %v", id, served)
		}
		if id == "prefixed-root" && strings.Contains(rec.Body.String(), "<metadata>") && !strings.Contains(rec.Body.String(), `xmlns=""`) {
			t.Errorf("%s: <child/> falls into the OAI-PMH namespace:\n%s", id, rec.Body.Bytes())
		}
	}
}

// The token key defaults to one derived from the base URL (tokens are
// not secrets), so anyone can forge a token: a forged cursor or offset
// gets badResumptionToken or a valid answer, never a server error or an
// invalid document.
func TestForgedTokens(t *testing.T) {
	f := newFixture(t, []string{"default"}, baseFiles, 2)
	far := f.clk.Now().Add(time.Hour)
	docs := map[string][]byte{}
	for i, tk := range []token{
		{verb: oai.ListRecords, prefix: oai.DCPrefix, cursor: "zzz", expires: far},
		{verb: oai.ListRecords, prefix: oai.DCPrefix, cursor: "7|x|y", expires: far},
		{verb: oai.ListRecords, prefix: oai.DCPrefix, cursor: "0|x|y", expires: far},
		{verb: oai.ListRecords, prefix: oai.DCPrefix, cursor: "0|j|\xff\x00", expires: far},
		{verb: oai.ListRecords, prefix: oai.DCPrefix, cursor: "0|i|", expires: far},
		{verb: oai.ListIdentifiers, prefix: oai.DCPrefix, cursor: "0|\xff|\x00", expires: far},
		{verb: oai.ListIdentifiers, prefix: oai.DCPrefix, offset: math.MaxInt, expires: far},
		{verb: oai.ListRecords, prefix: "no<such>", set: "a b", expires: far},
	} {
		q := "verb=" + tk.verb + "&resumptionToken=" + url.QueryEscape(tk.encode(f.h.key))
		resp, err := http.Get(f.srv.URL + "/oai?" + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("token %d: status %d: %s", i, resp.StatusCode, b)
			continue
		}
		docs[fmt.Sprint("token ", i)] = b
	}
	validate(t, docs)
}

// blockingCollection holds every Open until release is closed.
type blockingCollection struct {
	bytesCollection
	entered chan struct{}
	release chan struct{}
}

func (c blockingCollection) Open(ctx context.Context, it Item) (io.ReadCloser, error) {
	c.entered <- struct{}{}
	<-c.release
	return c.bytesCollection.Open(ctx, it)
}

// Each request may hold a record of up to MaxRecordBytes (and its
// check) in memory: a harvester opening requests by the hundred gets 503
// with Retry-After (OAI-PMH's own flow control) past MaxConcurrent,
// instead of the provider's memory growing with them.
func TestConcurrentRequestsBounded(t *testing.T) {
	t0 := time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC)
	c := blockingCollection{entered: make(chan struct{}), release: make(chan struct{})}
	c.body = map[string]string{"a": `<r xmlns="urn:r"/>`}
	c.memCollection = memCollection{{ID: "a", URL: "http://example.org/a", Datestamp: t0, Type: "text/xml", Cursor: "a"}}
	h, err := New(c, Config{BaseURL: "http://example.org/oai", MaxConcurrent: 2, Formats: []Format{{Prefix: "r", Namespace: "urn:r"}}, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	var once sync.Once
	release := func() { once.Do(func() { close(c.release) }) }
	t.Cleanup(release) // before srv.Close, which waits for the handlers
	get := func(ctx context.Context) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"?verb=GetRecord&metadataPrefix=r&identifier=oai:example.org:a", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	bg := context.Background()
	done := make(chan *http.Response, 2)
	for range 2 {
		go func() { done <- get(bg) }()
		<-c.entered
	}
	// A third request that gets as far as Open is cut, failing the test.
	ctx, cancel := context.WithCancel(bg)
	stop := make(chan struct{})
	go func() {
		select {
		case <-c.entered:
			cancel()
		case <-stop:
		}
	}()
	resp := get(ctx)
	close(stop)
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third request while two are served: %v", resp)
	}
	release()
	for range 2 {
		if r := <-done; r == nil || r.StatusCode != 200 {
			t.Fatalf("held request: %v", r)
		}
	}
	go func() { <-c.entered }()
	if r := get(bg); r == nil || r.StatusCode != 200 {
		t.Fatalf("after: %v", r)
	}
}
