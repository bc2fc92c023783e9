package client

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

func gzipped(t *testing.T, doc string, members int) []byte {
	t.Helper()
	var b bytes.Buffer
	for range members {
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write([]byte(doc))
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestGzipBodies: the client asks for gzip and decodes it itself; an
// ordinary gzip body reads as the document, one that expands more than
// maxExpansion-fold past expansionFloor fails with ErrTooLarge at once,
// without a retry, whatever the document limit.
func TestGzipBodies(t *testing.T) {
	doc := "<http://x/a> <http://x/p> \"1\" .\n"
	bomb := gzipped(t, strings.Repeat(strings.Repeat("b", 1000)+"\n", 1<<10), 64) // 64 MiB from about 64 KB
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding %q, want gzip", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Type", "application/n-triples")
		w.Header().Set("Content-Encoding", "gzip")
		switch r.URL.Path {
		case "/ok":
			w.Write(gzipped(t, doc, 2)) // two members, as a concatenating server sends
		case "/bomb":
			w.Write(bomb)
		}
	}))
	defer srv.Close()
	hc, _ := testnet.Client(t)
	f := &fetcher{hc: hc, policy: retry.Policy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}, maxWait: time.Second}
	ctx := context.Background()

	body, _, _, _, err := f.get(ctx, srv.URL+"/ok", "", 1<<20)
	if err != nil || string(body) != doc+doc {
		t.Fatalf("gzip body: %q, %v; want the document twice", body, err)
	}
	hits.Store(0)
	_, _, _, _, err = f.get(ctx, srv.URL+"/bomb", "", 1<<30)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "expands more than 200-fold") {
		t.Fatalf("gzip bomb: %v, want ErrTooLarge", err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("gzip bomb asked for %d times, want once (permanent)", n)
	}
}

// TestDenseFragment: a fragment is held whole, and its memory grows with
// its statements, not its bytes: Turtle holds one in 2 bytes ("1,"), so
// a 64 MiB fragment of object lists parsed into about 10 GB. A fragment
// whose statements need more than fragmentMemoryFactor × MaxFragmentBytes
// (sdshare.TripleMemory each) fails with ErrTooLarge, nothing applied,
// while one as dense that fits is applied. Before, both were applied.
func TestDenseFragment(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int // statements of 2 bytes
		ok   bool
	}{
		{"fits", 1500, true},
		{"too many statements", 100_000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := collectionServer(t, "2020-06-01T00:00:00Z", "<http://x/a> <http://x/p> \"0\" .\n")
			fs.feed("/fragments", feedDoc("", entryDoc("a", "2020-06-02T00:00:00Z", []string{"http://x/a"}, relFragment, "text/turtle", "/frag/a")))
			var b strings.Builder
			b.WriteString("<http://x/a> <http://x/p> ")
			for i := range tc.n {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%d", i%10)
			}
			b.WriteString(" .\n")
			fs.handle("/frag/a", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/turtle")
				w.Write([]byte(b.String()))
			})
			e := newEnv(t)
			cfg := e.config(fs.URL() + "/")
			cfg.MaxFragmentBytes = 256 << 10 // 200,000 bytes fit; 100,000 statements (100 MB) do not
			rep, err := Sync(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			cr := rep.Collections[0]
			got := len(graphOf(t, e.store, cr.Graph))
			if tc.ok {
				if cr.Applied != 1 || got != 10 {
					t.Errorf("applied %d, %d statements stored; want 1 and 10 (failures %v)", cr.Applied, got, cr.Failures)
				}
				return
			}
			if cr.Applied != 0 || len(cr.Failures) != 1 || !strings.Contains(cr.Failures[0].Err, "too large") || !strings.Contains(cr.Failures[0].Err, "statements") {
				t.Errorf("applied %d, failures %v; want the fragment refused as too large", cr.Applied, cr.Failures)
			}
			if got != 1 {
				t.Errorf("%d statements stored, want the snapshot's one", got)
			}
		})
	}
}
