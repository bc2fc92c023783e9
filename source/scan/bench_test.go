package scan_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

// benchFiles is the number of 1 KiB files of the benchmarks; the 100,000
// file figures come from go run ./bench/scanbench.
const benchFiles = 10000

func benchTree(b *testing.B) string {
	root := filepath.Join(b.TempDir(), "files")
	buf := make([]byte, 1024)
	for i := range benchFiles {
		copy(buf, fmt.Sprintf("file %d\n", i))
		write(b, root, fmt.Sprintf("d%02d/f%05d", i/1000, i), string(buf))
	}
	return root
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// BenchmarkFirstScan scans benchFiles new files into an empty store:
// hashing (md5 + sha-256), media types, and the journal and inventory
// commits.
func BenchmarkFirstScan(b *testing.B) {
	root := benchTree(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), fmt.Sprintf("state%d.db", i))
		db, err := bolt.Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		s, _ := scan.New(scan.Options{Root: root, Store: db, Logger: quiet()})
		b.StartTimer()
		if st, err := s.Scan(ctx); err != nil || st.Created != benchFiles {
			b.Fatal(st, err)
		}
		b.StopTimer()
		db.Close()
		os.Remove(path)
		b.StartTimer()
	}
	b.ReportMetric(float64(benchFiles*b.N)/b.Elapsed().Seconds(), "files/s")
}

// BenchmarkRescan rescans benchFiles unchanged files: one inventory load,
// one walk, no file read.
func BenchmarkRescan(b *testing.B) {
	root := benchTree(b)
	ctx := context.Background()
	db, err := bolt.Open(filepath.Join(b.TempDir(), "state.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, _ := scan.New(scan.Options{Root: root, Store: db, Logger: quiet()})
	if _, err := s.Scan(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if st, err := s.Scan(ctx); err != nil || st.Unchanged != benchFiles {
			b.Fatal(st, err)
		}
	}
	b.ReportMetric(float64(benchFiles*b.N)/b.Elapsed().Seconds(), "files/s")
}
