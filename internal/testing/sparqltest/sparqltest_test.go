package sparqltest

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func get(t *testing.T, u, accept string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestShared checks the shared server takes anonymous updates (the grant
// worked), answers queries, serves the Graph Store Protocol, and that
// Reset drops what a test wrote but keeps Virtuoso's own graphs.
func TestShared(t *testing.T) {
	s := Shared(t)
	if Shared(t) != s {
		t.Fatal("Shared started a second server")
	}
	s.Reset(t)
	ctx := context.Background()
	before, err := s.graphs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, `INSERT DATA { GRAPH <http://example.org/g> { <http://example.org/s> <http://example.org/p> "o" } }`); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, s.QueryURL+"?query="+url.QueryEscape(`ASK { GRAPH <http://example.org/g> { ?s ?p "o" } }`), "application/sparql-results+json")
	if code != 200 || !strings.Contains(body, "true") {
		t.Fatalf("ASK after INSERT: %d %s", code, body)
	}
	code, body = get(t, s.GraphStoreURL+"?graph="+url.QueryEscape("http://example.org/g"), "application/n-triples")
	if code != 200 || !strings.Contains(body, `<http://example.org/s>`) {
		t.Fatalf("GSP GET: %d %s", code, body)
	}
	s.Reset(t)
	after, err := s.graphs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("after Reset graphs are %v, want %v", after, before)
	}
	if len(s.baseline) == 0 {
		t.Error("the fresh database listed no graphs of its own; Reset keeps Virtuoso's system graphs by that list")
	}
}
