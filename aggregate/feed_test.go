package aggregate

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAggregateFeed: a sources line whose SOURCE is an IIIF Change
// Discovery collection is mirrored, and polled: a new activity arrives
// without a restart.
func TestAggregateFeed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	var mu sync.Mutex
	items := []map[string]any{{"type": "Create", "object": map[string]any{"id": base + "/a"}, "endTime": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)}}
	objects := map[string]string{"/a": "a"}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/c":
			json.NewEncoder(w).Encode(map[string]any{"type": "OrderedCollection", "last": map[string]any{"id": base + "/p"}})
		case "/p":
			json.NewEncoder(w).Encode(map[string]any{"type": "OrderedCollectionPage", "partOf": base + "/c", "orderedItems": items})
		default:
			if b, ok := objects[r.URL.Path]; ok {
				w.Write([]byte(b))
				return
			}
			http.NotFound(w, r)
		}
	})}}
	srv.Start()
	t.Cleanup(srv.Close)

	a, _ := testAggregator(t, nil)
	srcs, err := ParseSources(strings.NewReader(base+"/c feed --poll-interval 100ms\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	a.SetSources(srcs)
	runAggregator(t, a)
	has := func(name, want string) func() bool {
		return func() bool {
			b, err := os.ReadFile(filepath.Join(a.opt.Root, "feed", name))
			return err == nil && string(b) == want
		}
	}
	waitUntil(t, "the feed's first object", has("a", "a"))
	mu.Lock()
	items = append(items, map[string]any{"type": "Create", "object": map[string]any{"id": base + "/b"}, "endTime": time.Now().UTC().Format(time.RFC3339Nano)})
	objects["/b"] = "b"
	mu.Unlock()
	waitUntil(t, "the feed's new object", has("b", "b"))
	if s := row(a, "feed"); s.Failures != 0 {
		t.Errorf("feed source: %+v", s)
	}
}
