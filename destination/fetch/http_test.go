package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/origin"
)

// TestFetchOffOrigin: two loopback servers on different ports. A
// redirect from the Source to the other one, and a duplicate location on
// it, are refused with ErrOffOrigin and nothing is installed; the other
// server is never asked for the bytes. With its host allowed, both work.
func TestFetchOffOrigin(t *testing.T) {
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		w.Write([]byte("evil"))
	}))
	defer other.Close()
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, other.URL+"/x", http.StatusTemporaryRedirect)
		case "/inside":
			http.Redirect(w, r, "/ok", http.StatusPermanentRedirect)
		case "/ok":
			w.Write([]byte("good"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer src.Close()
	dir := t.TempDir()
	f := newFetcher(t)
	var err error
	if f.Origin, err = origin.New(src.URL+"/", nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		urls []string
		want string // the error's text
	}{
		{"redirect", []string{src.URL + "/redirect"}, "redirect to " + other.URL + "/x leaves the Source's authority"},
		{"duplicate", []string{src.URL + "/missing", other.URL + "/copy"}, "location " + other.URL + "/copy leaves the Source's authority"},
	} {
		p := filepath.Join(dir, tc.name)
		res, err := f.Fetch(context.Background(), Request{URLs: tc.urls, Path: p})
		if !errors.Is(err, ErrOffOrigin) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%s: err = %v, want ErrOffOrigin %q", tc.name, err, tc.want)
		}
		if tc.name == "redirect" && res.Attempts != 1 {
			t.Errorf("%s: %d attempts; a refused redirect is not retried", tc.name, res.Attempts)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: installed (%v)", tc.name, err)
		}
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}
	if res, err := f.Fetch(context.Background(), Request{URLs: []string{src.URL + "/inside"}, Path: filepath.Join(dir, "inside")}); err != nil || res.Length != 4 {
		t.Errorf("redirect within the Source: %+v %v", res, err)
	}

	f.Origin, _ = origin.New(src.URL+"/", []string{strings.TrimPrefix(other.URL, "http://")})
	for _, urls := range [][]string{{src.URL + "/redirect"}, {src.URL + "/missing", other.URL + "/copy"}} {
		p := filepath.Join(dir, "allowed")
		if res, err := f.Fetch(context.Background(), Request{URLs: urls, Path: p}); err != nil || res.Length != 4 {
			t.Errorf("allowed host %v: %+v %v", urls, res, err)
		}
	}
	noTemp(t, dir)
}

// TestFetchTrickle: a resource sent one byte at a time (here every 10ms,
// with small limits so that the test is short) is never idle long enough
// for the stall timeout, but falls below MinRate and is abandoned with
// ErrTooSlow, retried, and not installed.
func TestFetchTrickle(t *testing.T) {
	var hits atomic.Int64
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Length", "100000")
		for range 100000 {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	defer close(done)
	f := newFetcher(t)
	f.Retries = 1
	f.StallTimeout = time.Second
	f.MinRate, f.MinRateWindow = 1000, 100*time.Millisecond
	dir := t.TempDir()
	p := filepath.Join(dir, "slow")
	res, err := f.Fetch(context.Background(), Request{URLs: []string{srv.URL + "/slow"}, Path: p})
	if !errors.Is(err, ErrTooSlow) || !strings.Contains(err.Error(), "below 1000 bytes/s") {
		t.Fatalf("err = %v, want ErrTooSlow", err)
	}
	if res.Attempts != 2 || hits.Load() != 2 {
		t.Errorf("%d attempts, %d requests; want 2 (one retry)", res.Attempts, hits.Load())
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("installed: %v", err)
	}
	noTemp(t, dir)
}
