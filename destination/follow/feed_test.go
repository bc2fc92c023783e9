package follow_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/follow"
)

// TestFollowFeed: sync --follow of an IIIF Change Discovery feed polls it
// and applies a new activity without a restart.
func TestFollowFeed(t *testing.T) {
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

	dest := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := destination.Open(ctx, base+"/c", destination.Options{Dest: dest, Client: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	done := make(chan error, 1)
	go func() {
		done <- follow.Run(ctx, m, follow.Options{Mux: http.NewServeMux(), CallbackBase: "http://127.0.0.1:1/", PollInterval: 50 * time.Millisecond})
	}()
	waitFile := func(name, want string) {
		t.Helper()
		for ctx.Err() == nil {
			if b, err := os.ReadFile(filepath.Join(dest, name)); err == nil && string(b) == want {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s never became %q", name, want)
	}
	waitFile("a", "a")
	mu.Lock()
	items = append(items, map[string]any{"type": "Create", "object": map[string]any{"id": base + "/b"}, "endTime": time.Now().UTC().Format(time.RFC3339Nano)})
	objects["/b"] = "b"
	mu.Unlock()
	waitFile("b", "b")
	cancel()
	<-done
}
