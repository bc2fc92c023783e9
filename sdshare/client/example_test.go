package client_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/resourcesync-go/resourcesync/sdshare/client"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
	"github.com/resourcesync-go/resourcesync/sdshare/server"
)

// Keep a graph store in step with an SDShare server: the first Sync loads
// each collection's snapshot, later ones apply the fragments of the
// resources changed since (t, kept in the State). The server here is our
// own, serving a Turtle file on 127.0.0.1; the store is in memory
// (boltstore keeps it on disk, sparql writes to a SPARQL 1.1 endpoint).
func ExampleSync() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tmp, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	books := filepath.Join(tmp, "books.ttl")
	os.WriteFile(books, []byte(`@prefix dc: <http://purl.org/dc/terms/> .
<http://example.org/book/1> dc:title "Emma" .
<http://example.org/book/2> dc:title "Persuasion" .
`), 0o644)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.Open(ctx, server.Config{
		BaseURL:     "http://" + ln.Addr().String() + "/",
		StateDir:    filepath.Join(tmp, "server"),
		Collections: []server.CollectionConfig{{Name: "books", Path: books}},
		Rescan:      -1, // this example reloads the file itself
		Log:         slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx) }() // builds the snapshots
	defer func() { cancel(); <-ran }()
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	defer hs.Close()

	store := memstore.New()
	defer store.Close()
	state, err := client.OpenState(filepath.Join(tmp, "client"))
	if err != nil {
		log.Fatal(err)
	}
	defer state.Close()
	cfg := client.Config{Overview: srv.BaseURL(), Store: store, State: state,
		HTTPClient: &http.Client{Timeout: time.Minute}}
	sync := func() {
		rep, err := client.Sync(ctx, cfg)
		if err != nil {
			log.Fatal(err) // the overview could not be read
		}
		for _, c := range rep.Collections {
			fmt.Printf("%s: snapshot loaded %v, %d fragments applied, %d failures\n",
				c.Title, c.SnapshotLoaded, c.Applied, len(c.Failures))
			var titles []string
			for tr, err := range store.Triples(ctx, c.Graph) {
				if err != nil {
					log.Fatal(err)
				}
				titles = append(titles, tr.O.Value)
			}
			slices.Sort(titles)
			fmt.Println(" ", titles)
		}
	}
	sync()

	// A change at the server: one resource's fragment.
	time.Sleep(10 * time.Millisecond) // the journal orders changes by time
	os.WriteFile(books, []byte(`@prefix dc: <http://purl.org/dc/terms/> .
<http://example.org/book/1> dc:title "Emma" .
<http://example.org/book/2> dc:title "Persuasion (1817)" .
`), 0o644)
	if _, err := srv.Collection("books").Load(ctx, true); err != nil {
		log.Fatal(err)
	}
	sync()
	// Output:
	// books: snapshot loaded true, 0 fragments applied, 0 failures
	//   [Emma Persuasion]
	// books: snapshot loaded false, 1 fragments applied, 0 failures
	//   [Emma Persuasion (1817)]
}
