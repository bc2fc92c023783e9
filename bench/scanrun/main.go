//go:build linux

// Command scanrun runs one scan of a directory into a state file and
// prints its statistics, time, CPU time and peak RSS (VmHWM), for
// measuring the scanner alone at scale:
//
//	go run ./bench/scanrun -root DIR -state FILE [-paths a,b] [-cpuprofile F]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

func main() {
	root := flag.String("root", "", "directory to scan")
	state := flag.String("state", "", "state file")
	paths := flag.String("paths", "", "comma-separated paths for ScanPaths (default: a whole scan)")
	workers := flag.Int("workers", 0, "hashing workers (default: NumCPU)")
	repeat := flag.Int("n", 1, "scans to run")
	prof := flag.String("cpuprofile", "", "CPU profile file")
	flag.Parse()
	db, err := bolt.Open(*state, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	s, err := scan.New(scan.Options{Root: *root, Store: db, Workers: *workers, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	for range *repeat {
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		t0 := time.Now()
		var st scan.Stats
		if *paths == "" {
			st, err = s.Scan(ctx)
		} else {
			st, err = s.ScanPaths(ctx, strings.Split(*paths, ","))
		}
		el := time.Since(t0)
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		if err != nil {
			log.Fatal(err)
		}
		cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		fmt.Printf("%+v\n%.3fs wall, %.3fs cpu, %.0f files/s, peak RSS %d KB\n", st, el.Seconds(), cpu.Seconds(), float64(st.Files)/el.Seconds(), hwm())
	}
}

func hwm() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			var n int
			fmt.Sscanf(strings.TrimSpace(l[6:]), "%d", &n)
			return n
		}
	}
	return 0
}
