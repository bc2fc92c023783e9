package push_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
	"github.com/resourcesync-go/resourcesync/sdshare/push"
	"github.com/resourcesync-go/resourcesync/sdshare/server"
)

// TestServerPushesToReceiver: our server pushes every change of a
// collection (its Sender) to our Receiver, which ends with the server's
// graph after each batch.
func TestServerPushesToReceiver(t *testing.T) {
	store := memstore.New()
	defer store.Close()
	o, err := push.OpenOrder(filepath.Join(t.TempDir(), push.OrderFile), true)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	recv := httptest.NewServer(&push.Receiver{Store: store, Order: o})
	defer recv.Close()

	data := filepath.Join(t.TempDir(), "data.nt")
	doc := func(i, v int) string {
		return fmt.Sprintf("<http://p.test/r%d> <http://p.test/v> \"%d\" .\n<http://p.test/r%d> <http://p.test/b> _:b%d .\n_:b%d <http://p.test/w> \"%d\" .\n", i, v, i, i, i, v)
	}
	docs := map[int]string{}
	write := func() {
		var b strings.Builder
		for _, d := range docs {
			b.WriteString(d)
		}
		if err := os.WriteFile(data+".tmp", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(data+".tmp", data); err != nil {
			t.Fatal(err)
		}
	}
	want := func() []rdf.Triple {
		var out []rdf.Triple
		for _, d := range docs {
			out = append(out, graphstoretest.NT(d)...)
		}
		return out
	}
	write() // empty baseline: the server journals only later changes
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	hc, _ := testnet.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Open(ctx, server.Config{BaseURL: base, StateDir: t.TempDir(), NoSync: true, Rescan: -1,
		Collections: []server.CollectionConfig{{Name: "c", Path: data}},
		Push:        []string{recv.URL + "/"}, PushClient: hc, PushBaseDelay: time.Millisecond, PushMaxDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	defer func() { cancel(); hs.Close(); <-done; srv.Close() }()

	graph := base + "c/"
	for batch, change := range []func(){
		func() {
			for i := range 40 {
				docs[i] = doc(i, 0)
			}
		},
		func() {
			for i := range 10 {
				delete(docs, i)
			}
			for i := 10; i < 25; i++ {
				docs[i] = doc(i, 1)
			}
		},
		func() {
			for i := 40; i < 50; i++ {
				docs[i] = doc(i, 2)
			}
		},
	} {
		change()
		write()
		if _, err := srv.Collection("c").Load(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			var got []rdf.Triple
			for tr, err := range store.Triples(context.Background(), graph) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, tr)
			}
			if rdf.Isomorphic(got, want()) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("batch %d: receiver has %d triples, want %d", batch, len(got), len(want()))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
