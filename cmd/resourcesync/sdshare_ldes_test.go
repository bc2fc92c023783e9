package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

// TestSDShareSyncLDES: sdshare sync of an LDES keeps the latest version of
// each member in the graph of what it is a version of, drops the graph of
// a deleted one, and the next run applies only what is new.
func TestSDShareSyncLDES(t *testing.T) {
	s := memstore.New()
	defer s.Close()
	useTestStores(t, s)
	var mu sync.Mutex
	var members []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/ldes" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/turtle")
		fmt.Fprintf(w, "@prefix tree: <https://w3id.org/tree#> . @prefix ldes: <https://w3id.org/ldes#> . @prefix as: <https://www.w3.org/ns/activitystreams#> . @prefix dct: <http://purl.org/dc/terms/> .\n<%s/ldes> a ldes:EventStream ; ldes:timestampPath as:published ; ldes:versionOfPath dct:isVersionOf .\n", srv.URL)
		for i, m := range members {
			fmt.Fprintf(w, "<%s/ldes> tree:member <%s/v%d> .\n<%s/v%d> %s .\n", srv.URL, srv.URL, i, srv.URL, i, m)
		}
	}))
	t.Cleanup(srv.Close)
	add := func(m string) { mu.Lock(); members = append(members, m); mu.Unlock() }
	add(`a as:Create ; dct:isVersionOf <http://x/a> ; as:published "2024-01-01T00:00:00Z" ; dct:title "a1"`)
	add(`a as:Create ; dct:isVersionOf <http://x/b> ; as:published "2024-01-02T00:00:00Z" ; dct:title "b1"`)
	add(`a as:Update ; dct:isVersionOf <http://x/a> ; as:published "2024-01-03T00:00:00Z" ; dct:title "a2"`)
	state := t.TempDir()
	titles := func() string {
		gs, err := s.Graphs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range gs {
			for tr, err := range s.Triples(context.Background(), g) {
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasSuffix(tr.P.Value, "/title") {
					out = append(out, g+"="+tr.O.Value)
				}
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	code, out, errOut := runCLI(t, "sdshare", "sync", "--state", state, srv.URL+"/ldes")
	if code != 0 || !strings.Contains(errOut, "LDES: 2 graphs replaced") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if got := titles(); got != "http://x/a=a2 http://x/b=b1" {
		t.Errorf("graphs: %s", got)
	}
	add(`a as:Delete ; dct:isVersionOf <http://x/b> ; as:published "2024-01-04T00:00:00Z"`)
	code, out, errOut = runCLI(t, "sdshare", "sync", "--state", state, srv.URL+"/ldes")
	if code != 0 || !strings.Contains(errOut, "LDES: 0 graphs replaced, 1 dropped") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if got := titles(); got != "http://x/a=a2" {
		t.Errorf("graphs after the deletion: %s", got)
	}
}
