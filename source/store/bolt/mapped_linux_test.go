package bolt_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

// mappedKiB is the resident size of path's mappings in this process (the
// pages of bbolt's memory map that count in its RSS).
func mappedKiB(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	var kib int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if fs := strings.Fields(l); len(fs) >= 5 && strings.Contains(fs[0], "-") {
			in = len(fs) >= 6 && fs[len(fs)-1] == path
			continue
		}
		if in && strings.HasPrefix(l, "Rss:") {
			n, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			kib += n
		}
	}
	return kib
}

// TestShortPassesReleaseMapped: many short passes over the inventory (a
// server producing dump packages on request reads one package's range,
// at most 10,000 records, per request) release the mapped pages they touch
// as one long pass does, so the process's RSS does not grow with the
// state's size (issue 33: serve's peak RSS during a baseline sync grew by
// about 120 bytes a resource, the size of its state file).
func TestShortPassesReleaseMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n, batch, pass = 100_000, 10_000, 2_000
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for b := 0; b < n; b += batch {
		var cs []store.Change
		for i := b; i < b+batch; i++ {
			cs = append(cs, store.Change{Kind: rs.Created, Time: at, Resource: store.Resource{
				Path: fmt.Sprintf("d%03d/f%07d.txt", i/1000, i), Size: int64(i), ModTime: at, Inode: uint64(i), Type: "text/plain", LastMod: at}})
		}
		if _, _, err := db.Apply(ctx, store.Batch{Changes: cs, Baseline: true}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db, err = bolt.Open(path, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for from := 0; from < n; from += pass {
		lo, hi := fmt.Sprintf("d%03d/f%07d.txt", from/1000, from), fmt.Sprintf("d%03d/f%07d.txt", (from+pass)/1000, from+pass)
		for _, err := range db.ResourcesIn(ctx, lo, hi) {
			if err != nil {
				t.Fatal(err)
			}
			read++
		}
	}
	if read != n {
		t.Fatalf("read %d records, want %d", read, n)
	}
	got, file := mappedKiB(t, path), fi.Size()>>10
	t.Logf("state %d KiB; mapped and resident after %d passes of %d records: %d KiB", file, n/pass, pass, got)
	if got > file/2 {
		t.Errorf("%d KiB of the %d KiB state file still resident after short passes over all of it: the passes did not release the mapped pages", got, file)
	}
}
