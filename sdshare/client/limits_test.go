package client

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
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

	body, _, _, err := f.get(ctx, srv.URL+"/ok", "", 1<<20)
	if err != nil || string(body) != doc+doc {
		t.Fatalf("gzip body: %q, %v; want the document twice", body, err)
	}
	hits.Store(0)
	_, _, _, err = f.get(ctx, srv.URL+"/bomb", "", 1<<30)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "expands more than 200-fold") {
		t.Fatalf("gzip bomb: %v, want ErrTooLarge", err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("gzip bomb asked for %d times, want once (permanent)", n)
	}
}
