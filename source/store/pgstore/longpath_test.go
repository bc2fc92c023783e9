package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/source/scan"
)

// TestScanLongPath: one file whose path is longer than a B-tree index row
// holds (incompressible names, 3,200 bytes) must not stop the Source: the
// scanner skips it with a warning (Stats.Skipped), as a file it cannot
// read, and records the rest, on the baseline and on later scans.
func TestScanLongPath(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	root := t.TempDir()
	deep := root
	for range 16 {
		b := make([]byte, 100)
		rand.Read(b)
		deep = filepath.Join(deep, hex.EncodeToString(b)) // 200 bytes
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Skipf("this filesystem refuses a %d-byte path: %v", len(deep), err)
	}
	for _, p := range []string{filepath.Join(deep, "f"), filepath.Join(root, "a"), filepath.Join(root, strings.Repeat("n", 200))} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := open(t, pgtest.Database(t), "long")
	sc, err := scan.New(scan.Options{Root: root, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	for i, add := range []string{"", "b"} {
		if add != "" {
			os.WriteFile(filepath.Join(root, add), []byte("y"), 0o644)
			os.WriteFile(filepath.Join(deep, "g"), []byte("y"), 0o644)
		}
		stats, err := sc.Scan(ctx)
		if err != nil {
			t.Fatalf("scan %d: %v", i, err)
		}
		if stats.Skipped == 0 {
			t.Errorf("scan %d: nothing skipped: %+v", i, stats)
		}
		s, _ := st.Stats(ctx)
		if want := 2 + i; s.Resources != want {
			t.Errorf("scan %d: %d resources, want %d", i, s.Resources, want)
		}
	}
}
