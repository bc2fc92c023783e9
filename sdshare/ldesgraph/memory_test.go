package ldesgraph_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/feedsync"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/ldesgraph"
)

// memStream serves an LDES of n members, 500 to a node, each node
// leading to the next, rendered on the fly: member i is a version of
// object i with a title of 300 bytes and a creator (a blank node).
func memStream(t *testing.T, n int) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	const per = 500
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	pad := strings.Repeat("x", 300)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/turtle")
		bw := bufio.NewWriter(w)
		defer bw.Flush()
		bw.WriteString(prefixes)
		fmt.Fprintf(bw, "<%s/s> a ldes:EventStream ; ldes:timestampPath as:published ; ldes:versionOfPath dcterms:isVersionOf ; tree:view <%s/n/0> .\n", base, base)
		if r.URL.Path == "/s" {
			return
		}
		k, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/n/"))
		if err != nil || k < 0 || k*per >= max(n, 1) {
			http.NotFound(w, r)
			return
		}
		if (k+1)*per < n {
			fmt.Fprintf(bw, "<> tree:relation [ a tree:GreaterThanOrEqualToRelation ; tree:node <%s/n/%d> ; tree:path as:published ; tree:value %q^^xsd:dateTime ] .\n", base, k+1, t0.Format(time.RFC3339))
		}
		for i := k * per; i < min(n, (k+1)*per); i++ {
			fmt.Fprintf(bw, "<%s/s> tree:member <%s/v%d> .\n<%s/v%d> a as:Create ; dcterms:isVersionOf <%s/o/%d> ; as:published %q^^xsd:dateTime ; dcterms:title \"%d %s\" ; dcterms:creator [ dcterms:title \"someone %d\" ] .\n",
				base, base, i, base, i, base, i, t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i, pad, i)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base + "/s"
}

// probe is a real store that, at the first graph written (the walk is
// over, every version collected), records the live heap and ends the
// run.
type probe struct {
	graphstore.Store
	heap   uint64
	cancel func()
}

var errProbed = errors.New("probed")

func (p *probe) ReplaceGraph(ctx context.Context, g string, ts iter.Seq2[rdf.Triple, error]) error {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.heap = ms.HeapAlloc
	p.cancel()
	return errProbed
}

// TestApplyMemoryFlat: the versions a run collects before it writes the
// graphs are not held in memory: the live heap when the first graph is
// written is about the same after 2,000 and 20,000 members (held in a
// map, 18,000 more members of ~500 bytes of statements each grew it by
// tens of MB).
func TestApplyMemoryFlat(t *testing.T) {
	heap := map[int]uint64{}
	if testing.Short() {
		t.Skip("22,000 members: about 3 s, 20 s under -race (the -short run), and smaller streams fit in the spool's memory buffer")
	}
	sizes := []int{2000, 20000}
	for _, n := range sizes {
		stream := memStream(t, n)
		store, err := boltstore.OpenDir(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		p := &probe{Store: store, cancel: cancel}
		get := func(ctx context.Context, u string) (feedsync.Fetched, error) {
			req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return feedsync.Fetched{}, err
			}
			return feedsync.Fetched{ReadCloser: resp.Body, URL: u, Header: resp.Header}, nil
		}
		_, err = ldesgraph.Apply(ctx, p, get, stream, ldesgraph.Position{}, feedsync.Options{})
		cancel()
		store.Close()
		if !errors.Is(err, errProbed) {
			t.Fatalf("%d members: %v", n, err)
		}
		heap[n] = p.heap
	}
	grown := int64(heap[sizes[1]]) - int64(heap[sizes[0]])
	t.Logf("live heap at the first graph: %d KB after %d members, %d KB after %d", heap[sizes[0]]>>10, sizes[0], heap[sizes[1]]>>10, sizes[1])
	if grown > 4<<20 {
		t.Errorf("the live heap grew by %d KB from %d to %d members", grown>>10, sizes[0], sizes[1])
	}
}
