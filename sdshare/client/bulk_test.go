package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/bulk"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/atom"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
	"github.com/resourcesync-go/resourcesync/sdshare/internal/fragbulk"
)

// bulkFixture serves n changed fragments (one page) whose entries link
// /fragment?r=I, a fragments feed advertising the bulk endpoint at
// endpoint, and the GETs of the fragments; bulkHandler answers the bulk
// requests. gets counts the fragment GETs.
type bulkFixture struct {
	fs   *fixtureServer
	docs []string
	gets atomic.Int64
	reqs atomic.Int64
}

func fragDoc(i int) string {
	return fmt.Sprintf("<http://x/r%d> <http://x/v> \"changed %d\" .\n<http://x/r%d> <http://x/note> _:b .\n_:b <http://x/text> \"n%d\" .\n", i, i, i, i)
}

func newBulkFixture(t *testing.T, n int, endpoint string, bulkHandler func(bf *bulkFixture, w http.ResponseWriter, paths []string)) *bulkFixture {
	bf := &bulkFixture{fs: collectionServer(t, snapAt, benchSnapshot(n))}
	var entries []string
	for i := range n {
		bf.docs = append(bf.docs, fragDoc(i))
		entries = append(entries, entryDoc(fmt.Sprint(i), "2026-01-01T00:00:00Z", []string{fmt.Sprintf("http://x/r%d", i)}, relFragment, nt, fmt.Sprintf("/fragment?r=%d", i)))
	}
	doc := feedDoc("", entries...)
	bf.fs.handle("/fragments", func(w http.ResponseWriter, r *http.Request) {
		if endpoint != "" {
			w.Header().Set("Link", "<"+endpoint+`>; rel="`+fragbulk.Rel+`"`)
		}
		w.Header().Set("Content-Type", "application/atom+xml")
		io.WriteString(w, doc)
	})
	bf.fs.handle("/fragment", func(w http.ResponseWriter, r *http.Request) {
		var i int
		fmt.Sscan(r.URL.Query().Get("r"), &i)
		bf.gets.Add(1)
		w.Header().Set("Content-Type", nt)
		io.WriteString(w, bf.docs[i])
	})
	bf.fs.handle("/bulk", func(w http.ResponseWriter, r *http.Request) {
		paths, err := bulk.ParseRequest(r.Body)
		if err != nil || r.Method != http.MethodPost {
			http.Error(w, "bad bulk request", http.StatusBadRequest)
			return
		}
		bf.reqs.Add(1)
		bulkHandler(bf, w, paths)
	})
	return bf
}

// member writes path's member as our server would.
func (bf *bulkFixture) member(w io.Writer, p string) {
	var i int
	fmt.Sscanf(p, "fragment?r=%d", &i)
	w.Write(bulk.AppendHeader(nil, 200, len(bf.docs[i]), p))
	io.WriteString(w, bf.docs[i])
}

func honest(bf *bulkFixture, w http.ResponseWriter, paths []string) {
	w.Header().Set("Content-Type", bulk.MediaType)
	for _, p := range paths {
		bf.member(w, p)
	}
	io.WriteString(w, bulk.End)
}

// TestBulkAgainstHostileServers: whatever a server answers to a bulk
// request (a member not asked for, a truncated stream, a member over
// bulk.MaxMember, statements about another resource, errors, a
// redirect), or wherever it puts the endpoint, the store ends with
// exactly the fragments the GETs give, and nothing else; the fragments
// a bulk answer did not bring whole and right are fetched by GET.
func TestBulkAgainstHostileServers(t *testing.T) {
	const n = 30
	other := newFixtureServer(t)
	var otherHits atomic.Int64
	other.handle("/bulk", func(w http.ResponseWriter, r *http.Request) { otherHits.Add(1); honest(nil, w, nil) })
	for _, tc := range []struct {
		name     string
		endpoint string // "" : /bulk on the fixture
		handler  func(bf *bulkFixture, w http.ResponseWriter, paths []string)
		minGets  int64 // fragment GETs at least
		maxGets  int64 // and at most
		noBulk   bool  // no bulk request may be made
	}{
		{name: "honest", handler: honest, maxGets: 0},
		{name: "member not asked for", handler: func(bf *bulkFixture, w http.ResponseWriter, paths []string) {
			w.Header().Set("Content-Type", bulk.MediaType)
			bf.member(w, paths[0])
			bf.member(w, "fragment?r=29") // not the second path asked
			io.WriteString(w, bulk.End)
		}, minGets: n - 1, maxGets: n - 1},
		{name: "truncated", handler: func(bf *bulkFixture, w http.ResponseWriter, paths []string) {
			w.Header().Set("Content-Type", bulk.MediaType)
			bf.member(w, paths[0])
			w.Write(bulk.AppendHeader(nil, 200, 500, paths[1]))
			io.WriteString(w, "<http://x/r1> <http://x/v> \"cut")
		}, minGets: n - 1, maxGets: n - 1},
		{name: "huge member", handler: func(bf *bulkFixture, w http.ResponseWriter, paths []string) {
			w.Header().Set("Content-Type", bulk.MediaType)
			w.Write(bulk.AppendHeader(nil, 200, 1<<40, paths[0]))
			io.WriteString(w, strings.Repeat("<http://x/r0> <http://x/v> \"x\" .\n", 1000))
		}, minGets: n, maxGets: n},
		{name: "another resource's statements", handler: func(bf *bulkFixture, w http.ResponseWriter, paths []string) {
			w.Header().Set("Content-Type", bulk.MediaType)
			for i, p := range paths {
				if i == 3 {
					evil := "<http://x/r0> <http://x/owned> \"yes\" .\n"
					w.Write(bulk.AppendHeader(nil, 200, len(evil), p))
					io.WriteString(w, evil)
					continue
				}
				bf.member(w, p)
			}
			io.WriteString(w, bulk.End)
		}, minGets: 1, maxGets: 1},
		{name: "members refused", handler: func(bf *bulkFixture, w http.ResponseWriter, paths []string) {
			w.Header().Set("Content-Type", bulk.MediaType)
			for _, p := range paths {
				w.Write(bulk.AppendHeader(nil, 503, 0, p))
			}
			io.WriteString(w, bulk.End)
		}, minGets: n, maxGets: n},
		{name: "error status", handler: func(bf *bulkFixture, w http.ResponseWriter, paths []string) {
			http.Error(w, "no", http.StatusInternalServerError)
		}, minGets: n, maxGets: n},
		{name: "redirect", handler: func(bf *bulkFixture, w http.ResponseWriter, paths []string) {
			http.Redirect(w, &http.Request{Method: http.MethodPost}, "/elsewhere", http.StatusTemporaryRedirect)
		}, minGets: n, maxGets: n},
		{name: "endpoint on another origin", endpoint: other.URL() + "/bulk", handler: honest, minGets: n, maxGets: n, noBulk: true},
		{name: "endpoint of another shape", endpoint: "/bulk?x=1", handler: honest, minGets: n, maxGets: n, noBulk: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint := tc.endpoint
			if endpoint == "" {
				endpoint = "/bulk"
			}
			bf := newBulkFixture(t, n, endpoint, tc.handler)
			hc, _ := testnet.Client(t)
			store := memstore.New()
			defer store.Close()
			st, err := OpenState(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			cfg := Config{Overview: bf.fs.URL() + "/", Store: store, State: st, HTTPClient: hc,
				Graph: func(Collection) string { return "http://x/g" }, Retry: RetryPolicy{BaseDelay: time.Millisecond}}
			rep, err := Sync(context.Background(), cfg) // the snapshot, then the fragments
			if err != nil || !rep.OK() {
				t.Fatalf("%v %+v", err, rep)
			}
			c := rep.Collections[0]
			if c.Applied != n {
				t.Errorf("applied %d, want %d", c.Applied, n)
			}
			if g := bf.gets.Load(); g < tc.minGets || g > tc.maxGets {
				t.Errorf("%d fragment GETs, want %d to %d", g, tc.minGets, tc.maxGets)
			}
			if int64(c.Bulk) != n-bf.gets.Load() {
				t.Errorf("report: %d in bulk, %d GETs of %d", c.Bulk, bf.gets.Load(), n)
			}
			if tc.noBulk && bf.reqs.Load()+otherHits.Load() > 0 {
				t.Errorf("bulk requests made: %d here, %d elsewhere", bf.reqs.Load(), otherHits.Load())
			}
			for i := range n {
				got, err := store.Fragment(context.Background(), "http://x/g", rdf.IRI(fmt.Sprintf("http://x/r%d", i)))
				if err != nil {
					t.Fatal(err)
				}
				want, _ := collect(rdf.Parse(strings.NewReader(bf.docs[i]), rdf.NTriples, ""))
				if !rdf.Isomorphic(got, want) {
					t.Fatalf("r%d: %v, want %v", i, got, want)
				}
			}
		})
	}
}

func collect(seq func(func(rdf.Triple, error) bool)) ([]rdf.Triple, error) {
	var out []rdf.Triple
	for t, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, t)
	}
	return out, nil
}

// FuzzBulkResponse: whatever bytes a bulk response holds, readBulk
// delivers only members asked for, each parsed and about its entry's
// resource, and every entry is either delivered or left for its GET,
// never both.
func FuzzBulkResponse(f *testing.F) {
	ok := string(bulk.AppendHeader(nil, 200, len(fragDoc(0)), "fragment?r=0")) + fragDoc(0) +
		string(bulk.AppendHeader(nil, 404, 0, "fragment?r=1")) + bulk.End
	f.Add(ok)
	f.Add(ok[:40])
	f.Add("200 65537 fragment?r=0\n")
	f.Add(string(bulk.AppendHeader(nil, 200, 40, "fragment?r=0")) + "<http://x/r9> <http://x/v> \"evil\"     .\n")
	f.Fuzz(func(t *testing.T, body string) {
		const dir = "http://h.test/c/"
		var entries []atom.Entry
		var paths []string
		for i := range 2 {
			p := fmt.Sprintf("fragment?r=%d", i)
			paths = append(paths, p)
			entries = append(entries, atom.Entry{ID: fmt.Sprint(i), Updated: time.Unix(1, 0), Resources: []string{fmt.Sprintf("http://x/r%d", i)},
				Links: []atom.Link{{Rel: relFragment, Type: nt, Href: dir + p}}})
		}
		s := &syncer{cfg: Config{MaxFragmentBytes: DefaultMaxFragmentBytes}}
		p := &pipeline{inflight: make(chan struct{}, 1)}
		fp := &feedPage{entries: entries, p: p, results: []chan fetched{make(chan fetched, 1), make(chan fetched, 1)}}
		rest := s.readBulk(strings.NewReader(body), fp, dir, []int{0, 1}, paths)
		left := map[int]bool{}
		for _, i := range rest {
			left[i] = true
		}
		for i := range 2 {
			select {
			case r := <-fp.results[i]:
				if left[i] {
					t.Fatalf("entry %d delivered and left for its GET", i)
				}
				if r.err != nil || r.frag.Resource.Value != entries[i].Resources[0] {
					t.Fatalf("entry %d: %+v", i, r)
				}
				for _, tr := range r.frag.Triples {
					if !tr.S.IsBlank() && tr.S.Value != entries[i].Resources[0] {
						t.Fatalf("entry %d: statement about %s", i, tr.S.Value)
					}
				}
			default:
				if !left[i] {
					t.Fatalf("entry %d neither delivered nor left", i)
				}
			}
		}
	})
}
