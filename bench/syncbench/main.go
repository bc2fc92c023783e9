//go:build linux

// Command syncbench measures the Destination end to end: it syncs a
// collection of many small files and one of a few large files from the
// project's own Source over loopback, beside baselines measured in the same
// run on the same disk:
//
//	go run ./bench/syncbench
//	go run ./bench/syncbench -small 10000 -large 100 -workers 4,8,16 -runs 3
//
// For each collection it
//   - generates the files (deterministic random bytes) in a scratch
//     directory on the file system of the working directory (not /tmp,
//     which may be a tmpfs), and publishes them with a Source served on
//     127.0.0.1 by this process (with -dumps, with a Resource Dump, which
//     the sync's baseline then installs from: one download of its ZIP
//     packages instead of one GET per file);
//   - runs destination.Sync into an empty DEST in a child process (this
//     binary re-executed), so that the peak RSS (VmHWM) it reports is the
//     sync's own, not the generator's or the server's;
//   - verifies that DEST holds exactly the generated files (size and
//     sha-256 of each) and fails otherwise;
//   - prints files/s, MB/s and the child's peak RSS, the ratio to the
//     baseline and the verdict against the absolute targets, then
//     the CPU time of the child and of the serving process, the sync's
//     phases and every baseline figure.
//
// With -runs N each run measures the baselines again and syncs into a new
// DEST; with a list of -workers each run syncs once per value. The best
// sync (shortest time) decides the verdict. For diagnosis, -cpuprofile and
// -blockprofile profile the sync child (and the Source while it serves),
// and SYNCBENCH_WRAP="strace -f -c -o FILE" (or "perf record -g -o FILE")
// runs the child under another command. -json prints the results as JSON.
//
// Baselines: for the small files, creating the same files with
// os.WriteFile in a fresh directory (1 writer and 4 writers, the faster
// counts): the "disk create ceiling". For the large files, plain HTTP GETs
// of every file from the same Source copied into files with io.Copy, 4 at a
// time, with no hashing and no verification: the "raw download". Neither
// makes its files durable while a sync does (one syncfs per batch before its
// state records them); for reference, each baseline is also reported with
// a syncfs at its end ("..._then_syncfs"), which the ratio does not use.
//
// Every file system write of a phase is flushed (sync(2)) before the next
// timed phase starts, so that the syncfs the Destination issues before it
// commits its state does not pay for the generator's or a baseline's dirty
// pages. No small file is deleted before the end: on ext4 without a
// journal (as here) the inode allocator skips, one inode-table lookup each,
// the free inodes that were freed in the last 60 seconds, or 360 while
// their inode-table block is dirty (and creating files in the same group
// dirties it again), so every file created after a mass deletion costs far
// more CPU: 10,000 files created right after 20,000 were deleted went at
// 1,800/s, the same a minute later at 16,000/s. A baseline removed before
// the sync would slow the sync down, and files deleted on the same file
// system in the minutes before the bench (by an earlier run or anything
// else) slow the whole run down, baselines included: the rate at which the
// small files were generated (printed first) tells whether a run was hit.
// Leave several minutes between runs. The large collection's directories
// (a hundred files each) are removed after each phase.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/scan"
)

// childEnv, when set, makes this binary the sync child: the variable holds
// a JSON childSpec and the result is printed to stdout as a childResult.
const childEnv = "SYNCBENCH_CHILD"

// wrapEnv, when set, is a command line the sync child is run under, such
// as "strace -f -c -o /tmp/child.strace" or "perf record -g -o child.perf".
const wrapEnv = "SYNCBENCH_WRAP"

// The absolute targets.
const (
	targetFilesPerSec = 10000
	targetMBPerSec    = 700 // 100 × 10 MiB with the default verification (issue 11)
)

// destinationDefaultWorkers is destination.Options.Workers' default, for
// display only: the bench passes 0 to get whatever Sync defaults to.
const destinationDefaultWorkers = 8

func main() {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childMain(spec, os.Stdout))
	}
	var cfg Config
	flag.IntVar(&cfg.Small, "small", 10000, "number of small files (0: skip)")
	flag.IntVar(&cfg.SmallSize, "small-size", 1024, "bytes per small file")
	flag.IntVar(&cfg.Large, "large", 100, "number of large files (0: skip)")
	flag.IntVar(&cfg.LargeSize, "large-size", 10<<20, "bytes per large file")
	workers := flag.String("workers", "0", fmt.Sprintf("destination.Options.Workers, or a comma-separated list to compare in each run (0: the destination's default, %d)", destinationDefaultWorkers))
	flag.IntVar(&cfg.Runs, "runs", 1, "runs of each baseline and sync")
	flag.BoolVar(&cfg.Dumps, "dumps", false, "the Source publishes a Resource Dump and the baseline starts from it (as resourcesync serve does by default; without: from the Resource List, as serve --no-dumps)")
	verify := flag.String("verify", "strongest", "digests the sync verifies besides the length: strongest (the default of resourcesync sync) or all")
	flag.StringVar(&cfg.Dir, "dir", "", "scratch directory, on the disk to measure (default: ./.syncbench-tmp; what the bench creates there is removed)")
	flag.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of each sync child to `PREFIX`-small-RUN-wWORKERS.pprof (and -large-), and of the Source serving it to ...-server.pprof")
	flag.StringVar(&cfg.BlockProfile, "blockprofile", "", "write a goroutine blocking profile of each sync child to `PREFIX`-small-RUN-wWORKERS.pprof (and -large-); it slows the sync down")
	asJSON := flag.Bool("json", false, "print the results as JSON on stdout (progress goes to stderr)")
	flag.Parse()
	cfg.VerifyAll = *verify == "all"
	for _, w := range strings.Split(*workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 0 {
			log.Fatalf("-workers: bad number %q", w)
		}
		cfg.Workers = append(cfg.Workers, n)
	}

	cfg.Log = os.Stdout
	if *asJSON {
		cfg.Log = os.Stderr
	}
	cfg.Client = &http.Client{Transport: (&testnet.Guard{}).Transport()}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			log.Fatal(err)
		}
	}
}

// Config is what Run measures.
type Config struct {
	Small, SmallSize int
	Large, LargeSize int
	// Workers lists the destination.Options.Workers values each run
	// syncs with (0: the destination's default; none: just that).
	Workers []int
	Runs    int
	// Dumps makes the Source publish Resource Dumps and the sync take
	// them (destination.Options.PreferDump: by default it takes the
	// Source's bulk GET): the baseline installs from the dump's packages.
	Dumps bool
	// VerifyAll syncs with destination.Options.VerifyAll (every offered
	// digest; by default the strongest).
	VerifyAll bool
	// Dir is the scratch directory (default ./.syncbench-tmp); Run works
	// in a new directory below it and removes it at the end.
	Dir          string
	CPUProfile   string
	BlockProfile string
	// Client makes the baseline's plain GETs (the sync child dials
	// through a loopback-only testnet.Guard of its own).
	Client *http.Client
	// Log receives the human-readable report (nil: discarded).
	Log io.Writer
}

// Result is the outcome of Run.
type Result struct {
	Scratch    string       `json:"scratch"`
	FSType     string       `json:"fs_type"`
	Workers    []int        `json:"workers"`
	GOMAXPROCS int          `json:"gomaxprocs"`
	Small      *Collection  `json:"small,omitempty"`
	Large      *Collection  `json:"large,omitempty"`
	Seconds    float64      `json:"seconds"`
	Targets    TargetResult `json:"targets"`
}

// TargetResult tells whether the best runs met the targets.
type TargetResult struct {
	SmallFilesPerSec float64 `json:"small_files_per_sec_target"`
	SmallMet         *bool   `json:"small_met,omitempty"`
	LargeMBPerSec    float64 `json:"large_mb_per_sec_target"`
	LargeMet         *bool   `json:"large_met,omitempty"`
}

// Collection is the measurement of one collection.
type Collection struct {
	Name          string       `json:"name"`
	Files         int          `json:"files"`
	FileSize      int          `json:"file_size"`
	Bytes         int64        `json:"bytes"`
	GenerateSec   float64      `json:"generate_seconds"`
	SourceUpdate  float64      `json:"source_update_seconds"`
	Baseline      string       `json:"baseline"`
	Runs          []*RunResult `json:"runs"`
	Best          *RunResult   `json:"best"`
	TargetMet     bool         `json:"target_met"`
	TargetFigure  float64      `json:"target_figure"`
	TargetUnit    string       `json:"target_unit"`
	BaselineUnits string       `json:"baseline_unit"`
}

// RunResult is one sync of a collection, with the baseline of its run.
type RunResult struct {
	Run     int `json:"run"`
	Workers int `json:"workers"`
	// Sync, as measured by the child around destination.Sync.
	SyncSec      float64 `json:"sync_seconds"`
	FilesPerSec  float64 `json:"files_per_sec"`
	MBPerSec     float64 `json:"mb_per_sec"`
	PeakRSSKiB   int64   `json:"peak_rss_kib"`
	ChildCPUSec  float64 `json:"child_cpu_seconds"`
	ServerCPUSec float64 `json:"server_cpu_seconds"`
	Mode         string  `json:"mode"`
	Fetched      int     `json:"fetched"`
	// Phases and LastFetchSec come from the sync's events.
	Phases       []string `json:"phases"`
	LastFetchSec float64  `json:"last_fetch_seconds"`
	// Baseline figures, in the collection's unit (files/s or MB/s).
	Baseline  float64            `json:"baseline"`
	Baselines map[string]float64 `json:"baselines"`
	Ratio     float64            `json:"ratio"`
}

// Run generates, publishes, syncs and verifies the collections cfg names.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	start := time.Now()
	if cfg.Runs <= 0 {
		cfg.Runs = 1
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Client == nil {
		return nil, errors.New("no HTTP client")
	}
	if cfg.Dir == "" {
		cfg.Dir = ".syncbench-tmp"
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return nil, err
		}
		defer os.Remove(cfg.Dir) // only if empty: other runs may share it
	}
	scratch, err := os.MkdirTemp(cfg.Dir, "run-")
	if err != nil {
		return nil, err
	}
	if scratch, err = filepath.Abs(scratch); err != nil {
		return nil, err
	}
	defer func() {
		os.RemoveAll(scratch)
		syscall.Sync() // the freed inodes' window starts now, not at writeback
	}()
	if len(cfg.Workers) == 0 {
		cfg.Workers = []int{0}
	}
	res := &Result{Scratch: scratch, FSType: fsType(scratch), Workers: cfg.Workers, GOMAXPROCS: runtime.GOMAXPROCS(0),
		Targets: TargetResult{SmallFilesPerSec: targetFilesPerSec, LargeMBPerSec: targetMBPerSec}}
	var ws []string
	for _, w := range cfg.Workers {
		ws = append(ws, workersName(w))
	}
	workers := strings.Join(ws, ", ")
	fmt.Fprintf(cfg.Log, "scratch %s (%s), workers %s, GOMAXPROCS %d, %d run(s)\n", scratch, res.FSType, workers, res.GOMAXPROCS, cfg.Runs)
	if res.FSType == "tmpfs" {
		fmt.Fprintf(cfg.Log, "warning: the scratch directory is on a tmpfs: this does not measure a disk (use -dir)\n")
	}

	b := &bench{cfg: cfg, scratch: scratch}
	if cfg.Small > 0 {
		if res.Small, err = b.collection(ctx, "small", cfg.Small, cfg.SmallSize); err != nil {
			return nil, err
		}
		met := res.Small.TargetMet
		res.Targets.SmallMet = &met
	}
	if cfg.Large > 0 {
		if res.Large, err = b.collection(ctx, "large", cfg.Large, cfg.LargeSize); err != nil {
			return nil, err
		}
		met := res.Large.TargetMet
		res.Targets.LargeMet = &met
	}
	res.Seconds = time.Since(start).Seconds()
	fmt.Fprintf(cfg.Log, "done in %.1f s\n", res.Seconds)
	return res, nil
}

type bench struct {
	cfg     Config
	scratch string
}

// file is one generated file.
type file struct {
	rel  string
	size int
	sum  [sha256.Size]byte
}

// fill writes the deterministic contents of file i of a collection.
func fill(buf []byte, seed uint64, i int) {
	var s [32]byte
	copy(s[:], fmt.Sprintf("syncbench %d %d", seed, i))
	rand.NewChaCha8(s).Read(buf)
}

func relPath(name string, i, n int) string {
	if n <= 1000 {
		return fmt.Sprintf("%s/f%06d.bin", name, i)
	}
	// 100 files per directory, as a collection would be spread.
	return fmt.Sprintf("%s/d%04d/f%06d.bin", name, i/100, i)
}

// create writes the n files of a collection below root with writers
// goroutines and returns their list.
func create(root, name string, n, size, writers int, seed uint64) ([]file, error) {
	files := make([]file, n)
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, size)
			for i := w; i < n; i += writers {
				rel := relPath(name, i, n)
				p := filepath.Join(root, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					errs[w] = err
					return
				}
				fill(buf, seed, i)
				if err := os.WriteFile(p, buf, 0o644); err != nil {
					errs[w] = err
					return
				}
				files[i] = file{rel: rel, size: size, sum: sha256.Sum256(buf)}
			}
		}()
	}
	wg.Wait()
	return files, errors.Join(errs...)
}

func (b *bench) collection(ctx context.Context, name string, n, size int) (*Collection, error) {
	log := b.cfg.Log
	c := &Collection{Name: name, Files: n, FileSize: size, Bytes: int64(n) * int64(size)}
	small := name == "small"
	if small {
		c.Baseline, c.BaselineUnits, c.TargetUnit, c.TargetFigure = "disk create ceiling", "files/s", "files/s", targetFilesPerSec
	} else {
		c.Baseline, c.BaselineUnits, c.TargetUnit, c.TargetFigure = "raw download", "MB/s", "MB/s", targetMBPerSec
	}
	dir := filepath.Join(b.scratch, name+"-src")
	seed := uint64(len(name))
	t0 := time.Now()
	files, err := create(dir, name, n, size, 2, seed)
	if err != nil {
		return nil, err
	}
	c.GenerateSec = time.Since(t0).Seconds()
	syscall.Sync()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	base := "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}},
		StateDir: filepath.Join(b.scratch, name+"-state"), ChangeListPeriod: time.Hour, Dumps: b.cfg.Dumps,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		ln.Close()
		return nil, err
	}
	defer src.Close()
	t0 = time.Now()
	if _, err := src.Update(ctx); err != nil {
		ln.Close()
		return nil, fmt.Errorf("source update: %w", err)
	}
	c.SourceUpdate = time.Since(t0).Seconds()
	srv := &http.Server{Handler: src.Handler(nil)}
	go srv.Serve(ln)
	defer srv.Close()
	syscall.Sync()
	fmt.Fprintf(log, "%s: generated %d files × %s in %.2f s (%s files/s), Source update (scan, hash, publish) %.2f s, serving %s\n",
		name, n, human(int64(size)), c.GenerateSec, commas(float64(n)/c.GenerateSec), c.SourceUpdate, base)

	for r := 1; r <= b.cfg.Runs; r++ {
		run := &RunResult{Run: r, Baselines: map[string]float64{}}
		if small {
			for _, w := range []int{1, 4} {
				d := filepath.Join(b.scratch, fmt.Sprintf("%s-create-%d-%d", name, w, r))
				t := time.Now()
				if _, err := create(d, name, n, size, w, seed); err != nil {
					return nil, fmt.Errorf("create baseline: %w", err)
				}
				el := time.Since(t)
				rate := float64(n) / el.Seconds()
				run.Baselines[fmt.Sprintf("create_%d_writers", w)] = rate
				run.Baseline = max(run.Baseline, rate)
				// For reference: the same made durable, as a sync does.
				syncfs(d)
				run.Baselines[fmt.Sprintf("create_%d_writers_then_syncfs", w)] = float64(n) / time.Since(t).Seconds()
				syscall.Sync()
			}
		} else {
			d := filepath.Join(b.scratch, fmt.Sprintf("%s-download-%d", name, r))
			t := time.Now()
			got, err := download(ctx, b.cfg.Client, base, d, files, 4)
			if err != nil {
				return nil, fmt.Errorf("raw download baseline: %w", err)
			}
			if got != c.Bytes {
				return nil, fmt.Errorf("raw download baseline: got %d bytes, want %d", got, c.Bytes)
			}
			run.Baseline = float64(got) / time.Since(t).Seconds() / 1e6
			run.Baselines["download_4"] = run.Baseline
			syncfs(d)
			run.Baselines["download_4_then_syncfs"] = float64(got) / time.Since(t).Seconds() / 1e6
			// A hundred files: removing them does not slow later creates
			// down, and their page cache is recycled as a sync's would be.
			os.RemoveAll(d)
			syscall.Sync()
		}

		baseline := *run
		for _, w := range b.cfg.Workers {
			run := &RunResult{Run: r, Workers: w, Baseline: baseline.Baseline, Baselines: baseline.Baselines}
			if err := b.sync(ctx, c, run, base, files); err != nil {
				return nil, err
			}
		}
	}
	c.Best = c.Runs[0]
	for _, r := range c.Runs[1:] {
		if r.SyncSec < c.Best.SyncSec {
			c.Best = r
		}
	}
	if small {
		c.TargetMet = c.Best.FilesPerSec >= targetFilesPerSec
	} else {
		c.TargetMet = c.Best.MBPerSec >= targetMBPerSec
	}
	if len(c.Runs) > 1 {
		if len(b.cfg.Workers) > 1 {
			for _, w := range b.cfg.Workers {
				var best *RunResult
				for _, r := range c.Runs {
					if r.Workers == w && (best == nil || r.SyncSec < best.SyncSec) {
						best = r
					}
				}
				fmt.Fprintln(log, c.line(fmt.Sprintf("%s (best, workers %s)", name, workersName(w)), best))
			}
		}
		fmt.Fprintln(log, c.line(fmt.Sprintf("%s (best of all, workers %s)", name, workersName(c.Best.Workers)), c.Best))
	}
	return c, nil
}

// sync runs one sync of collection c with run.Workers into a new DEST,
// verifies DEST and reports.
func (b *bench) sync(ctx context.Context, c *Collection, run *RunResult, base string, files []file) error {
	name, r := c.Name, run.Run
	small := name == "small"
	log := b.cfg.Log
	dest := filepath.Join(b.scratch, fmt.Sprintf("%s-dest-%d-w%d", name, r, run.Workers))
	spec := childSpec{Source: base, Dest: dest, Workers: run.Workers, All: b.cfg.VerifyAll, Dumps: b.cfg.Dumps}
	if b.cfg.CPUProfile != "" {
		spec.CPUProfile = fmt.Sprintf("%s-%s-%d-w%d.pprof", b.cfg.CPUProfile, name, r, run.Workers)
	}
	if b.cfg.BlockProfile != "" {
		spec.BlockProfile = fmt.Sprintf("%s-%s-%d-w%d.pprof", b.cfg.BlockProfile, name, r, run.Workers)
	}
	cr, err := runChild(ctx, spec, run)
	if err != nil {
		return err
	}
	if err := verify(dest, files); err != nil {
		return fmt.Errorf("%s: DEST differs from the Source after the sync: %w", name, err)
	}
	run.SyncSec = cr.Seconds
	run.FilesPerSec = float64(cr.Fetched) / cr.Seconds
	run.MBPerSec = float64(cr.Bytes) / cr.Seconds / 1e6
	run.PeakRSSKiB = cr.VmHWMKiB
	run.Mode = cr.Mode
	run.Fetched = cr.Fetched
	run.Phases, run.LastFetchSec = cr.Phases, cr.LastFetchAt
	if small {
		run.Ratio = run.FilesPerSec / run.Baseline
	} else {
		run.Ratio = run.MBPerSec / run.Baseline
	}
	c.Runs = append(c.Runs, run)
	if !small {
		os.RemoveAll(dest)
	}
	syscall.Sync()
	prefix := name
	if b.cfg.Runs > 1 || len(b.cfg.Workers) > 1 {
		prefix = fmt.Sprintf("%s (run %d/%d, workers %s)", name, r, b.cfg.Runs, workersName(run.Workers))
	}
	fmt.Fprintln(log, c.line(prefix, run))
	fmt.Fprintf(log, "    %.1f MB/s, %s files/s; CPU: sync child %.2f s, Source server %.2f s; mode %s; baselines %s\n",
		run.MBPerSec, commas(run.FilesPerSec), run.ChildCPUSec, run.ServerCPUSec, run.Mode, fmtBaselines(run.Baselines))
	fmt.Fprintf(log, "    last file fetched at %.3f s; events: %s\n", run.LastFetchSec, strings.Join(run.Phases, "; "))
	return nil
}

// line is the one-line summary of a run.
func (c *Collection) line(prefix string, r *RunResult) string {
	var fig string
	var got float64
	if c.BaselineUnits == "files/s" {
		got = r.FilesPerSec
		fig = fmt.Sprintf("%s files/s (%.2fx of %s %s files/s)", commas(r.FilesPerSec), r.Ratio, c.Baseline, commas(r.Baseline))
	} else {
		got = r.MBPerSec
		fig = fmt.Sprintf("%s MB/s (%.2fx of %s %s MB/s)", commas(r.MBPerSec), r.Ratio, c.Baseline, commas(r.Baseline))
	}
	verdict := "met"
	if got < c.TargetFigure {
		verdict = "MISSED"
	}
	return fmt.Sprintf("%s: %d files × %s: sync %.2f s = %s peak RSS %d MB [target %s %s: %s]",
		prefix, c.Files, human(int64(c.FileSize)), r.SyncSec, fig, r.PeakRSSKiB*1024/1e6, commas(c.TargetFigure), c.TargetUnit, verdict)
}

func fmtBaselines(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s", k, commas(m[k])))
	}
	return strings.Join(parts, ", ")
}

// download GETs every file from base into dir with n concurrent plain
// GETs and io.Copy: no hashing, no verification, no fsync.
func download(ctx context.Context, client *http.Client, base, dir string, files []file, n int) (int64, error) {
	next := make(chan file)
	var mu sync.Mutex
	var total int64
	var errs []error
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				got, err := get(ctx, client, base+scan.EscapePath(f.rel), filepath.Join(dir, filepath.FromSlash(f.rel)))
				mu.Lock()
				total += got
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	for _, f := range files {
		next <- f
	}
	close(next)
	wg.Wait()
	return total, errors.Join(errs...)
}

func get(ctx context.Context, client *http.Client, u, path string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// verify checks that dest holds exactly files (but the Destination's state
// directory), with the right sizes and sha-256 digests.
func verify(dest string, files []file) error {
	want := make(map[string]*file, len(files))
	for i := range files {
		want[files[i].rel] = &files[i]
	}
	var paths []string
	var problems []string
	err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dest && filepath.Dir(p) == dest && d.Name() == destination.StateDirName {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dest, p)
		rel = filepath.ToSlash(rel)
		if want[rel] == nil {
			problems = append(problems, "extra "+rel)
			return nil
		}
		paths = append(paths, rel)
		return nil
	})
	if err != nil {
		return err
	}
	found := make(map[string]bool, len(paths))
	for _, p := range paths {
		found[p] = true
	}
	for _, f := range files {
		if !found[f.rel] {
			problems = append(problems, "missing "+f.rel)
		}
	}
	// Hash what is there, on every CPU.
	var mu sync.Mutex
	next := make(chan string)
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rel := range next {
				if msg := checkFile(filepath.Join(dest, filepath.FromSlash(rel)), want[rel]); msg != "" {
					mu.Lock()
					problems = append(problems, rel+": "+msg)
					mu.Unlock()
				}
			}
		}()
	}
	for _, p := range paths {
		next <- p
	}
	close(next)
	wg.Wait()
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%d problems: %s", len(problems), strings.Join(problems[:min(len(problems), 10)], "; "))
	}
	return nil
}

func checkFile(path string, f *file) string {
	fh, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, fh)
	switch {
	case err != nil:
		return err.Error()
	case n != int64(f.size):
		return fmt.Sprintf("%d bytes, want %d", n, f.size)
	case [sha256.Size]byte(h.Sum(nil)) != f.sum:
		return "sha-256 differs"
	}
	return ""
}

// childSpec tells the sync child what to do.
type childSpec struct {
	Source  string `json:"source"`
	Dest    string `json:"dest"`
	Workers int    `json:"workers"`
	All     bool   `json:"all,omitempty"`
	// Dumps: take the Resource Dump although the Source offers its bulk
	// GET (which the default sync prefers): what -dumps measures.
	Dumps        bool   `json:"dumps,omitempty"`
	CPUProfile   string `json:"cpuprofile,omitempty"`
	BlockProfile string `json:"blockprofile,omitempty"`
}

// childResult is what the sync child prints.
type childResult struct {
	Seconds  float64 `json:"seconds"`
	Fetched  int     `json:"fetched"`
	Failed   int     `json:"failed"`
	Bytes    int64   `json:"bytes"`
	Mode     string  `json:"mode"`
	VmHWMKiB int64   `json:"vmhwm_kib"`
	Refused  int     `json:"refused_dials"`
	// Phases are the run's plan, phase and done events, with the time
	// since the start of the sync and of the last resource fetched.
	Phases      []string `json:"phases"`
	LastFetchAt float64  `json:"last_fetch_seconds"`
	Error       string   `json:"error,omitempty"`
}

// runChild runs the sync in a child process and fills in the CPU figures.
func runChild(ctx context.Context, spec childSpec, run *RunResult) (*childResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	js, _ := json.Marshal(spec)
	args := []string{exe}
	if w := os.Getenv(wrapEnv); w != "" {
		args = append(strings.Fields(w), exe)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	if spec.CPUProfile != "" {
		// This process does nothing but serve the sync meanwhile: its
		// profile is the Source's.
		f, err := os.Create(strings.TrimSuffix(spec.CPUProfile, ".pprof") + "-server.pprof")
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err == nil {
			defer pprof.StopCPUProfile()
		}
	}
	self0 := cpuTime(syscall.RUSAGE_SELF)
	out, err := cmd.Output()
	run.ServerCPUSec = (cpuTime(syscall.RUSAGE_SELF) - self0).Seconds()
	if err != nil {
		return nil, fmt.Errorf("sync child: %w (output %q)", err, out)
	}
	run.ChildCPUSec = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	var cr childResult
	if err := json.Unmarshal(out, &cr); err != nil {
		return nil, fmt.Errorf("sync child output %q: %w", out, err)
	}
	switch {
	case cr.Error != "":
		return nil, fmt.Errorf("sync child: %s", cr.Error)
	case cr.Failed > 0:
		return nil, fmt.Errorf("sync child: %d resources failed", cr.Failed)
	case cr.Refused > 0:
		return nil, fmt.Errorf("sync child: %d dials to non-loopback addresses refused", cr.Refused)
	}
	return &cr, nil
}

// childMain runs one sync as the spec says and prints a childResult.
func childMain(specJSON string, out io.Writer) int {
	var cr childResult
	defer func() { json.NewEncoder(out).Encode(&cr) }()
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		cr.Error = err.Error()
		return 0
	}
	if spec.CPUProfile != "" {
		f, err := os.Create(spec.CPUProfile)
		if err != nil {
			cr.Error = err.Error()
			return 0
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if spec.BlockProfile != "" {
		runtime.SetBlockProfileRate(1)
		defer func() {
			if f, err := os.Create(spec.BlockProfile); err == nil {
				pprof.Lookup("block").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	// The Source is on loopback: dial nothing else.
	g := &testnet.Guard{}
	client := &http.Client{Transport: g.Transport()}
	var mu sync.Mutex
	var t0 time.Time
	events := func(ev destination.Event) {
		switch ev.Kind {
		case destination.EventPlan, destination.EventPhase, destination.EventDone:
			msg := ev.Mode
			if ev.Kind != destination.EventPlan {
				msg = ev.Message
			}
			mu.Lock()
			cr.Phases = append(cr.Phases, fmt.Sprintf("%.3fs %s %s", ev.Time.Sub(t0).Seconds(), ev.Kind, msg))
			mu.Unlock()
		case destination.EventFetched:
			mu.Lock()
			cr.LastFetchAt = max(cr.LastFetchAt, ev.Time.Sub(t0).Seconds())
			mu.Unlock()
		}
	}
	t0 = time.Now()
	rep, err := destination.Sync(context.Background(), spec.Source, destination.Options{Dest: spec.Dest, Client: client, Workers: spec.Workers, VerifyAll: spec.All, PreferDump: spec.Dumps, Events: events})
	cr.Seconds = time.Since(t0).Seconds()
	cr.VmHWMKiB = vmHWM()
	cr.Refused = len(g.Refused())
	if err != nil {
		cr.Error = err.Error()
	}
	if rep != nil {
		var modes []string
		for _, s := range rep.Sets {
			cr.Fetched += s.Fetched
			cr.Failed += s.Failed
			cr.Bytes += s.Bytes
			modes = append(modes, s.Mode)
			for _, f := range s.Failures[:min(len(s.Failures), 3)] {
				fmt.Fprintf(os.Stderr, "syncbench child: failed %s: %s\n", f.URI, f.Error)
			}
		}
		cr.Mode = strings.Join(modes, ",")
	}
	return 0
}

// vmHWM returns the peak resident set size of this process in KiB.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// syncfs flushes the file system holding dir.
func syncfs(dir string) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		syscall.Sync()
		return
	}
	unix.Syncfs(fd)
	syscall.Close(fd)
}

// fsType names the file system holding dir, for the common cases.
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown"
	}
	switch uint64(st.Type) {
	case 0x01021994:
		return "tmpfs"
	case 0xEF53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x794c7630:
		return "overlayfs"
	}
	return fmt.Sprintf("fs type %#x", st.Type)
}

func human(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// commas formats x rounded to an integer with thousands separators.
func commas(x float64) string {
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func workersName(w int) string {
	if w <= 0 {
		return fmt.Sprintf("%d (destination default)", destinationDefaultWorkers)
	}
	return strconv.Itoa(w)
}
