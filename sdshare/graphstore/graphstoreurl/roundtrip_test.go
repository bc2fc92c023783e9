package graphstoreurl_test

import (
	"context"
	"slices"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/locationtest"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoreurl"
)

// TestRoundTrip: every spelling of a graph store location opens, keeps
// what was written across a close, and opens the same store again. There
// is no PostgreSQL graph store, and the in-memory one drops its content on
// Close, so it has no location.
func TestRoundTrip(t *testing.T) {
	locationtest.RoundTrip(t, locationtest.Local(t), graphstoreurl.Open, write, read)
}

const g = "http://g.example/"

func write(t *testing.T, s graphstore.Store) {
	tr := rdf.Triple{S: rdf.IRI("http://s.example/"), P: rdf.IRI("http://p.example/"), O: rdf.Literal("o")}
	if err := s.ReplaceGraph(context.Background(), g, func(yield func(rdf.Triple, error) bool) { yield(tr, nil) }); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s graphstore.Store) {
	if gs, err := s.Graphs(context.Background()); err != nil || !slices.Equal(gs, []string{g}) {
		t.Fatalf("read back %q, %v", gs, err)
	}
}

// TestUnknownScheme: an unknown scheme names the known ones; no error
// shows a password.
func TestUnknownScheme(t *testing.T) {
	locationtest.Unknown(t, func(ctx context.Context, loc string) error {
		st, err := graphstoreurl.Open(ctx, loc)
		if err == nil {
			st.Close()
		}
		return err
	}, graphstoreurl.ErrScheme, []string{"bolt", "file"})
}
