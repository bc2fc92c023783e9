package scan_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

const memFilesEnv = "RESOURCESYNC_SCAN_MEM_FILES"

// peakKB returns the process's peak resident set (VmHWM) and resets it.
func peakKB(t testing.TB) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	kb := -1
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	return kb
}

// TestMemoryChild is the helper process of TestMemoryFlat: it creates the
// files, then prints the peak RSS of a first scan and of a rescan.
func TestMemoryChild(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(memFilesEnv))
	if n == 0 {
		t.Skip("helper process for TestMemoryFlat")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "files")
	buf := bytes.Repeat([]byte("x"), 200)
	for i := range n {
		p := filepath.Join(root, fmt.Sprintf("d%03d/f%06d.txt", i/500, i))
		if i%500 == 0 {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	db, err := bolt.Open(filepath.Join(dir, "state.db"), &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := scan.New(scan.Options{Root: root, Store: db, Logger: quiet(), BatchSize: 1000})
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
	fmt.Printf("peak %d %d\nheap sys %d MB, in use %d MB, released %d MB\n", first, rescan, ms.HeapSys>>20, ms.HeapInuse>>20, ms.HeapReleased>>20)
}

// TestMemoryFlat: the peak RSS of a first scan and of an unchanged rescan
// does not grow with the number of files (the inventory is merged, not
// loaded), measured in child processes at two sizes.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 44,000 files")
	}
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skip("needs Linux's /proc/self/clear_refs")
	}
	peaks := func(n int) (first, rescan int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryChild$", "-test.v")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", memFilesEnv, n))
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
	f1, r1 := peaks(4000)
	f2, r2 := peaks(40000)
	t.Logf("peak RSS, 4,000 -> 40,000 files: first scan %d -> %d KB, rescan %d -> %d KB", f1, f2, r1, r2)
	// Holding the inventory (as before the streaming merge) cost 19 MB
	// more at 40,000 files. What may grow: the bolt pages a pass maps
	// between two releases (every 32k records, about 6 MB) and the
	// runtime's noise.
	const allowKB = 8 << 10
	if f2-f1 > allowKB {
		t.Errorf("first scan: peak RSS grew by %d KB from 4,000 to 40,000 files", f2-f1)
	}
	if r2-r1 > allowKB {
		t.Errorf("rescan: peak RSS grew by %d KB from 4,000 to 40,000 files", r2-r1)
	}
}
