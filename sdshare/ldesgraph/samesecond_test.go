package ldesgraph_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination/feedsync"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/ldesgraph"
)

// TestSameSecond: a member published after a run, dated the same second
// as the newest that run applied, is applied by the next run; the members
// applied already are not written again.
func TestSameSecond(t *testing.T) {
	var mu sync.Mutex
	var members []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		b.WriteString(prefixes)
		fmt.Fprintf(&b, "<%s/s> a ldes:EventStream ; ldes:timestampPath as:published ; ldes:versionOfPath dcterms:isVersionOf .\n", srv.URL)
		for i, m := range members {
			fmt.Fprintf(&b, "<%s/s> tree:member <%s/v%d> .\n<%s/v%d> %s .\n", srv.URL, srv.URL, i, srv.URL, i, m)
		}
		w.Header().Set("Content-Type", "text/turtle")
		io.WriteString(w, b.String())
	}))
	t.Cleanup(srv.Close)
	add := func(obj string) {
		mu.Lock()
		defer mu.Unlock()
		members = append(members, fmt.Sprintf(`a as:Create ; dcterms:isVersionOf <%s/o/%s> ; as:published "2024-01-01T00:00:00Z"^^xsd:dateTime ; dcterms:title %q`, srv.URL, obj, obj))
	}
	store, err := boltstore.OpenDir(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	get := func(ctx context.Context, u string) (feedsync.Fetched, error) {
		resp, err := http.Get(u)
		if err != nil {
			return feedsync.Fetched{}, err
		}
		return feedsync.Fetched{ReadCloser: resp.Body, URL: u, Header: resp.Header}, nil
	}
	add("a")
	rep, err := ldesgraph.Apply(ctx, store, get, srv.URL+"/s", ldesgraph.Position{}, feedsync.Options{})
	if err != nil || rep.Replaced != 1 {
		t.Fatalf("first run: %+v %v", rep, err)
	}
	add("b") // the same second, published later
	rep, err = ldesgraph.Apply(ctx, store, get, srv.URL+"/s", rep.Position, feedsync.Options{})
	if err != nil || rep.Replaced != 1 {
		t.Fatalf("second run: %+v %v (want b replaced, a not again)", rep, err)
	}
	gs, err := store.Graphs(ctx)
	if err != nil || len(gs) != 2 {
		t.Fatalf("graphs %v %v, want a and b", gs, err)
	}
	rep, err = ldesgraph.Apply(ctx, store, get, srv.URL+"/s", rep.Position, feedsync.Options{})
	if err != nil || rep.Replaced != 0 {
		t.Errorf("idle run: %+v %v", rep, err)
	}
}
