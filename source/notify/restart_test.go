package notify_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/notify"
)

// TestScanPathsKilledBeforePublishNotified: changes that ScanPaths (serve
// --oai-pmh's harvester) journaled just before the process died, before
// any publish notified them, are notified after the restart although the
// new process's first update finds nothing new: the position notified is
// the store's (notify.seq), not the Source's in-memory one, and the
// service's ticker sends what lies beyond it.
func TestScanPathsKilledBeforePublishNotified(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hub.Close()
	dir, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	open := func() (*source.Source, *notify.Service) {
		cfg := source.Config{BaseURL: "http://127.0.0.1:1/", Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: state}
		svc, err := notify.Setup(&cfg, notify.ServiceConfig{ExternalHub: hub.URL + "/hub", HubClient: hub.Client(), RetryInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		src, err := source.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Bind(context.Background(), src); err != nil {
			t.Fatal(err)
		}
		return src, svc
	}
	ctx := context.Background()
	src, svc := open()
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "harvested.txt")
	os.WriteFile(p, []byte("h"), 0o644)
	if sc, err := src.ScanPaths(ctx, []string{p}); err != nil || sc["default"].Created != 1 {
		t.Fatalf("ScanPaths: %+v %v", sc, err)
	}
	// Killed here: journaled, neither published nor notified.
	src.Close()
	svc.Close()
	mu.Lock()
	n := len(bodies)
	mu.Unlock()
	if n != 0 {
		t.Fatalf("notified before any publish: %q", bodies)
	}

	src, svc = open()
	defer svc.Close()
	defer src.Close()
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	svc.Run(rctx, src)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := strings.Join(bodies, "\n")
		mu.Unlock()
		if strings.Contains(got, "harvested.txt") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change journaled before the kill was never notified after the restart: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
