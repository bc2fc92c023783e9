package scan_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/storage"
)

// genContent is a Content of n generated objects that holds none of them:
// what a scan holds while it lists is then the scan's own memory.
type genContent struct{ n int }

func (g genContent) key(i int) string { return fmt.Sprintf("d%03d/f%06d.txt", i/500, i) }

var genBody = bytes.Repeat([]byte("x"), 200)

func (g genContent) List(ctx context.Context, after string, fn func(storage.Info) error) error {
	for i := range g.n {
		k := g.key(i)
		if k <= after {
			continue
		}
		if err := fn(storage.Info{Key: k, Size: int64(len(genBody)), ModTime: old, Version: "v" + k}); err != nil {
			return err
		}
	}
	return nil
}

func (g genContent) Stat(ctx context.Context, key string) (storage.Info, error) {
	return storage.Info{Key: key, Size: int64(len(genBody)), ModTime: old, Version: "v" + key}, nil
}

func (g genContent) Open(ctx context.Context, key string, off, n int64) (io.ReadCloser, storage.Info, error) {
	inf, _ := g.Stat(ctx, key)
	return io.NopCloser(bytes.NewReader(genBody)), inf, nil
}

func (genContent) Location() string { return "gen://" }
func (genContent) Close() error     { return nil }

const memObjectsEnv = "RESOURCESYNC_SCAN_MEM_OBJECTS"

// TestContentMemoryChild is the helper process of TestContentMemoryFlat.
func TestContentMemoryChild(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(memObjectsEnv))
	if n == 0 {
		t.Skip("helper process for TestContentMemoryFlat")
	}
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "state.db"), &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := scan.New(scan.Options{Content: genContent{n}, Store: db, Logger: quiet(), BatchSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	peakKB(t)
	if st, err := s.Scan(context.Background()); err != nil || st.Created != n {
		t.Fatal(st, err)
	}
	first := peakKB(t)
	if st, err := s.Scan(context.Background()); err != nil || st.Unchanged != n {
		t.Fatal(st, err)
	}
	rescan := peakKB(t)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fi, _ := os.Stat(filepath.Join(dir, "state.db"))
	fmt.Printf("peak %d %d\nheap sys %d MB, in use %d MB; state %d MB\n", first, rescan, ms.HeapSys>>20, ms.HeapInuse>>20, fi.Size()>>20)
}

// TestContentMemoryFlat: the peak RSS of a first scan and of an unchanged
// rescan of a Content does not grow with the number of objects (the
// listing is merged with the inventory as it streams), measured in child
// processes at two sizes, as TestMemoryFlat does for a directory.
func TestContentMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("scans 220,000 objects")
	}
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skip("needs Linux's /proc/self/clear_refs")
	}
	peaks := func(n int) (first, rescan int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestContentMemoryChild$", "-test.v")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", memObjectsEnv, n))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if _, err := fmt.Sscanf(l, "peak %d %d", &first, &rescan); err == nil {
				return first, rescan
			}
		}
		t.Fatalf("child printed no peak:\n%s", out)
		return
	}
	f1, r1 := peaks(20000)
	f2, r2 := peaks(200000)
	t.Logf("peak RSS, 20,000 -> 200,000 objects: first scan %d -> %d KB, rescan %d -> %d KB", f1, f2, r1, r2)
	// Measured: about +7 MB, while the state file grows by 28 MB (its
	// mapped pages count in the RSS). Holding the listing or the
	// inventory would cost well over 30 MB more at 200,000 objects (key,
	// Version and record for each).
	const allowKB = 16 << 10
	if f2-f1 > allowKB {
		t.Errorf("first scan: peak RSS grew by %d KB from 20,000 to 200,000 objects", f2-f1)
	}
	if r2-r1 > allowKB {
		t.Errorf("rescan: peak RSS grew by %d KB from 20,000 to 200,000 objects", r2-r1)
	}
}
