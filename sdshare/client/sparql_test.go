package client

import (
	"context"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/sparqltest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/sparql"
)

// The client into a real SPARQL 1.1 store (Virtuoso 7, internal/testing/sparqltest):
// the spec's feeds, then the kill test with the client process writing to
// Virtuoso.
func TestSPARQLStore(t *testing.T) {
	srv := sparqltest.Shared(t)
	srv.Reset(t)
	hc, _ := testnet.Client(t)
	ep := sparql.Endpoints{Update: srv.UpdateURL, Query: srv.QueryURL, GraphStore: srv.GraphStoreURL}

	t.Run("spec examples", func(t *testing.T) {
		fs := specServer(t)
		e := newEnv(t)
		e.store = sparql.New(ep, hc)
		cfg := e.config(fs.URL() + "/collections")
		for run := range 2 {
			rep, err := Sync(context.Background(), cfg)
			if err != nil || !rep.OK() {
				t.Fatalf("run %d: %v %+v", run, err, rep)
			}
			if got, want := graphOf(t, e.store, rep.Collections[0].Graph), readNT(t, "client/spec-expected.nt"); !rdf.Isomorphic(got, want) {
				t.Errorf("run %d: graph in Virtuoso:\n%v", run, got)
			}
		}
	})
	t.Run("kill -9", func(t *testing.T) {
		killMidApply(t, srv.UpdateURL+" "+srv.QueryURL+" "+srv.GraphStoreURL, 100, 300, 4)
	})
}
