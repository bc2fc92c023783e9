package client

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

// benchSnapshot is an N-Triples snapshot of n resources, 5 triples each
// (one through a blank node).
func benchSnapshot(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<http://b.test/r%d> <http://b.test/label> \"resource %d\"@en .\n", i, i)
		fmt.Fprintf(&b, "<http://b.test/r%d> <http://b.test/n> \"%d\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n", i, i)
		fmt.Fprintf(&b, "<http://b.test/r%d> <http://b.test/link> <http://b.test/r%d> .\n", i, (i*7)%n)
		fmt.Fprintf(&b, "<http://b.test/r%d> <http://b.test/note> _:n%d .\n_:n%d <http://b.test/text> \"note\" .\n", i, i, i)
	}
	return b.String()
}

// BenchmarkSnapshot: the client loading a 100,000-triple snapshot over
// loopback HTTP into each store, beside the raw N-Triples parse rate of
// the same document (triples/s in each).
func BenchmarkSnapshot(b *testing.B) {
	const resources = 20000
	doc := benchSnapshot(resources)
	triples := float64(resources * 5)
	b.Run("parse-only", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for _, err := range rdf.Parse(strings.NewReader(doc), rdf.NTriples, "") {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		b.ReportMetric(triples*float64(b.N)/b.Elapsed().Seconds(), "triples/s")
	})
	for _, kind := range []string{"memstore", "boltstore"} {
		b.Run(kind, func(b *testing.B) {
			fs := collectionServer(b, snapAt, doc)
			fs.feed("/fragments", feedDoc(""))
			hc, _ := testnet.Client(b)
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				var s graphstore.Store = memstore.New()
				if kind == "boltstore" {
					bs, err := boltstore.OpenDir(dir, nil)
					if err != nil {
						b.Fatal(err)
					}
					s = bs
				}
				st, err := OpenState(dir)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				rep, err := Sync(context.Background(), Config{Overview: fs.URL() + "/", Store: s, State: st, HTTPClient: hc})
				if err != nil || !rep.OK() || rep.Collections[0].SnapshotTriples != int64(triples) {
					b.Fatalf("%v %+v", err, rep)
				}
				b.StopTimer()
				st.Close()
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(triples*float64(b.N)/b.Elapsed().Seconds(), "triples/s")
		})
	}
}

// BenchmarkFragments: the client applying a page of 1,000 fragments (5
// triples each, one page per run). The baseline of the same run is
// "boltstore-one-by-one", the client before batches: one GET at a time,
// one ApplyFragment (one commit, one fsync) each. "boltstore-fetchers1"
// batches with one GET at a time; "boltstore" is the default (batches,
// DefaultFetchers); "memstore" shows what the HTTP side alone allows.
func BenchmarkFragments(b *testing.B) {
	const n = 1000
	var entries []string
	frags := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("f%d", i)
		entries = append(entries, entryDoc(id, "2026-01-01T00:00:00Z", []string{fmt.Sprintf("http://b.test/r%d", i)}, relFragment, nt, "/frag/"+id))
		var one bytes.Buffer
		fmt.Fprintf(&one, "<http://b.test/r%d> <http://b.test/label> \"changed %d\"@en .\n", i, i)
		fmt.Fprintf(&one, "<http://b.test/r%d> <http://b.test/n> \"%d\" .\n<http://b.test/r%d> <http://b.test/note> _:x .\n_:x <http://b.test/text> \"new\" .\n_:x <http://b.test/more> \"x\" .\n", i, i, i)
		frags["/frag/"+id] = one.String()
	}
	for _, c := range []struct {
		name     string
		bolt     bool
		unbatch  bool
		fetchers int
	}{
		{"boltstore-one-by-one", true, true, 1},
		{"boltstore-fetchers1", true, false, 1},
		{"boltstore", true, false, 0},
		{"memstore", false, false, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			fs := collectionServer(b, snapAt, benchSnapshot(n))
			fs.feed("/fragments", feedDoc("", entries...))
			fs.handle("/frag/", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", nt)
				w.Write([]byte(frags[r.URL.Path]))
			})
			hc, _ := testnet.Client(b)
			dir := b.TempDir()
			var s graphstore.Store = memstore.New()
			if c.bolt {
				bs, err := boltstore.OpenDir(dir, nil)
				if err != nil {
					b.Fatal(err)
				}
				s = bs
			}
			defer s.Close()
			if c.unbatch {
				s = unbatched{s}
			}
			st, err := OpenState(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			cfg := Config{Overview: fs.URL() + "/", Store: s, State: st, HTTPClient: hc, Fetchers: c.fetchers}
			if _, err := Sync(context.Background(), cfg); err != nil { // the snapshot
				b.Fatal(err)
			}
			for b.Loop() {
				rep, err := Sync(context.Background(), cfg)
				if err != nil || !rep.OK() || rep.Collections[0].Applied != n {
					b.Fatalf("%v %+v", err, rep)
				}
			}
			b.ReportMetric(float64(5*n*b.N)/b.Elapsed().Seconds(), "triples/s")
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "fragments/s")
		})
	}
}

// unbatched hides a store's ApplyFragments: graphstore.ApplyFragments
// then applies one fragment at a time.
type unbatched struct{ graphstore.Store }
