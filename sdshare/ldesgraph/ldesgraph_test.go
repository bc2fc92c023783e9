package ldesgraph_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/feedsync"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/ldesgraph"
)

const prefixes = "@prefix tree: <https://w3id.org/tree#> .\n@prefix ldes: <https://w3id.org/ldes#> .\n@prefix as: <https://www.w3.org/ns/activitystreams#> .\n@prefix dcterms: <http://purl.org/dc/terms/> .\n@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"

// TestApply: members of an LDES (two nodes, the first immutable) go to a
// real embedded graph store, the latest version of each in the graph of
// the object it is a version of; a deletion drops the graph; the next run
// reads only the node that may change.
func TestApply(t *testing.T) {
	var mu sync.Mutex
	var members []string
	gets := map[string]int{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	add := func(i int, typ, obj, title string, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		m := fmt.Sprintf("<%s/v%d> a as:%s ; dcterms:isVersionOf <%s/o/%s> ; as:published %q^^xsd:dateTime", base, i, typ, base, obj, at.UTC().Format(time.RFC3339Nano))
		if title != "" {
			m += fmt.Sprintf(" ; dcterms:title %q ; dcterms:creator [ dcterms:title \"someone\" ]", title)
		}
		members = append(members, m+" .\n")
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		gets[r.URL.Path]++
		w.Header().Set("Content-Type", "text/turtle")
		stream := fmt.Sprintf("<%s/s> a ldes:EventStream ; ldes:timestampPath as:published ; ldes:versionOfPath dcterms:isVersionOf ; tree:view <%s/n0> .\n", base, base)
		var lo, hi int
		switch r.URL.Path {
		case "/s":
			io.WriteString(w, prefixes+stream)
			return
		case "/n0":
			lo, hi = 0, min(3, len(members))
			w.Header().Set("Cache-Control", "immutable")
		case "/n1":
			lo, hi = min(3, len(members)), len(members)
		default:
			http.NotFound(w, r)
			return
		}
		var b strings.Builder
		b.WriteString(prefixes + stream)
		if r.URL.Path == "/n0" {
			fmt.Fprintf(&b, "<> tree:relation [ a tree:GreaterThanOrEqualToRelation ; tree:node <%s/n1> ; tree:path as:published ; tree:value \"2000-01-01T00:00:00Z\"^^xsd:dateTime ] .\n", base)
		}
		for i := lo; i < hi; i++ {
			fmt.Fprintf(&b, "<%s/s> tree:member <%s/v%d> .\n", base, base, i)
			b.WriteString(members[i])
		}
		io.WriteString(w, b.String())
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	t0 := time.Now().Add(-time.Hour)
	add(0, "Create", "a", "a1", t0)
	add(1, "Create", "b", "b1", t0.Add(time.Second))
	add(2, "Update", "a", "a2", t0.Add(2*time.Second))
	add(3, "Create", "c", "c1", t0.Add(3*time.Second))

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
	titles := func() string {
		gs, err := store.Graphs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range gs {
			n := 0
			for tr, err := range store.Triples(ctx, g) {
				if err != nil {
					t.Fatal(err)
				}
				n++
				if tr.P.Value == "http://purl.org/dc/terms/title" && tr.S.Kind == rdf.KindIRI {
					out = append(out, strings.TrimPrefix(g, base+"/o/")+"="+tr.O.Value)
				}
			}
			if n != 6 { // type, isVersionOf, published, title, creator, the creator's title
				t.Errorf("graph %s has %d statements, want 6", g, n)
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	rep, err := ldesgraph.Apply(ctx, store, get, base+"/s", ldesgraph.Position{}, feedsync.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := titles(); got != "a=a2 b=b1 c=c1" {
		t.Errorf("graphs: %s", got)
	}
	if len(rep.Position.Resume) != 1 || !strings.HasSuffix(rep.Position.Resume[0], "/n1") {
		t.Errorf("resume from %v, want n1 only", rep.Position.Resume)
	}

	add(4, "Delete", "b", "", t0.Add(4*time.Second))
	add(5, "Update", "c", "c2", t0.Add(5*time.Second))
	mu.Lock()
	clear(gets)
	mu.Unlock()
	rep, err = ldesgraph.Apply(ctx, store, get, base+"/s", rep.Position, feedsync.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := titles(); got != "a=a2 c=c2" {
		t.Errorf("graphs after the deletion: %s", got)
	}
	if rep.Replaced != 1 || rep.Dropped != 1 {
		t.Errorf("second run: %+v", rep)
	}
	mu.Lock()
	if gets["/n0"] != 0 || gets["/s"] != 0 {
		t.Errorf("the second run read %v", gets)
	}
	mu.Unlock()
}
