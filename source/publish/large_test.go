package publish_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// fill creates n synthetic resources (no files) at time at, in batches.
func fill(t testing.TB, st store.Store, n int, at time.Time) {
	t.Helper()
	const batch = 10000
	cs := make([]store.Change, 0, batch)
	for i := range n {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(i))
		r := store.Resource{Path: fmt.Sprintf("d%03d/file-%07d.txt", i%1000, i), Size: int64(1000 + i%5000),
			ModTime: at, SHA256: sha256.Sum256(b[:]), Type: "text/plain", LastMod: at.Add(-time.Duration(i) * time.Second)}
		copy(r.MD5[:], r.SHA256[:16])
		cs = append(cs, store.Change{Kind: rs.Created, Time: at, Resource: r})
		if len(cs) == batch || i == n-1 {
			if _, _, err := st.Apply(context.Background(), store.Batch{Changes: cs}); err != nil {
				t.Fatal(err)
			}
			cs = cs[:0]
		}
	}
}

func TestPublish120k(t *testing.T) {
	if testing.Short() {
		t.Skip("120,000 entries")
	}
	const n = 120000
	out := t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	fill(t, st, n, t0)
	cfg := publish.Config{BaseURL: base, Out: out, Logger: quiet,
		Now:  func() time.Time { return t0.Add(2 * time.Hour) },
		Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: base + "r/"}}}
	start := time.Now()
	rep, err := publish.Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	sr := rep.Sets[0]
	if sr.Resources != n || sr.ResourceListParts != 3 || sr.NewlyClosed != 3 || sr.ChangeLists != 4 {
		t.Errorf("report %+v", sr)
	}
	start = time.Now()
	rep, err = publish.Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	again := time.Since(start)
	if rep.Sets[0].ResourceList || rep.Sets[0].NewlyClosed != 0 {
		t.Errorf("rerun %+v", rep.Sets[0])
	}
	t.Logf("publish %d resources + %d journal records: %v (%.0f entries/s); rerun with no change: %v",
		n, n, first, float64(2*n)/first.Seconds(), again)
	start = time.Now()
	mustWalkClean(t, base)
	t.Logf("validate.Walk: %v", time.Since(start))
}

func TestDumpThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB twice")
	}
	const files, size = 64, 1 << 20
	out, dir := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	b := make([]byte, size)
	var cs []store.Change
	for i := range files {
		for j := range b {
			b[j] = byte(i*7 + j*13 + j>>9)
		}
		p := fmt.Sprintf("big/%03d.bin", i)
		if err := os.WriteFile(filepath.Join(dir, "big", fmt.Sprintf("%03d.bin", i)), b, 0o644); err != nil {
			if err := os.MkdirAll(filepath.Join(dir, "big"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "big", fmt.Sprintf("%03d.bin", i)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cs = append(cs, store.Change{Kind: rs.Created, Time: t0, Resource: resource(p, b, t0)})
	}
	if _, _, err := st.Apply(context.Background(), store.Batch{Changes: cs}); err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: t0.Add(time.Minute)}
	cfg := publish.Config{BaseURL: "http://127.0.0.1:1/", Out: out, Dumps: true, DumpPartBytes: 16 << 20,
		Now: clk.Now, Logger: quiet,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: "http://127.0.0.1:1/r/"}}}
	start := time.Now()
	rep, err := publish.Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	if rep.Sets[0].DumpParts != 4 || rep.Sets[0].SkippedBitstreams != 0 {
		t.Errorf("report %+v", rep.Sets[0])
	}
	t.Logf("resource dump: %d MiB in %d packages in %v: %.0f MB/s", files*size>>20, rep.Sets[0].DumpParts, d,
		float64(files*size)/d.Seconds()/1e6)
	clk.Set(t0.Add(time.Hour))
	start = time.Now()
	rep, err = publish.Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d = time.Since(start)
	if rep.Sets[0].ChangeDumps != 1 || rep.Sets[0].ResourceDump {
		t.Errorf("report %+v", rep.Sets[0])
	}
	t.Logf("change dump: %d MiB in 1 package in %v: %.0f MB/s", files*size>>20, d, float64(files*size)/d.Seconds()/1e6)
}
