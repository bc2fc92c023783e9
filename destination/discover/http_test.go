package discover

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/origin"
)

// TestGetterOffOrigin: a document that redirects to another loopback
// port is refused with ErrOffOrigin, once (no retry), and discovery from
// it stops with that error; a redirect within the Source is followed.
func TestGetterOffOrigin(t *testing.T) {
	var otherHits atomic.Int64
	other := newSite(t, map[string]page{
		"/rl.xml": {body: xmlDoc("urlset", "resourcelist", "")},
	})
	otherProxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		other.Config.Handler.ServeHTTP(w, r)
	}))
	defer otherProxy.Close()
	var srcHits atomic.Int64
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srcHits.Add(1)
		switch r.URL.Path {
		case "/away.xml":
			http.Redirect(w, r, otherProxy.URL+"/rl.xml", http.StatusMovedPermanently)
		case "/home.xml":
			http.Redirect(w, r, "/real.xml", http.StatusFound)
		case "/real.xml":
			w.Write([]byte(xmlDoc("urlset", "resourcelist", "")))
		default:
			http.NotFound(w, r)
		}
	}))
	defer src.Close()
	g := getter(t)
	var err error
	if g.Origin, err = origin.New(src.URL+"/", nil); err != nil {
		t.Fatal(err)
	}
	_, err = g.Open(context.Background(), src.URL+"/away.xml")
	want := "redirect to " + otherProxy.URL + "/rl.xml leaves the Source's authority"
	if !errors.Is(err, ErrOffOrigin) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want ErrOffOrigin %q", err, want)
	}
	if n := srcHits.Load(); n != 1 {
		t.Errorf("%d requests; a refused redirect is not retried", n)
	}
	if _, err := Discover(context.Background(), g, src.URL+"/away.xml"); !errors.Is(err, ErrOffOrigin) {
		t.Errorf("Discover: %v, want ErrOffOrigin", err)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}
	d, err := g.Open(context.Background(), src.URL+"/home.xml")
	if err != nil {
		t.Fatalf("redirect within the Source: %v", err)
	}
	d.Close()
}

// TestGetterStallAndTrickle: a document that sends its headers and then
// nothing, or one byte every 10ms, is abandoned (ErrStalled, ErrTooSlow)
// and retried instead of hanging the run. Limits are small to keep the
// test short.
func TestGetterStallAndTrickle(t *testing.T) {
	done := make(chan struct{})
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		wait := func(d time.Duration) bool {
			select {
			case <-r.Context().Done():
				return false
			case <-done:
				return false
			case <-time.After(d):
				return true
			}
		}
		switch r.URL.Path {
		case "/headers-only.xml":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			wait(time.Hour)
		case "/no-headers.xml":
			wait(time.Hour)
		case "/trickle.xml":
			doc := xmlDoc("urlset", "resourcelist", "")
			for i := range len(doc) {
				w.Write([]byte{doc[i]})
				w.(http.Flusher).Flush()
				if !wait(10 * time.Millisecond) {
					return
				}
			}
		}
	}))
	defer srv.Close()
	defer close(done)
	for _, tc := range []struct {
		path  string
		limit func(*Getter)
		want  error
	}{
		{"/headers-only.xml", func(g *Getter) { g.StallTimeout = 100 * time.Millisecond }, ErrStalled},
		{"/no-headers.xml", func(g *Getter) { g.StallTimeout = 100 * time.Millisecond }, ErrStalled},
		{"/trickle.xml", func(g *Getter) {
			g.StallTimeout = time.Second
			g.MinRate, g.MinRateWindow = 1000, 100*time.Millisecond
		}, ErrTooSlow},
	} {
		hits.Store(0)
		g := getter(t)
		g.Retries = 1
		tc.limit(g)
		_, err := g.Open(context.Background(), srv.URL+tc.path)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "after 2 attempts") {
			t.Errorf("%s: err = %v, want %v after 2 attempts", tc.path, err, tc.want)
		}
		if n := hits.Load(); n != 2 {
			t.Errorf("%s: %d requests, want 2", tc.path, n)
		}
	}
}
