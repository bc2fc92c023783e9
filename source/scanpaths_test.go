package source

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/status"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// TestScanPathsNotified: changes journaled by ScanPaths (a harvester's
// page) are notified by the next publish (Render), although that publish
// scans nothing itself; the status page shows Config.StatusSections.
func TestScanPathsNotified(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	var mu sync.Mutex
	var got [][2]uint64
	src, err := Open(Config{BaseURL: "http://127.0.0.1/", Sets: []SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		OnUpdate: func(_ context.Context, _ string, _ store.Store, from, to uint64) {
			mu.Lock()
			got = append(got, [2]uint64{from, to})
			mu.Unlock()
		},
		StatusSections: func() []status.Section {
			return []status.Section{{ID: "oai-pmh", Title: "OAI-PMH repository", Problem: "it failed",
				Facts: []status.Fact{{Name: "Records", Value: "42", Figure: "oai-records"}}}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"b.txt", "c.txt"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(name), 0o644)
		sc, err := src.ScanPaths(ctx, []string{p})
		if err != nil || sc["default"].Created != 1 {
			t.Fatalf("ScanPaths %s: %+v, %v", name, sc, err)
		}
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n != 0 {
			t.Fatalf("ScanPaths %d notified before a publish: %v", i, got)
		}
	}
	if _, err := src.Render(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0][1]-got[0][0] != 2 {
		t.Fatalf("notified %v, want one range of the 2 changes ScanPaths journaled", got)
	}
	rec := httptest.NewRecorder()
	src.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/.resourcesync/", nil))
	body := rec.Body.String()
	for _, want := range []string{`<section id="oai-pmh"`, "OAI-PMH repository", `data-figure="oai-records">42<`, `class="bad" data-figure="problem">it failed`} {
		if !strings.Contains(body, want) {
			t.Errorf("status page lacks %s:\n%s", want, body)
		}
	}
}
