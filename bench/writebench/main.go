//go:build linux

// Command writebench measures a mirror's write path (issue 33): files/s of
// `resourcesync sync` from the Resource Dump (the default) and with
// --no-dumps, each beside the creation ceiling (the same files written
// with os.WriteFile by 2 writers into a fresh directory) measured in the
// same round, for one or more binaries side by side (before and after a
// change), rounds interleaved so that a busy machine weighs on all alike:
//
//	go run ./bench/writebench -src DIR -base http://127.0.0.1:8080/ -bin old=/tmp/rs-old,new=/tmp/rs-new -rounds 3
//
// DIR is the tree `resourcesync serve DIR` publishes at -base (serve it
// yourself, e.g. speedbench's 512–1536-byte tree). With -syscalls each
// sync runs once more under `perf stat` with the syscalls tracepoints
// (exact counts, little overhead), and the calls per file are printed by
// kind; with -strace under `strace -c -f` instead (what BENCHMARKS.md
// quotes; it slows every call and so inflates futex and nanosleep).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var kinds = []string{"openat", "openat2", "linkat", "renameat2", "write", "utimensat", "close", "fsync", "fdatasync", "syncfs", "mkdirat", "newfstatat", "read", "nanosleep", "futex", "epoll_pwait"}

func main() {
	src := flag.String("src", "", "the tree served at -base")
	base := flag.String("base", "", "the Source's base URL")
	bins := flag.String("bin", "", "NAME=BINARY,... to measure")
	rounds := flag.Int("rounds", 3, "rounds")
	work := flag.String("work", "", "scratch directory on the disk measured (default: beside -src)")
	sysc := flag.Bool("syscalls", false, "count system calls per file with perf stat")
	strace := flag.Bool("strace", false, "count system calls per file with strace -c -f")
	flag.Parse()
	if *work == "" {
		*work = filepath.Join(filepath.Dir(*src), "writebench")
	}
	os.MkdirAll(*work, 0o755)
	files, err := load(*src)
	if err != nil {
		log.Fatal(err)
	}
	n := len(files)
	type bin struct{ name, path string }
	var bs []bin
	for _, kv := range strings.Split(*bins, ",") {
		k, v, _ := strings.Cut(kv, "=")
		bs = append(bs, bin{k, v})
	}
	modes := []struct{ name, flag string }{{"dump", ""}, {"list", "--no-dumps"}}
	fmt.Printf("%d files; load average at start: %s\n", n, loadavg())
	k := 0
	next := func() string { k++; return filepath.Join(*work, fmt.Sprintf("r%d-%d", os.Getpid(), k)) }
	for r := 1; r <= *rounds; r++ {
		ceil := ceiling(files, next())
		fmt.Printf("round %d: ceiling %.0f files/s\n", r, float64(n)/ceil.Seconds())
		order := bs
		if r%2 == 0 {
			// Every other round the other way round: what ran just
			// before (the ceiling's writes still being written back)
			// weighs on each binary alike.
			order = slices.Clone(bs)
			slices.Reverse(order)
		}
		for _, m := range modes {
			for _, b := range order {
				wall, cpu, err := runSync(b.path, m.flag, *base, next())
				if err != nil {
					log.Fatalf("%s %s: %v", b.name, m.name, err)
				}
				fmt.Printf("round %d: %-8s %-4s %6.2f s  %6.0f files/s  %.2fx ceiling  CPU %.2f s (%.0f µs/file)\n",
					r, b.name, m.name, wall.Seconds(), float64(n)/wall.Seconds(), ceil.Seconds()/wall.Seconds(), cpu.Seconds(), float64(cpu.Microseconds())/float64(n))
			}
		}
	}
	fmt.Printf("load average at end: %s\n", loadavg())
	if !*sysc && !*strace {
		return
	}
	for _, m := range modes {
		counts := map[string]map[string]float64{}
		for _, b := range bs {
			c, err := countCalls(b.path, m.flag, *base, next(), *strace)
			if err != nil {
				log.Fatalf("%s %s: %v", b.name, m.name, err)
			}
			counts[b.name] = c
		}
		tool := "perf stat"
		if *strace {
			tool = "strace -c -f"
		}
		fmt.Printf("\nsystem calls per file, sync %s (%s):\n\n| call |", m.name, tool)
		for _, b := range bs {
			fmt.Printf(" %s |", b.name)
		}
		fmt.Printf("\n|---|%s\n", strings.Repeat("---:|", len(bs)))
		for _, kd := range append(kinds, "total") {
			fmt.Printf("| %s |", kd)
			for _, b := range bs {
				fmt.Printf(" %.2f |", counts[b.name][kd]/float64(n))
			}
			fmt.Println()
		}
	}
}

type file struct {
	rel  string
	data []byte
}

func load(dir string) ([]file, error) {
	var fs_ []file
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != dir {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fs_ = append(fs_, file{rel, b})
		return nil
	})
	return fs_, err
}

// ceiling writes the files with os.WriteFile by 2 writers.
func ceiling(files []file, dir string) time.Duration {
	dirs := map[string]bool{}
	for _, f := range files {
		dirs[filepath.Dir(f.rel)] = true
	}
	st := time.Now()
	for d := range dirs {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(files); i += 2 {
				if err := os.WriteFile(filepath.Join(dir, files[i].rel), files[i].data, 0o644); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(st)
}

func syncArgs(bin, flag_, base, dest string) []string {
	a := []string{bin, "sync", "--progress", "quiet"}
	if flag_ != "" {
		a = append(a, flag_)
	}
	return append(a, base, dest)
}

func runSync(bin, flag_, base, dest string) (wall, cpu time.Duration, err error) {
	a := syncArgs(bin, flag_, base, dest)
	cmd := exec.Command(a[0], a[1:]...)
	cmd.Stderr = os.Stderr
	st := time.Now()
	err = cmd.Run()
	wall = time.Since(st)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return wall, cpu, err
}

// countCalls runs one sync under perf stat (or strace -c -f) and returns
// the calls by name, and their total as "total".
func countCalls(bin, flag_, base, dest string, useStrace bool) (map[string]float64, error) {
	out := dest + ".calls"
	var a []string
	if useStrace {
		a = append([]string{"strace", "-f", "-c", "-o", out}, syncArgs(bin, flag_, base, dest)...)
	} else {
		ev := []string{"raw_syscalls:sys_enter"}
		for _, k := range kinds {
			ev = append(ev, "syscalls:sys_enter_"+k)
		}
		a = append([]string{"perf", "stat", "-x", ",", "-o", out, "-e", strings.Join(ev, ",")}, syncArgs(bin, flag_, base, dest)...)
	}
	cmd := exec.Command(a[0], a[1:]...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	f, err := os.Open(out)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if useStrace {
			fs_ := strings.Fields(line)
			if len(fs_) < 5 {
				continue
			}
			name := fs_[len(fs_)-1]
			calls, err := strconv.ParseFloat(fs_[3], 64)
			if err != nil {
				continue
			}
			if name == "total" {
				c["total"] = calls
			} else {
				c[name] = calls
			}
			continue
		}
		fs_ := strings.Split(line, ",")
		if len(fs_) < 3 {
			continue
		}
		v, err := strconv.ParseFloat(fs_[0], 64)
		if err != nil {
			continue
		}
		ev := fs_[2]
		switch {
		case ev == "raw_syscalls:sys_enter":
			c["total"] = v
		case strings.HasPrefix(ev, "syscalls:sys_enter_"):
			c[strings.TrimPrefix(ev, "syscalls:sys_enter_")] = v
		}
	}
	return c, sc.Err()
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
