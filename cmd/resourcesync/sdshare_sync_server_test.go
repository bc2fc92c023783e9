package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/server"
)

// TestSDShareSyncAgainstServer: the sync command with its embedded store
// against our server, before and after a change, limited by --collection
// to one of two collections.
func TestSDShareSyncAgainstServer(t *testing.T) {
	oldHC := sdshareHTTPClient
	t.Cleanup(func() { sdshareHTTPClient = oldHC })
	hc, _ := testnet.Client(t)
	sdshareHTTPClient = func(time.Duration) *http.Client { return hc }

	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.nt"), filepath.Join(dir, "b.nt")
	write := func(path, doc string) {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const one = "<http://s.test/x> <http://s.test/p> _:b .\n_:b <http://s.test/q> \"1\" .\n<http://s.test/y> <http://s.test/p> \"y\" .\n"
	const two = "<http://s.test/x> <http://s.test/p> _:c .\n_:c <http://s.test/q> \"2\" .\n_:c <http://s.test/r> _:d .\n_:d <http://s.test/q> \"3\" .\n"
	write(a, one)
	write(b, "<http://s.test/other> <http://s.test/p> \"b\" .\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Open(ctx, server.Config{BaseURL: base, StateDir: filepath.Join(dir, "state"), NoSync: true, Rescan: -1,
		Collections: []server.CollectionConfig{{Name: "a", Path: a}, {Name: "b", Path: b}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	defer func() { cancel(); hs.Close(); <-done; srv.Close() }()

	store := filepath.Join(dir, "mirror")
	check := func(want string) {
		t.Helper()
		s, err := boltstore.OpenDir(store, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var got []rdf.Triple
		for tr, err := range s.Triples(context.Background(), base+"a/") {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tr)
		}
		if d := rdf.IsomorphicDiff(got, ntTriples(t, want)); d != "" {
			t.Errorf("graph a: %s", d)
		}
		if gs, _ := s.Graphs(context.Background()); len(gs) != 1 {
			t.Errorf("graphs %v: --collection a synced others", gs)
		}
	}
	for run, doc := range []string{one, two} {
		if run > 0 {
			write(a, doc)
			if _, err := srv.Collection("a").Load(context.Background(), true); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut := runCLI(t, "sdshare", "sync", "--store", store, "--collection", "a", base)
		if code != 0 || !strings.Contains(errOut, "sdshare sync a: in step") {
			t.Fatalf("run %d: exit %d\nstdout %s\nstderr %s", run, code, out, errOut)
		}
		check(doc)
	}
}

func ntTriples(t *testing.T, doc string) []rdf.Triple {
	var out []rdf.Triple
	for tr, err := range rdf.Parse(strings.NewReader(doc), rdf.NTriples, "") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}
