//go:build linux

// Command scanbench measures the scanner on many small files and compares
// its hashing rate with find | xargs -P2 md5sum over the same files, in the
// same run:
//
//	go run ./bench/scanbench -n 100000 -size 1024
//
// It prints the first-scan time and rate (md5 + sha-256 + media type +
// journal and inventory commits), the md5sum pipeline's time and the ratio
// of the rates, the rate of rescans that find every file unchanged, and the
// peak RSS (VmHWM) of the process.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"iter"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

var (
	cpuProfile string
	noSync     bool
)

func main() {
	n := flag.Int("n", 100000, "number of files")
	size := flag.Int("size", 1024, "bytes per file")
	dir := flag.String("dir", "", "directory to create the files in (default: a new temporary directory, removed at the end)")
	rescans := flag.Int("rescans", 5, "unchanged rescans to time")
	flag.BoolVar(&noSync, "nosync", false, "open the state without fsync (to measure the cost of durability)")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the first scan to this file")
	flag.Parse()
	if err := run(*n, *size, *dir, *rescans); err != nil {
		log.Fatal(err)
	}
}

func run(n, size int, dir string, rescans int) error {
	ctx := context.Background()
	if dir == "" {
		d, err := os.MkdirTemp("", "scanbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	root := filepath.Join(dir, "files")
	stateDir, err := os.MkdirTemp("", "scanbench-state")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)

	t0 := time.Now()
	buf := make([]byte, size)
	for i := range n {
		sub := filepath.Join(root, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
		}
		for k := range buf {
			buf[k] = byte(i*31 + k*7 + k>>8)
		}
		copy(buf, fmt.Sprintf("file %d\n", i))
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%06d.dat", i)), buf, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("created %d files of %d bytes in %v (%.0f files/s)\n", n, size, time.Since(t0).Round(time.Millisecond), float64(n)/time.Since(t0).Seconds())

	var mdCPU time.Duration // CPU time of the last md5sum pipeline
	md5sum := func() (time.Duration, error) {
		c0 := cpu(syscall.RUSAGE_CHILDREN)
		t := time.Now()
		cmd := exec.Command("sh", "-c", `find "$1" -type f -print0 | xargs -0 -P2 md5sum >/dev/null`, "sh", root)
		cmd.Stderr = os.Stderr
		err := cmd.Run()
		mdCPU = cpu(syscall.RUSAGE_CHILDREN) - c0
		return time.Since(t), err
	}
	// Warm the page cache (both sides then read from memory), and let the
	// newest files' mtimes age past scan.RacyWindow.
	if _, err := md5sum(); err != nil {
		return err
	}

	db, err := bolt.Open(filepath.Join(stateDir, "state.db"), &bolt.Options{NoSync: noSync})
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := scan.New(scan.Options{Root: root, Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer f.Close()
	}
	c0 := cpu(syscall.RUSAGE_SELF)
	t := time.Now()
	st, err := s.Scan(ctx)
	if err != nil {
		return err
	}
	first := time.Since(t)
	firstCPU := cpu(syscall.RUSAGE_SELF) - c0
	pprof.StopCPUProfile()
	m1, err := md5sum()
	if err != nil {
		return err
	}
	m2, err := md5sum()
	if err != nil {
		return err
	}
	md := min(m1, m2)
	fmt.Printf("first scan: %v, %.0f files/s, %.1f MB/s, CPU %v (hashed %d, created %d, %d batches)\n",
		first.Round(time.Millisecond), float64(n)/first.Seconds(), float64(st.Bytes)/first.Seconds()/1e6, firstCPU.Round(time.Millisecond), st.Hashed, st.Created, st.Batches)
	fmt.Printf("find | xargs -0 -P2 md5sum: %v, %.0f files/s, CPU %v (best of 2)\n", md.Round(time.Millisecond), float64(n)/md.Seconds(), mdCPU.Round(time.Millisecond))
	fmt.Printf("hashing publish rate ratio (scan / md5sum): %.2f (target >= 0.80)\n", md.Seconds()/first.Seconds())

	// The same first scan into a store that discards everything: the
	// hashing pipeline alone (walk, stat, read, md5 + sha-256, type).
	ns, _ := scan.New(scan.Options{Root: root, Store: nullStore{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	c0 = cpu(syscall.RUSAGE_SELF)
	t = time.Now()
	if _, err := ns.Scan(ctx); err != nil {
		return err
	}
	hashOnly := time.Since(t)
	hashCPU := cpu(syscall.RUSAGE_SELF) - c0
	fmt.Printf("hashing only (no state writes): %v, %.0f files/s, CPU %v; ratio to md5sum %.2f\n",
		hashOnly.Round(time.Millisecond), float64(n)/hashOnly.Seconds(), hashCPU.Round(time.Millisecond), md.Seconds()/hashOnly.Seconds())

	var times []time.Duration
	for range rescans {
		t := time.Now()
		st, err := s.Scan(ctx)
		if err != nil {
			return err
		}
		times = append(times, time.Since(t))
		if st.Unchanged != n {
			fmt.Printf("rescan: %d of %d unchanged (%d hashed, %d touched)\n", st.Unchanged, n, st.Hashed, st.Touched)
		}
	}
	slices.Sort(times)
	med := times[len(times)/2]
	fmt.Printf("unchanged rescan: median %v (%.0f files/s), best %v (%.0f files/s) over %d runs (target >= 200000 files/s)\n",
		med.Round(time.Millisecond), float64(n)/med.Seconds(), times[0].Round(time.Millisecond), float64(n)/times[0].Seconds(), len(times))
	fmt.Printf("peak RSS (VmHWM): %s\n", vmHWM())
	return nil
}

// cpu returns the user+system CPU time of this process or of its waited-for
// children.
func cpu(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func vmHWM() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// nullStore is an empty store that accepts and discards every batch.
type nullStore struct{}

func (nullStore) Apply(context.Context, store.Batch) (uint64, uint64, error) { return 0, 0, nil }
func (nullStore) Get(_ context.Context, p string) (store.Resource, error) {
	return store.Resource{}, store.ErrNotFound
}
func (nullStore) Resources(context.Context) iter.Seq2[store.Resource, error] {
	return func(func(store.Resource, error) bool) {}
}
func (nullStore) ResourcesIn(context.Context, string, string) iter.Seq2[store.Resource, error] {
	return func(func(store.Resource, error) bool) {}
}
func (nullStore) Journal(context.Context, uint64) iter.Seq2[store.Change, error] {
	return func(func(store.Change, error) bool) {}
}
func (nullStore) JournalBetween(context.Context, time.Time, time.Time) iter.Seq2[store.Change, error] {
	return func(func(store.Change, error) bool) {}
}
func (nullStore) Stats(context.Context) (store.Stats, error)      { return store.Stats{}, nil }
func (nullStore) GetMeta(context.Context, string) ([]byte, error) { return nil, store.ErrNotFound }
func (nullStore) PutMeta(context.Context, string, []byte) error   { return nil }
func (nullStore) Close() error                                    { return nil }
