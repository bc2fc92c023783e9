//go:build linux

// Command aggbench measures `resourcesync aggregate` against issue 22's
// benchmark goals, each side a child process of the built binary, both
// sides in the same run on the same serving stack:
//
//	go run ./bench/aggbench [-sources 100] [-files 2000] [-workers 4,8] [-rounds 2] [-changes 500] [-rate 20] [-md FILE]
//
// It generates -sources directories of -files small files (deterministic
// pseudo-random, 512–1536 bytes) under one tree, and serves them twice
// with the same `resourcesync serve` of the built binary: one serve per
// directory (the aggregator's Sources), and one serve of the whole tree
// (the single Source holding the same files, each directory a
// subdirectory). Every serve keeps its state outside the tree.
//
// Throughput: `aggregate --once --workers N --per-host N` over a sources
// file naming the small Sources, against `sync` of the big Source, each
// into a fresh directory (a baseline; from the Resource Dumps both offer
// by default). Each -workers value is paired with a sync, the order
// alternating from pair to pair, -rounds times; the figures are files/s
// (wall time of the child), the ratio of the best aggregate to the best
// sync, the child's peak RSS (GNU time's %M: its own ru_maxrss) and its
// CPU, and the CPU the serves spent meanwhile (from /proc/PID/stat; the
// Sources share the machine's cores with the Destination, on both sides).
// Every mirror is checked: its number of files and the bytes of a sample.
//
// Lag: the small serves are restarted with --watch --allow-private-callbacks
// (-v, for their "notify: published" lines), `aggregate --json` runs with
// every line --follow; once every Source reports notifications, -changes
// single-file changes are written at random Sources, -rate per second, and
// each change's lag is the time from the write to the aggregator's
// "fetched" event for that file (the event's own time stamp). The part of
// it that is the Source's own detection (watch, debounce, scan, publish to
// its hub) is the time from the write to the first "notify: published"
// log line of that Source whose until covers the write. The aggregator's
// peak RSS over the phase is its VmHWM.
//
// Nothing is deleted before the end of the run (mass deletions slow later
// file creation on ext4; see scalebench); the work tree is removed at the
// end unless -keep.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config is one run's parameters.
type Config struct {
	Sources    int       // small Sources
	Files      int       // files per small Source
	Workers    []int     // aggregate --workers values measured
	Rounds     int       // pairs per workers value
	Changes    int       // lag phase: changes written (0: no lag phase)
	Rate       float64   // lag phase: changes per second
	LagWorkers int       // lag phase: aggregate --workers
	NoThrough  bool      // skip the throughput phase
	Dir        string    // work directory ("": a temporary one)
	Bin        string    // the resourcesync binary ("": built from this checkout)
	Keep       bool      // keep the work directory
	Seed       uint64    // of the lag phase's changes
	Log        io.Writer // progress
}

// Run is one measured child.
type RunResult struct {
	Side       string  `json:"side"` // "aggregate" or "sync"
	Workers    int     `json:"workers,omitempty"`
	Order      int     `json:"order"`
	Seconds    float64 `json:"seconds"`
	FilesPerS  float64 `json:"files_per_s"`
	PeakRSSKiB int64   `json:"peak_rss_kib"`
	CPUSec     float64 `json:"cpu_s"`
	SourceCPU  float64 `json:"source_cpu_s"` // the serves' CPU meanwhile
}

// Lag is the lag phase's result.
type Lag struct {
	Changes, Arrived     int
	Workers              int
	P50, P95, P99, Max   float64 // ms, write → fetched
	DetectP50, DetectP99 float64 // ms, write → the Source's hub publish
	DetectMax            float64
	Detected             int
	PeakRSSKiB           int64
	Seconds              float64
}

// Result is what a run measured.
type Result struct {
	Sources, Files int
	Bytes          int64
	Runs           []*RunResult
	BestSync       float64
	Ratio          map[int]float64 // workers → best aggregate / best sync
	Lag            *Lag
	RSSFrom        string
	Commit, Date   string
}

func main() {
	var cfg Config
	flag.IntVar(&cfg.Sources, "sources", 100, "small Sources")
	flag.IntVar(&cfg.Files, "files", 2000, "files per small Source")
	workers := flag.String("workers", "4,8", "aggregate --workers values to measure (comma-separated)")
	flag.IntVar(&cfg.Rounds, "rounds", 2, "aggregate/sync pairs per --workers value (order alternating)")
	flag.IntVar(&cfg.Changes, "changes", 500, "lag phase: single-file changes (0: no lag phase)")
	flag.Float64Var(&cfg.Rate, "rate", 20, "lag phase: changes per second")
	flag.IntVar(&cfg.LagWorkers, "lag-workers", 4, "lag phase: aggregate --workers")
	flag.BoolVar(&cfg.NoThrough, "no-throughput", false, "skip the throughput phase")
	flag.StringVar(&cfg.Dir, "workdir", "", "work directory (default: a temporary one)")
	flag.StringVar(&cfg.Bin, "bin", "", "resourcesync binary (default: built from this checkout)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the work directory")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the lag phase's changes")
	md := flag.String("md", "", "also write the results as a markdown section to `FILE`")
	asJSON := flag.Bool("json", false, "print the result as JSON")
	flag.Parse()
	for _, w := range strings.Split(*workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "aggbench: -workers: bad value %q\n", w)
			os.Exit(2)
		}
		cfg.Workers = append(cfg.Workers, n)
	}
	cfg.Log = os.Stderr
	res, err := Bench(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aggbench:", err)
		if res == nil {
			os.Exit(1)
		}
		// What was measured is still reported (a goal missed shows).
		defer os.Exit(1)
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(res)
	} else {
		fmt.Print(res.Markdown(strings.Join(os.Args[1:], " ")))
	}
	if *md != "" {
		if err := os.WriteFile(*md, []byte(res.Markdown(strings.Join(os.Args[1:], " "))), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "aggbench:", err)
			os.Exit(1)
		}
	}
}

type bench struct {
	cfg     Config
	dir     string
	tree    string // the generated Sources, one subdirectory each
	logs    string
	bin     string
	timeBin string
	log     io.Writer
	servers []*server // the small Sources
	addrs   []string  // theirs, kept across restarts (a mirror is bound to its Source's URL)
	big     *server
}

// Bench runs the benchmark.
func Bench(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Sources < 1 || cfg.Files < 1 || cfg.Rounds < 1 || len(cfg.Workers) == 0 && !cfg.NoThrough {
		return nil, errors.New("nothing to measure")
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	b := &bench{cfg: cfg, log: cfg.Log, dir: cfg.Dir}
	if b.dir == "" {
		d, err := os.MkdirTemp("", "aggbench-")
		if err != nil {
			return nil, err
		}
		b.dir = d
	}
	if !cfg.Keep {
		defer os.RemoveAll(b.dir)
	}
	b.tree, b.logs = filepath.Join(b.dir, "tree"), filepath.Join(b.dir, "logs")
	if err := os.MkdirAll(b.logs, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer b.stopAll()
	res := &Result{Sources: cfg.Sources, Files: cfg.Files, Ratio: map[int]float64{}, Date: time.Now().UTC().Format("2006-01-02 15:04 UTC")}
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		res.Commit = strings.TrimSpace(string(out))
	}

	b.bin = cfg.Bin
	if b.bin == "" {
		b.bin = filepath.Join(b.dir, "resourcesync")
		out, err := exec.CommandContext(ctx, "go", "build", "-o", b.bin, "github.com/resourcesync-go/resourcesync/cmd/resourcesync").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("go build: %w\n%s", err, out)
		}
	}
	b.timeBin = findTime(ctx, b.dir)
	res.RSSFrom = "GNU time -f %M (the child's own ru_maxrss)"
	if b.timeBin == "" {
		res.RSSFrom = "wait4 ru_maxrss (floored by aggbench's own peak RSS)"
	}

	t := time.Now()
	bytes, err := b.generate()
	if err != nil {
		return nil, err
	}
	res.Bytes = bytes
	fmt.Fprintf(b.log, "generated %d × %d files (%.1f MiB) in %.1f s\n", cfg.Sources, cfg.Files, float64(bytes)/(1<<20), time.Since(t).Seconds())

	mirror := "" // the last aggregate's root: the lag phase starts from it
	if !cfg.NoThrough {
		if err := b.startSources(ctx, false); err != nil {
			return nil, err
		}
		t = time.Now()
		addr, err := freePort()
		if err != nil {
			return nil, err
		}
		big, err := b.serve(ctx, "big", addr, "--state", filepath.Join(b.dir, "state", "big"), "--rescan-interval", "0", b.tree)
		if err != nil {
			return nil, err
		}
		b.big = big
		fmt.Fprintf(b.log, "the big Source serves %d files (ready in %.1f s)\n", cfg.Sources*cfg.Files, time.Since(t).Seconds())
		sourcesFile, err := b.sourcesFile("sources.txt", "")
		if err != nil {
			return nil, err
		}
		order := 0
		for round := range cfg.Rounds {
			for wi, w := range cfg.Workers {
				pair := round*len(cfg.Workers) + wi
				steps := []func() error{
					func() error {
						order++
						root := filepath.Join(b.dir, fmt.Sprintf("agg-%d", order))
						r, err := b.measure(ctx, "aggregate", w, order, root, root, "aggregate", "--sources", sourcesFile, "--root", root,
							"--once", "-q", "--workers", strconv.Itoa(w), "--per-host", strconv.Itoa(w))
						if err == nil {
							res.Runs = append(res.Runs, r)
							mirror = root
						}
						return err
					},
					func() error {
						order++
						dest := filepath.Join(b.dir, fmt.Sprintf("sync-%d", order))
						r, err := b.measure(ctx, "sync", 0, order, dest, dest, "sync", "-q", b.big.base, dest)
						if err == nil {
							res.Runs = append(res.Runs, r)
						}
						return err
					},
				}
				if pair%2 == 1 {
					steps[0], steps[1] = steps[1], steps[0]
				}
				for _, s := range steps {
					if err := s(); err != nil {
						return res, err
					}
				}
			}
		}
		for _, r := range res.Runs {
			if r.Side == "sync" {
				res.BestSync = max(res.BestSync, r.FilesPerS)
			}
		}
		for _, r := range res.Runs {
			if r.Side == "aggregate" {
				res.Ratio[r.Workers] = max(res.Ratio[r.Workers], r.FilesPerS/res.BestSync)
			}
		}
		b.big.stop()
	}

	if cfg.Changes > 0 {
		lag, err := b.lag(ctx, mirror)
		res.Lag = lag
		if err != nil {
			return res, fmt.Errorf("lag: %w", err)
		}
	}
	return res, nil
}

// ---- the collection ----

func srcName(i int) string  { return fmt.Sprintf("s%03d", i) }
func fileName(j int) string { return fmt.Sprintf("f%05d.bin", j) }

// content is file j of Source i at version v: 512–1536 pseudo-random bytes.
func content(i, j, v int) []byte {
	r := rand.New(rand.NewPCG(uint64(i)<<32|uint64(j), uint64(v)))
	b := make([]byte, 512+r.IntN(1025))
	for k := range b {
		b[k] = byte(r.Uint32())
	}
	return b
}

func (b *bench) generate() (int64, error) {
	var total int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	next := make(chan int)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			for i := range next {
				d := filepath.Join(b.tree, srcName(i))
				if err := os.MkdirAll(d, 0o755); err != nil {
					mu.Lock()
					firstErr = cmp(firstErr, err)
					mu.Unlock()
					continue
				}
				for j := range b.cfg.Files {
					c := content(i, j, 0)
					if err := os.WriteFile(filepath.Join(d, fileName(j)), c, 0o644); err != nil {
						mu.Lock()
						firstErr = cmp(firstErr, err)
						mu.Unlock()
						break
					}
					n += int64(len(c))
				}
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	for i := range b.cfg.Sources {
		next <- i
	}
	close(next)
	wg.Wait()
	return total, firstErr
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// verify checks a mirror: every file there, none more, a sample's bytes
// equal to the tree's. A file changed in the lag phase is compared with
// the tree as it is now.
func (b *bench) verify(root string) error {
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".resourcesync" || d.Name() == ".aggregate") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if want := b.cfg.Sources * b.cfg.Files; n != want {
		return fmt.Errorf("%s: %d files, want %d", root, n, want)
	}
	step := max(1, b.cfg.Sources*b.cfg.Files/2000)
	for k := 0; k < b.cfg.Sources*b.cfg.Files; k += step {
		rel := filepath.Join(srcName(k/b.cfg.Files), fileName(k%b.cfg.Files))
		got, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		want, err := os.ReadFile(filepath.Join(b.tree, rel))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("%s: %s differs from the Source's", root, rel)
		}
	}
	return nil
}

// ---- the Sources ----

// startSources starts one serve per Source directory (a few at a time: the
// first start publishes), stopping those running before.
func (b *bench) startSources(ctx context.Context, watch bool) error {
	for _, s := range b.servers {
		s.stop()
	}
	b.servers = make([]*server, b.cfg.Sources)
	if b.addrs == nil {
		// Held open together, so that no two Sources get the same port.
		var lns []net.Listener
		defer func() {
			for _, ln := range lns {
				ln.Close()
			}
		}()
		for range b.cfg.Sources {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			lns = append(lns, ln)
			b.addrs = append(b.addrs, ln.Addr().String())
		}
		for _, ln := range lns {
			ln.Close()
		}
		lns = nil
	}
	t := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, b.cfg.Sources)
	sem := make(chan struct{}, 4)
	for i := range b.cfg.Sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := []string{"--state", filepath.Join(b.dir, "state", srcName(i)), "--rescan-interval", "0"}
			if watch {
				args = append(args, "--watch", "--allow-private-callbacks", "-v")
			}
			b.servers[i], errs[i] = b.serve(ctx, srcName(i), b.addrs[i], append(args, filepath.Join(b.tree, srcName(i)))...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(b.log, "%d Sources serve (watch %v; all ready in %.1f s)\n", b.cfg.Sources, watch, time.Since(t).Seconds())
	return nil
}

// sourcesFile writes the aggregator's sources file, options on every line.
func (b *bench) sourcesFile(name, opts string) (string, error) {
	var sb strings.Builder
	for i, s := range b.servers {
		fmt.Fprintf(&sb, "%s %s %s\n", s.base, srcName(i), opts)
	}
	p := filepath.Join(b.dir, name)
	return p, os.WriteFile(p, []byte(sb.String()), 0o644)
}

func (b *bench) stopAll() {
	for _, s := range b.servers {
		if s != nil {
			s.stop()
		}
	}
	if b.big != nil {
		b.big.stop()
	}
}

// sourceCPU is the CPU time the serves have used so far.
func (b *bench) sourceCPU() float64 {
	var sum float64
	for _, s := range append(slices.Clone(b.servers), b.big) {
		if s != nil {
			sum += procCPU(s.cmd.Process.Pid)
		}
	}
	return sum
}

// procCPU is utime+stime of a live process, in seconds (USER_HZ 100).
func procCPU(pid int) float64 {
	bs, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(bs)
	if k := strings.LastIndexByte(s, ')'); k >= 0 {
		s = s[k+1:]
	}
	f := strings.Fields(s) // f[0] is field 3 (state): utime is field 14
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100
}

// ---- children ----

// measure runs one side to completion and checks its mirror.
func (b *bench) measure(ctx context.Context, side string, workers, order int, logName, mirror string, args ...string) (*RunResult, error) {
	name := fmt.Sprintf("%02d-%s", order, side)
	cpu0 := b.sourceCPU()
	p, err := b.run(ctx, name, args...)
	if err != nil {
		return nil, err
	}
	if p.code != 0 {
		return nil, fmt.Errorf("%s: exit %d: %s", name, p.code, tail(filepath.Join(b.logs, name+".err"), 2048))
	}
	r := &RunResult{Side: side, Workers: workers, Order: order, Seconds: p.seconds, PeakRSSKiB: p.maxRSS, CPUSec: p.cpu,
		SourceCPU: b.sourceCPU() - cpu0}
	r.FilesPerS = float64(b.cfg.Sources*b.cfg.Files) / p.seconds
	if err := b.verify(mirror); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	w := ""
	if workers > 0 {
		w = fmt.Sprintf(" --workers %d", workers)
	}
	fmt.Fprintf(b.log, "%d. %s%s: %.2f s, %s files/s, peak RSS %s, CPU %.1f s (Sources' CPU %.1f s)\n",
		order, side, w, r.Seconds, commas(r.FilesPerS), mb(r.PeakRSSKiB), r.CPUSec, r.SourceCPU)
	return r, nil
}

type proc struct {
	seconds float64
	maxRSS  int64 // KiB
	cpu     float64
	code    int
}

func (b *bench) run(ctx context.Context, name string, args ...string) (*proc, error) {
	stdout, err := os.Create(filepath.Join(b.logs, name+".out"))
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(b.logs, name+".err"))
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	cmd := exec.CommandContext(ctx, b.bin, args...)
	rssFile := filepath.Join(b.logs, name+".maxrss")
	if b.timeBin != "" {
		cmd = exec.CommandContext(ctx, b.timeBin, append([]string{"-f", "%M", "-o", rssFile, b.bin}, args...)...)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	t := time.Now()
	err = cmd.Run()
	p := &proc{seconds: time.Since(t).Seconds()}
	if cmd.ProcessState == nil {
		return nil, err
	}
	p.code = cmd.ProcessState.ExitCode()
	if b.timeBin != "" {
		if p.maxRSS, err = readMaxRSS(rssFile); err != nil {
			return p, fmt.Errorf("%s: %w", b.timeBin, err)
		}
	} else if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		p.maxRSS = ru.Maxrss
	}
	p.cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return p, nil
}

func readMaxRSS(path string) (int64, error) {
	bs, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	lines := strings.Split(strings.TrimSpace(string(bs)), "\n")
	n, err := strconv.ParseInt(strings.TrimSpace(lines[len(lines)-1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("maximum RSS %q: %w", bs, err)
	}
	return n, nil
}

// findTime returns GNU time if it works: a direct child's ru_maxrss from
// wait4 is never below this process's own peak (see scalebench).
func findTime(ctx context.Context, dir string) string {
	const bin = "/usr/bin/time"
	f := filepath.Join(dir, "time-check")
	defer os.Remove(f)
	if err := exec.CommandContext(ctx, bin, "-f", "%M", "-o", f, "true").Run(); err != nil {
		return ""
	}
	if _, err := readMaxRSS(f); err != nil {
		return ""
	}
	return bin
}

func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		f.Seek(st.Size()-n, io.SeekStart)
	}
	bs, _ := io.ReadAll(f)
	return strings.TrimSpace(string(bs))
}

// server is a running `serve`.
type server struct {
	cmd  *exec.Cmd
	base string
	done chan error
	once sync.Once
	// lines, when set, receives its stderr lines (the lag phase).
	mu        sync.Mutex
	published []published
}

// published is one "notify: published" line of a serve -v.
type published struct{ at, until time.Time }

func (b *bench) serve(ctx context.Context, name, addr string, args ...string) (*server, error) {
	cmd := exec.CommandContext(ctx, b.bin, append([]string{"serve", "--addr", addr}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	errLog, err := os.Create(filepath.Join(b.logs, "serve-"+name+".err"))
	if err != nil {
		return nil, err
	}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	epipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		errLog.Close()
		return nil, err
	}
	s := &server{cmd: cmd, base: "http://" + addr + "/", done: make(chan error, 1)}
	ready := make(chan struct{})
	var readyOnce sync.Once
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "serving ") {
				readyOnce.Do(func() { close(ready) })
			}
		}
		io.Copy(io.Discard, pipe)
	}()
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(epipe)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := sc.Text()
			fmt.Fprintln(errLog, l)
			if p, ok := parsePublished(l); ok {
				s.mu.Lock()
				s.published = append(s.published, p)
				s.mu.Unlock()
			}
		}
		io.Copy(io.Discard, epipe)
	}()
	go func() {
		wg.Wait()
		s.done <- cmd.Wait()
		errLog.Close()
	}()
	select {
	case <-ready:
		return s, nil
	case err := <-s.done:
		return nil, fmt.Errorf("serve %s exited before serving: %v: %s", name, err, tail(errLog.Name(), 2048))
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		return nil, fmt.Errorf("serve %s: not serving after 5 minutes", name)
	}
}

// parsePublished reads `time=T level=DEBUG msg="notify: published" ... until=U`.
func parsePublished(l string) (published, bool) {
	if !strings.Contains(l, `msg="notify: published"`) {
		return published{}, false
	}
	var p published
	for _, f := range strings.Fields(l) {
		if v, ok := strings.CutPrefix(f, "time="); ok {
			p.at, _ = time.Parse(time.RFC3339Nano, v)
		} else if v, ok := strings.CutPrefix(f, "until="); ok {
			p.until, _ = time.Parse(time.RFC3339Nano, v)
		}
	}
	return p, !p.at.IsZero() && !p.until.IsZero()
}

func (s *server) stop() {
	s.once.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	})
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// ---- the lag phase ----

type aggEvent struct {
	Source string    `json:"source"`
	Kind   string    `json:"event"`
	Path   string    `json:"path"`
	Status string    `json:"status"`
	Time   time.Time `json:"time"`
}

type change struct {
	src     int
	rel     string
	written time.Time
}

func (b *bench) lag(ctx context.Context, root string) (*Lag, error) {
	if err := b.startSources(ctx, true); err != nil {
		return nil, err
	}
	if root == "" {
		root = filepath.Join(b.dir, "agg-lag")
	}
	sourcesFile, err := b.sourcesFile("sources-follow.txt", "--follow")
	if err != nil {
		return nil, err
	}
	w := strconv.Itoa(b.cfg.LagWorkers)
	cmd := exec.CommandContext(ctx, b.bin, "aggregate", "--sources", sourcesFile, "--root", root, "--json",
		"--listen", "127.0.0.1:0", "--workers", w, "--per-host", w)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	errLog, err := os.Create(filepath.Join(b.logs, "lag-aggregate.err"))
	if err != nil {
		return nil, err
	}
	defer errLog.Close()
	cmd.Stderr = errLog
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	events, err := os.Create(filepath.Join(b.logs, "lag-aggregate.jsonl"))
	if err != nil {
		return nil, err
	}
	defer events.Close()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	}()

	var mu sync.Mutex
	subscribed := map[string]bool{}
	allSubscribed := make(chan struct{})
	pending := map[string]*change{} // "sNNN/fNNNNN.bin"
	var lags []time.Duration
	var detect []time.Duration
	arrived := make(chan struct{}, b.cfg.Changes)
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			events.Write(append(sc.Bytes(), '\n'))
			var e aggEvent
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			mu.Lock()
			switch e.Kind {
			case "subscription":
				if e.Status == "notifications" && !subscribed[e.Source] {
					subscribed[e.Source] = true
					if len(subscribed) == b.cfg.Sources {
						close(allSubscribed)
					}
				}
			case "fetched":
				key := e.Source + "/" + filepath.ToSlash(filepath.Base(e.Path))
				if c, ok := pending[key]; ok {
					delete(pending, key)
					lags = append(lags, e.Time.Sub(c.written))
					if d, ok := b.detected(c); ok {
						detect = append(detect, d)
					}
					arrived <- struct{}{}
				}
			}
			mu.Unlock()
		}
		io.Copy(io.Discard, pipe)
		exited <- cmd.Wait()
	}()
	// The first run of each Source (incremental when the throughput phase
	// left its mirror, a baseline otherwise) comes before its subscription.
	select {
	case <-allSubscribed:
	case err := <-exited:
		exited <- err
		return nil, fmt.Errorf("aggregate exited: %v: %s", err, tail(errLog.Name(), 2048))
	case <-time.After(2*time.Minute + time.Duration(b.cfg.Sources*b.cfg.Files)*time.Millisecond):
		mu.Lock()
		n := len(subscribed)
		mu.Unlock()
		return nil, fmt.Errorf("%d of %d Sources subscribed in time: %s", n, b.cfg.Sources, tail(errLog.Name(), 1024))
	}
	time.Sleep(time.Second) // let the catch-up after each subscription settle
	fmt.Fprintf(b.log, "aggregate --workers %s follows %d Sources by notifications\n", w, b.cfg.Sources)
	rss0 := procStatus(cmd.Process.Pid, "VmHWM:")

	rng := rand.New(rand.NewPCG(b.cfg.Seed, 22))
	used := map[string]bool{}
	interval := time.Duration(float64(time.Second) / b.cfg.Rate)
	start := time.Now()
	for k := range b.cfg.Changes {
		time.Sleep(time.Until(start.Add(time.Duration(k) * interval)))
		var i, j int
		var key string
		for {
			i, j = rng.IntN(b.cfg.Sources), rng.IntN(b.cfg.Files)
			if key = srcName(i) + "/" + fileName(j); !used[key] || len(used) >= b.cfg.Sources*b.cfg.Files {
				break
			}
		}
		used[key] = true
		c := &change{src: i, rel: key}
		mu.Lock()
		c.written = time.Now()
		pending[key] = c
		mu.Unlock()
		if err := os.WriteFile(filepath.Join(b.tree, srcName(i), fileName(j)), content(i, j, k+1), 0o644); err != nil {
			return nil, err
		}
	}
	got := 0
	deadline := time.After(time.Duration(float64(b.cfg.Changes)/b.cfg.Rate*float64(time.Second)) + 60*time.Second)
wait:
	for got < b.cfg.Changes {
		select {
		case <-arrived:
			got++
		case <-deadline:
			break wait
		}
	}
	elapsed := time.Since(start)
	lag := &Lag{Changes: b.cfg.Changes, Arrived: got, Workers: b.cfg.LagWorkers, Seconds: elapsed.Seconds(),
		PeakRSSKiB: max(rss0, procStatus(cmd.Process.Pid, "VmHWM:"))}
	mu.Lock()
	lag.P50, lag.P95, lag.P99, lag.Max = pct(lags, 50), pct(lags, 95), pct(lags, 99), pct(lags, 100)
	lag.DetectP50, lag.DetectP99, lag.DetectMax, lag.Detected = pct(detect, 50), pct(detect, 99), pct(detect, 100), len(detect)
	mu.Unlock()
	fmt.Fprintf(b.log, "lag over %d changes at %.0f/s: %d arrived; p50 %.0f ms, p95 %.0f ms, p99 %.0f ms, max %.0f ms; Source detection (write → hub publish) p50 %.0f ms, p99 %.0f ms; aggregate peak RSS %s\n",
		lag.Changes, b.cfg.Rate, lag.Arrived, lag.P50, lag.P95, lag.P99, lag.Max, lag.DetectP50, lag.DetectP99, mb(lag.PeakRSSKiB))
	if got < b.cfg.Changes {
		return lag, fmt.Errorf("%d of %d changes reached the mirrors", got, b.cfg.Changes)
	}
	// The mirrors equal the Sources, changes included.
	if err := b.verify(root); err != nil {
		return lag, err
	}
	return lag, nil
}

// detected is the time from a change's write to its Source's first hub
// publish that covers it (the Source's own detection: watch, debounce,
// scan, publish). Such a publish comes before the fetch, so it is there
// when the fetched event is.
func (b *bench) detected(c *change) (time.Duration, bool) {
	s := b.servers[c.src]
	s.mu.Lock()
	defer s.mu.Unlock()
	w := c.written.Truncate(time.Millisecond)
	for _, p := range s.published {
		if !p.until.Before(w) {
			return p.at.Sub(c.written), true
		}
	}
	return 0, false
}

// pct is the p-th percentile (nearest rank) in milliseconds.
func pct(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	k = min(max(k, 0), len(s)-1)
	return float64(s[k]) / float64(time.Millisecond)
}

func procStatus(pid int, key string) int64 {
	bs, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(bs), "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

// ---- report ----

// Markdown is the results as a BENCHMARKS.md section.
func (r *Result) Markdown(args string) string {
	var sb strings.Builder
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	fmt.Fprintf(&sb, "Command: `go run ./bench/aggbench %s` (%s, commit %s, %d cores)\n\n", args, r.Date, r.Commit, runtime.NumCPU())
	fmt.Fprintf(&sb, "%d Sources × %d files (%.1f MiB in all); peak RSS from %s.\n\n", r.Sources, r.Files, float64(r.Bytes)/(1<<20), r.RSSFrom)
	if len(r.Runs) > 0 {
		sb.WriteString("| # | side | time | files/s | peak RSS | CPU | Sources' CPU |\n|---:|---|---:|---:|---:|---:|---:|\n")
		for _, x := range r.Runs {
			side := "`sync` of the one big Source"
			if x.Side == "aggregate" {
				side = fmt.Sprintf("`aggregate --once --workers %d --per-host %d`", x.Workers, x.Workers)
			}
			fmt.Fprintf(&sb, "| %d | %s | %.2f s | %s | %s | %.1f s | %.1f s |\n", x.Order, side, x.Seconds, commas(x.FilesPerS), mb(x.PeakRSSKiB), x.CPUSec, x.SourceCPU)
		}
		sb.WriteString("\n")
		var peak int64
		for _, x := range r.Runs {
			if x.Side == "aggregate" {
				peak = max(peak, x.PeakRSSKiB)
			}
		}
		ws := make([]int, 0, len(r.Ratio))
		for w := range r.Ratio {
			ws = append(ws, w)
		}
		slices.Sort(ws)
		for _, w := range ws {
			fmt.Fprintf(&sb, "- files/s, best `aggregate --workers %d` / best `sync`: **%.2f×** (goal ≥ 0.8×: %s)\n", w, r.Ratio[w], met(r.Ratio[w] >= 0.8))
		}
		fmt.Fprintf(&sb, "- aggregator peak RSS: **%s** (goal < 256 MB: %s)\n", mb(peak), met(float64(peak)*1024 < 256e6))
	}
	if l := r.Lag; l != nil {
		fmt.Fprintf(&sb, "- lag, change at a Source → its mirror, %d Sources followed by notifications (`aggregate --workers %d`), %d changes over %.0f s: %d arrived; p50 %.0f ms, p95 %.0f ms, **p99 %.0f ms**, max %.0f ms (goal p99 < 1 s: %s)\n",
			r.Sources, l.Workers, l.Changes, l.Seconds, l.Arrived, l.P50, l.P95, l.P99, l.Max, met(l.P99 < 1000 && l.Arrived == l.Changes))
		fmt.Fprintf(&sb, "  - of which the Source's own detection (write → its hub's publish; `serve --watch`, debounce 20 ms): p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d of %d matched)\n",
			l.DetectP50, l.DetectP99, l.DetectMax, l.Detected, l.Arrived)
		fmt.Fprintf(&sb, "  - aggregator peak RSS while following: %s\n", mb(l.PeakRSSKiB))
	}
	return sb.String()
}

func mb(kib int64) string { return fmt.Sprintf("%.0f MB", float64(kib)*1024/1e6) }

// commas formats x rounded to an integer with thousands separators.
func commas(x float64) string {
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	var sb strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			sb.WriteByte(',')
		}
		sb.WriteRune(c)
	}
	return sb.String()
}
