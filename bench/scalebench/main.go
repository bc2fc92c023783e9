//go:build linux

// Command scalebench measures the resourcesync command line at scale, end
// to end, each step a child process of the built binary, beside baselines
// measured in the same run on the same disk:
//
//	go run ./bench/scalebench -n 200000,1000000 -md BENCHMARKS.md
//	go run ./bench/scalebench -n 200000 -workdir /data/scratch -json
//
// It builds cmd/resourcesync once into the work directory and, for each
// size N of -n,
//   - generates N deterministic pseudo-random files of 512–1536 bytes,
//     about 1,000 per directory (the rate is printed: it tells whether the
//     disk was slowed down by earlier deletions, see below);
//   - measures the baselines: the file-creation ceiling (the same N files
//     written with os.WriteFile into a fresh directory by 1 and by 2
//     writers, the faster counts), `find | xargs -0 -P2 -n 1000 md5sum`
//     over the tree (best of 2, page cache warm), and later the raw
//     download (plain HTTP GETs of every file from the running Source, 8
//     at a time, into io.Discard: no hashing, no files written);
//   - runs `publish` (first, default settings), `publish --no-dumps`
//     (first, separate state and output), `publish` again (unchanged
//     rescan) and `publish` after changing one file (the update target),
//     `serve` on the published state (time to ready, peak RSS at ready and
//     over the following baseline `sync`), a baseline `sync` into an empty
//     directory (from the Resource Dump the Source offers by default), the
//     same with `--no-dump` into another (every resource fetched on its own;
//     -skip-nodump-sync leaves it out), then changes 1,000 files, restarts `serve` on its state
//     (which picks them up in its start-up scan), runs an incremental
//     `sync`, `sync --audit` and `validate` of the whole tree.
//
// Then a large-files scenario (100 × 10 MiB by default, `serve --no-dumps`
// so that the files themselves are fetched): baseline `sync` MB/s beside
// the raw download of the same files (4 GETs at a time into files).
//
// Wall time is measured around each child; peak RSS is the child's
// ru_maxrss as GNU time (/usr/bin/time -f %M) reports it (wait4's figure
// for a direct child of this process is never below this process's own
// peak; see findTime), and for the long-running `serve` its VmHWM from
// /proc/PID/status (reset through /proc/PID/clear_refs before the phase
// it is read for, so "serve during sync" is the sync phase's peak). After
// every sync DEST is checked: the number of files and the bytes of a
// sample of about 10,000 files plus every changed one, against the
// generator, so a fast wrong result cannot pass.
//
// At the end it prints each of issue 11's targets as met or missed with the
// figure, and with -md writes the same as a markdown report that describes
// the machine (CPU, cores, RAM, kernel, file system of the work directory,
// Go version, date, commit).
//
// No small file is deleted before the end of the run (see syncbench: on
// ext4 every file created within a minute or so of a mass deletion costs far
// more CPU). The trees are removed at the end unless -keep; leave a few
// minutes between runs.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// The targets.
const (
	targetRSSMB         = 128
	targetSmallFilesSec = 10000
	targetLargeMBSec    = 700
	targetPublishRatio  = 0.8
	targetRescanFiles   = 300000
	targetUpdateSec     = 2.0
	targetUpdateAtSize  = 1000000
)

func main() {
	var cfg Config
	sizes := flag.String("n", "200000,1000000", "comma-separated collection sizes (files)")
	flag.StringVar(&cfg.Workdir, "workdir", ".scalebench", "work directory, on the disk to measure (not /tmp, which may be a tmpfs); a run-* directory is made in it")
	flag.StringVar(&cfg.MD, "md", "", "write the markdown report to `FILE`")
	asJSON := flag.Bool("json", false, "print the results as JSON on stdout (progress goes to stderr)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the generated trees, states and logs")
	flag.StringVar(&cfg.Bin, "bin", "", "use this resourcesync binary instead of building ./cmd/resourcesync")
	flag.BoolVar(&cfg.SkipNoDumpSync, "skip-nodump-sync", false, "skip the second baseline sync with --no-dump (every resource fetched on its own)")
	flag.IntVar(&cfg.Changes, "changes", 1000, "files changed for the incremental sync")
	flag.IntVar(&cfg.Large, "large", 100, "number of large files (0: skip the large-files scenario)")
	flag.IntVar(&cfg.LargeSize, "large-size", 10<<20, "bytes per large file")
	flag.Parse()
	for _, s := range strings.Split(*sizes, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			log.Fatalf("-n: bad size %q (at least 1000)", s)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	cfg.Command = strings.TrimSpace("go run ./bench/scalebench " + strings.Join(os.Args[1:], " "))
	cfg.Log = os.Stdout
	if *asJSON {
		cfg.Log = os.Stderr
	}
	ctx := context.Background()
	res, err := Run(ctx, cfg)
	if res != nil {
		md := res.Markdown()
		if !*asJSON {
			fmt.Fprintln(cfg.Log)
			fmt.Fprint(cfg.Log, md)
		}
		if cfg.MD != "" {
			if werr := os.WriteFile(cfg.MD, []byte(md), 0o644); werr != nil {
				log.Print(werr)
			}
		}
		if *asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			enc.Encode(res)
		}
	}
	if res != nil && !cfg.Keep {
		// After the report: removing a million files takes minutes.
		fmt.Fprintf(cfg.Log, "removing %s\n", res.Scratch)
		os.RemoveAll(res.Scratch)
		syscall.Sync() // the freed inodes' window starts now, not at writeback
	}
	if err != nil {
		log.Fatal(err)
	}
}

// Config is what Run measures.
type Config struct {
	Sizes   []int
	Workdir string
	MD      string
	Keep    bool
	Bin     string
	Changes int
	// SkipNoDumpSync skips the baseline sync with --no-dump.
	SkipNoDumpSync bool
	Large          int
	LargeSize      int
	Log            io.Writer
	// Command is the command line, for the report.
	Command string
}

// Result is the outcome of Run.
type Result struct {
	Command string        `json:"command"`
	RSSFrom string        `json:"peak_rss_from"`
	Machine Machine       `json:"machine"`
	Scratch string        `json:"scratch"`
	Sizes   []*SizeResult `json:"sizes"`
	Large   *LargeResult  `json:"large,omitempty"`
	Targets []Target      `json:"targets"`
	Seconds float64       `json:"seconds"`
	Error   string        `json:"error,omitempty"`
}

// Machine describes where the run took place.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	RAM       string `json:"ram"`
	Kernel    string `json:"kernel"`
	FS        string `json:"fs"`
	GoVersion string `json:"go_version"`
	Date      string `json:"date"`
	Commit    string `json:"commit"`
}

// SizeResult is the measurement of one collection size.
type SizeResult struct {
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	Baselines Baselines `json:"baselines"`
	Steps     []*Step   `json:"steps"`
}

// Baselines are the same run's reference figures for one size.
type Baselines struct {
	Create1FilesSec     float64 `json:"create_1_writer_files_per_sec"`
	Create2FilesSec     float64 `json:"create_2_writers_files_per_sec"`
	CreateFilesSec      float64 `json:"create_ceiling_files_per_sec"`
	Md5sumFilesSec      float64 `json:"md5sum_files_per_sec"`
	Md5sumMBSec         float64 `json:"md5sum_mb_per_sec"`
	DownloadFilesSec    float64 `json:"raw_download_files_per_sec"`
	DownloadMBSec       float64 `json:"raw_download_mb_per_sec"`
	DownloadConcurrency int     `json:"raw_download_concurrency"`
}

// Step is one timed step.
type Step struct {
	Name        string  `json:"name"`
	Files       int     `json:"files"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	FilesPerSec float64 `json:"files_per_sec,omitempty"`
	MBPerSec    float64 `json:"mb_per_sec,omitempty"`
	PeakRSSKiB  int64   `json:"peak_rss_kib,omitempty"`
	CPUSec      float64 `json:"cpu_seconds,omitempty"`
	// Versus names the baseline the step is compared with, and Ratio is
	// the step's rate over the baseline's.
	Versus string  `json:"versus,omitempty"`
	Ratio  float64 `json:"ratio,omitempty"`
	Note   string  `json:"note,omitempty"`
	// rate: "files" or "MB" (which figure Ratio compares), "" none.
	rate string
}

// LargeResult is the large-files scenario.
type LargeResult struct {
	Files         int     `json:"files"`
	FileSize      int     `json:"file_size"`
	DownloadMBSec float64 `json:"raw_download_mb_per_sec"`
	Steps         []*Step `json:"steps"`
}

// Target is one of the targets, met or missed.
type Target struct {
	What   string `json:"what"`
	Size   int    `json:"size,omitempty"`
	Figure string `json:"figure"`
	Met    bool   `json:"met"`
	// Applies is false for a figure reported at a size the target does
	// not name (the 1-change update is a 1,000,000-resource target).
	Applies bool `json:"applies"`
}

type bench struct {
	cfg     Config
	log     io.Writer
	scratch string
	bin     string
	logs    string
	client  *http.Client
	// timeBin is GNU time, which measures a child's peak RSS unaffected
	// by this process's ("": wait4's ru_maxrss, floored by this process's).
	timeBin string
}

// Run measures every size of cfg, then the large files.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	start := time.Now()
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Changes <= 0 {
		cfg.Changes = 1000
	}
	if err := os.MkdirAll(cfg.Workdir, 0o755); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(cfg.Workdir, "run-")
	if err != nil {
		return nil, err
	}
	if scratch, err = filepath.Abs(scratch); err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, log: cfg.Log, scratch: scratch, logs: filepath.Join(scratch, "logs")}
	if err := os.MkdirAll(b.logs, 0o755); err != nil {
		return nil, err
	}
	g := &testnet.Guard{}
	tr := g.Transport()
	tr.MaxIdleConnsPerHost = 16
	b.client = &http.Client{Transport: tr, Timeout: 5 * time.Minute}

	res := &Result{Machine: machine(scratch), Scratch: scratch, Command: cfg.Command}
	if b.timeBin = findTime(ctx, b.logs); b.timeBin == "" {
		fmt.Fprintln(b.log, "warning: no GNU /usr/bin/time: a step's peak RSS is wait4's ru_maxrss, which is at least scalebench's own peak RSS")
	}
	res.RSSFrom = "GNU time -f %M (the child's ru_maxrss); serve: VmHWM"
	if b.timeBin == "" {
		res.RSSFrom = "wait4 ru_maxrss (floored by scalebench's own peak RSS); serve: VmHWM"
	}
	fmt.Fprintf(b.log, "scalebench: sizes %v, scratch %s (%s), %s, %d cores, %s RAM, Go %s, commit %s\n",
		cfg.Sizes, scratch, res.Machine.FS, res.Machine.CPU, res.Machine.Cores, res.Machine.RAM, res.Machine.GoVersion, res.Machine.Commit)
	if res.Machine.FS == "tmpfs" {
		fmt.Fprintln(b.log, "warning: the work directory is on a tmpfs: this does not measure a disk (use -workdir)")
	}
	defer func() {
		res.Targets = res.targets()
		res.Seconds = time.Since(start).Seconds()
	}()

	if b.bin = cfg.Bin; b.bin == "" {
		b.bin = filepath.Join(scratch, "resourcesync")
		t := time.Now()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.bin, "./cmd/resourcesync")
		cmd.Dir, err = moduleDir()
		if err != nil {
			return res, err
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return res, fmt.Errorf("go build: %w\n%s", err, out)
		}
		fmt.Fprintf(b.log, "built %s in %.1f s\n", b.bin, time.Since(t).Seconds())
	}

	if cfg.Large > 0 {
		if res.Large, err = b.large(ctx); err != nil {
			res.Error = err.Error()
			return res, fmt.Errorf("large files: %w", err)
		}
	}
	for _, n := range cfg.Sizes {
		sr := &SizeResult{Files: n}
		res.Sizes = append(res.Sizes, sr)
		if err := b.size(ctx, sr); err != nil {
			res.Error = err.Error()
			return res, fmt.Errorf("%d files: %w", n, err)
		}
	}
	return res, nil
}

// moduleDir is the root of the module holding cmd/resourcesync.
func moduleDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the resourcesync module: run from its checkout, or give -bin")
	}
	return filepath.Dir(mod), nil
}

// ---- the generated collection ----

// relPath is the path of file i: about 1,000 files per directory.
func relPath(i int) string {
	return fmt.Sprintf("d%04d/f%07d.bin", i/1000, i)
}

// content writes version v of file i into buf and returns it (512–1536
// bytes, deterministic).
func content(buf []byte, i, v int) []byte {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(i))
	binary.LittleEndian.PutUint64(seed[8:], uint64(v))
	copy(seed[16:], "scalebench")
	r := rand.NewChaCha8(seed)
	size := 512 + int(r.Uint64()%1025)
	buf = buf[:size]
	r.Read(buf)
	return buf
}

// tree is a generated collection: file i holds version versions[i] (0 when
// absent).
type tree struct {
	dir      string
	n        int
	bytes    int64
	versions map[int]int
}

// create writes files 0..n-1 (version 0) below dir with writers goroutines
// and returns their total size.
func create(dir string, n, writers int) (int64, error) {
	var wg sync.WaitGroup
	errs := make([]error, writers)
	sizes := make([]int64, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2048)
			lastDir := -1
			for i := w; i < n; i += writers {
				p := filepath.Join(dir, relPath(i))
				if d := i / 1000; d != lastDir {
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						errs[w] = err
						return
					}
					lastDir = d
				}
				c := content(buf, i, 0)
				if err := os.WriteFile(p, c, 0o644); err != nil {
					errs[w] = err
					return
				}
				sizes[w] += int64(len(c))
			}
		}()
	}
	wg.Wait()
	var total int64
	for _, s := range sizes {
		total += s
	}
	return total, errors.Join(errs...)
}

// change writes version v of file i in t.
func (t *tree) change(i, v int) error {
	p := filepath.Join(t.dir, relPath(i))
	old, err := os.Stat(p)
	if err != nil {
		return err
	}
	c := content(make([]byte, 2048), i, v)
	if err := os.WriteFile(p, c, 0o644); err != nil {
		return err
	}
	t.bytes += int64(len(c)) - old.Size()
	t.versions[i] = v
	return nil
}

// verify checks that dest holds exactly t's n files (but the state
// directory) and that a sample of about 10,000 files, and every changed
// one, has t's bytes.
func (t *tree) verify(dest string) error {
	count := 0
	var extra []string
	err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if filepath.Dir(p) == dest && d.Name() == destination.StateDirName {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dest, p)
		i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(rel), "f"), ".bin"))
		if err != nil || rel != filepath.FromSlash(relPath(i)) || i >= t.n {
			if len(extra) < 5 {
				extra = append(extra, rel)
			}
			return nil
		}
		count++
		return nil
	})
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("unexpected files in DEST: %v", extra)
	}
	if count != t.n {
		return fmt.Errorf("DEST holds %d files, want %d", count, t.n)
	}
	check := func(i int) error {
		got, err := os.ReadFile(filepath.Join(dest, relPath(i)))
		if err != nil {
			return err
		}
		if want := content(make([]byte, 2048), i, t.versions[i]); !bytes.Equal(got, want) {
			return fmt.Errorf("%s: %d bytes differ from the Source's version %d (%d bytes)", relPath(i), len(got), t.versions[i], len(want))
		}
		return nil
	}
	stride := max(1, t.n/10000)
	for i := 0; i < t.n; i += stride {
		if err := check(i); err != nil {
			return err
		}
	}
	for i := range t.versions {
		if err := check(i); err != nil {
			return err
		}
	}
	return nil
}

// ---- child processes ----

// proc is a finished child.
type proc struct {
	seconds float64
	maxRSS  int64 // KiB
	cpu     float64
	code    int
	out     string // the tail of its stdout
}

// run runs the binary with args to completion; name names its log files.
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
	p := &proc{seconds: time.Since(t).Seconds(), out: tail(stdout.Name(), 2048)}
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
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return p, err
	}
	return p, nil
}

// readMaxRSS reads the last line GNU time wrote with -f %M -o FILE (a
// child killed by a signal gets a "Command terminated" line before it).
func readMaxRSS(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(lastLine(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("maximum RSS %q: %w", b, err)
	}
	return n, nil
}

// findTime returns GNU time if it is there and works. A child's ru_maxrss
// from wait4 is no less than the peak RSS of the process that started it:
// Go starts children with clone(CLONE_VM|CLONE_VFORK), and exec records
// the parent's mm high-water mark as the child's. GNU time forks a child
// of its own, a process of about 1 MB, whose figure is the command's.
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

// mustRun is run that fails unless the child exits 0.
func (b *bench) mustRun(ctx context.Context, name string, args ...string) (*proc, error) {
	p, err := b.run(ctx, name, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if p.code != 0 {
		return nil, fmt.Errorf("%s: exit %d\nstdout: %s\nstderr: %s", name, p.code, p.out, tail(filepath.Join(b.logs, name+".err"), 2048))
	}
	return p, nil
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
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}

// server is a running `serve`.
type server struct {
	cmd   *exec.Cmd
	name  string
	ready float64 // seconds from start to its "serving" line
	line  string
	done  chan error
	// stopped and maxRSS: stop may be called again (deferred).
	stopped bool
	maxRSS  int64
}

// serve starts `serve` with args and waits until it serves.
func (b *bench) serve(ctx context.Context, name string, args ...string) (*server, error) {
	stderr, err := os.Create(filepath.Join(b.logs, name+".err"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, b.bin, append([]string{"serve"}, args...)...)
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	t := time.Now()
	if err := cmd.Start(); err != nil {
		stderr.Close()
		return nil, err
	}
	s := &server{cmd: cmd, name: name, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "serving ") {
				select {
				case ready <- l:
				default:
				}
			}
		}
		io.Copy(io.Discard, pipe)
		s.done <- cmd.Wait()
		stderr.Close()
	}()
	select {
	case s.line = <-ready:
		s.ready = time.Since(t).Seconds()
		return s, nil
	case err := <-s.done:
		return nil, fmt.Errorf("serve exited before serving: %v\nstderr: %s", err, tail(stderr.Name(), 2048))
	}
}

// hwm is the serve's peak RSS (VmHWM) so far, in KiB.
func (s *server) hwm() int64 {
	return procStatus(s.cmd.Process.Pid, "VmHWM:")
}

// resetHWM starts a new peak RSS window (clear_refs 5, Linux 4.0+).
func (s *server) resetHWM() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("5"), 0)
}

// stop ends the serve (SIGTERM) and returns its lifetime's ru_maxrss.
func (s *server) stop() (int64, error) {
	if s.stopped {
		return s.maxRSS, nil
	}
	s.stopped = true
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		s.cmd.Process.Kill()
		<-s.done
		return 0, fmt.Errorf("%s: did not stop within 2 minutes of SIGTERM", s.name)
	}
	if ru, ok := s.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.maxRSS = ru.Maxrss
	}
	return s.maxRSS, nil
}

func procStatus(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

// freePort picks a loopback port for a serve (and the base URL its state
// is published for).
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// ---- baselines ----

// md5sum runs find | xargs -0 -P2 -n 1000 md5sum over dir twice and
// returns the shorter time.
func md5sum(ctx context.Context, dir string) (time.Duration, error) {
	best := time.Duration(math.MaxInt64)
	for range 2 {
		t := time.Now()
		cmd := exec.CommandContext(ctx, "sh", "-c", `find "$1" -type f -print0 | xargs -0 -P2 -n 1000 md5sum >/dev/null`, "sh", dir)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("md5sum baseline: %w", err)
		}
		best = min(best, time.Since(t))
	}
	return best, nil
}

// download GETs files 0..n-1 from base with conc plain GETs at a time into
// io.Discard (toDir == "") or into files below toDir, and returns the bytes.
func (b *bench) download(ctx context.Context, base string, n, conc int, rel func(int) string, toDir string) (int64, error) {
	next := make(chan int)
	var mu sync.Mutex
	var total int64
	var errs []error
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				got, err := b.get(ctx, base+rel(i), toDir, rel(i))
				mu.Lock()
				total += got
				if err != nil && len(errs) < 5 {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return total, errors.Join(errs...)
}

func (b *bench) get(ctx context.Context, u, toDir, rel string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var w io.Writer = io.Discard
	if toDir != "" {
		p := filepath.Join(toDir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return 0, err
		}
		f, err := os.Create(p)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		w = f
	}
	return io.Copy(w, resp.Body)
}

// ---- the scenarios ----

// step records a child's figures as a step.
func (b *bench) step(steps *[]*Step, name string, files int, bytes int64, p *proc, note string) *Step {
	s := &Step{Name: name, Files: files, Bytes: bytes, Seconds: p.seconds, PeakRSSKiB: p.maxRSS, CPUSec: p.cpu, Note: note}
	if files > 0 && p.seconds > 0 {
		s.FilesPerSec = float64(files) / p.seconds
		s.MBPerSec = float64(bytes) / p.seconds / 1e6
	}
	*steps = append(*steps, s)
	b.print(s)
	return s
}

func (b *bench) print(s *Step) {
	var parts []string
	parts = append(parts, fmt.Sprintf("%.2f s", s.Seconds))
	if s.FilesPerSec > 0 {
		parts = append(parts, fmt.Sprintf("%s files/s, %.1f MB/s", commas(s.FilesPerSec), s.MBPerSec))
	}
	if s.PeakRSSKiB > 0 {
		parts = append(parts, fmt.Sprintf("peak RSS %s", mb(s.PeakRSSKiB)))
	}
	if s.CPUSec > 0 {
		parts = append(parts, fmt.Sprintf("CPU %.2f s", s.CPUSec))
	}
	if s.Versus != "" {
		parts = append(parts, fmt.Sprintf("%.2fx %s", s.Ratio, s.Versus))
	}
	if s.Note != "" {
		parts = append(parts, s.Note)
	}
	fmt.Fprintf(b.log, "  %-34s %s\n", s.Name, strings.Join(parts, "; "))
}

func (s *Step) versus(name string, base float64, rate string) {
	if base <= 0 {
		return
	}
	s.Versus, s.rate = name, rate
	if rate == "MB" {
		s.Ratio = s.MBPerSec / base
	} else {
		s.Ratio = s.FilesPerSec / base
	}
}

var changesRE = regexp.MustCompile(`(\d+) created, (\d+) updated, (\d+) deleted`)

// expectChanges checks the counts on publish's result line, when it
// prints them.
func expectChanges(out string, created, updated, deleted int) error {
	m := changesRE.FindStringSubmatch(out)
	if m == nil {
		return nil
	}
	if want := fmt.Sprintf("%d created, %d updated, %d deleted", created, updated, deleted); m[0] != want {
		return fmt.Errorf("publish found %s, want %s", m[0], want)
	}
	return nil
}

// setLine is the "set NAME: ..." summary a sync printed.
func setLine(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "set ") && !strings.HasSuffix(l, "failures:") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return strings.Join(lines, " | ")
}

func lastLine(out string) string {
	out = strings.TrimSpace(out)
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		return out[i+1:]
	}
	return out
}

func (b *bench) size(ctx context.Context, sr *SizeResult) error {
	n := sr.Files
	log := b.log
	root := filepath.Join(b.scratch, fmt.Sprintf("n%d", n))
	p := func(s string) string { return filepath.Join(root, s) }
	tag := func(s string) string { return fmt.Sprintf("n%d-%s", n, s) }
	fmt.Fprintf(log, "\n== %s files ==\n", commas(float64(n)))
	st := &sr.Steps

	// Generate, then the creation ceiling: nothing is deleted before the
	// end of the run.
	src := &tree{dir: p("src"), n: n, versions: map[int]int{}}
	t := time.Now()
	total, err := create(src.dir, n, 2)
	if err != nil {
		return err
	}
	src.bytes, sr.Bytes = total, total
	b.step(st, "generate (2 writers)", n, total, &proc{seconds: time.Since(t).Seconds()}, "")
	syscall.Sync()
	for _, w := range []int{1, 2} {
		t := time.Now()
		if _, err := create(p(fmt.Sprintf("create-%d", w)), n, w); err != nil {
			return fmt.Errorf("creation ceiling: %w", err)
		}
		rate := float64(n) / time.Since(t).Seconds()
		if w == 1 {
			sr.Baselines.Create1FilesSec = rate
		} else {
			sr.Baselines.Create2FilesSec = rate
		}
		sr.Baselines.CreateFilesSec = max(sr.Baselines.CreateFilesSec, rate)
		syscall.Sync()
	}
	fmt.Fprintf(log, "  baseline: file creation ceiling %s files/s (1 writer %s, 2 writers %s)\n",
		commas(sr.Baselines.CreateFilesSec), commas(sr.Baselines.Create1FilesSec), commas(sr.Baselines.Create2FilesSec))
	md, err := md5sum(ctx, src.dir)
	if err != nil {
		return err
	}
	sr.Baselines.Md5sumFilesSec = float64(n) / md.Seconds()
	sr.Baselines.Md5sumMBSec = float64(total) / md.Seconds() / 1e6
	fmt.Fprintf(log, "  baseline: find | xargs -0 -P2 -n 1000 md5sum %.2f s, %s files/s, %.1f MB/s (best of 2)\n",
		md.Seconds(), commas(sr.Baselines.Md5sumFilesSec), sr.Baselines.Md5sumMBSec)

	addr, err := freePort()
	if err != nil {
		return err
	}
	base := "http://" + addr + "/"
	state, out := p("state"), p("out")

	// Publish: first (default settings), first without dumps, an unchanged
	// rescan, one changed file.
	pr, err := b.mustRun(ctx, tag("publish-first"), "publish", "--base-url", base, "--state", state, "--out", out, src.dir)
	if err != nil {
		return err
	}
	b.step(st, "publish first", n, total, pr, "").versus("md5sum", sr.Baselines.Md5sumFilesSec, "files")
	syscall.Sync()
	pr, err = b.mustRun(ctx, tag("publish-nodumps"), "publish", "--no-dumps", "--base-url", base, "--state", p("state-nodumps"), "--out", p("out-nodumps"), src.dir)
	if err != nil {
		return err
	}
	b.step(st, "publish --no-dumps first", n, total, pr, "").versus("md5sum", sr.Baselines.Md5sumFilesSec, "files")
	syscall.Sync()
	pr, err = b.mustRun(ctx, tag("publish-rescan"), "publish", "--base-url", base, "--state", state, "--out", out, src.dir)
	if err != nil {
		return err
	}
	if err := expectChanges(pr.out, 0, 0, 0); err != nil {
		return fmt.Errorf("unchanged rescan: %w", err)
	}
	b.step(st, "publish again (unchanged rescan)", n, total, pr, "")
	if err := src.change(0, 1); err != nil {
		return err
	}
	pr, err = b.mustRun(ctx, tag("publish-1change"), "publish", "--base-url", base, "--state", state, "--out", out, src.dir)
	if err != nil {
		return err
	}
	if err := expectChanges(pr.out, 0, 1, 0); err != nil {
		return fmt.Errorf("publish after one change: %w", err)
	}
	b.step(st, "publish after 1 change (update)", n, total, pr, "")
	syscall.Sync()

	// serve on the published state; raw download; baseline sync.
	serveArgs := []string{"--addr", addr, "--state", state, "--rescan-interval", "0", src.dir}
	srv, err := b.serve(ctx, tag("serve-1"), serveArgs...)
	if err != nil {
		return err
	}
	defer func() {
		if srv != nil {
			srv.stop()
		}
	}()
	b.step(st, "serve start (published state)", 0, 0, &proc{seconds: srv.ready, maxRSS: srv.hwm()}, "time to ready; peak RSS at ready")
	srv.resetHWM()
	t = time.Now()
	got, err := b.download(ctx, base, n, 8, relPath, "")
	if err != nil {
		return fmt.Errorf("raw download: %w", err)
	}
	if got != src.bytes {
		return fmt.Errorf("raw download: %d bytes, want %d", got, src.bytes)
	}
	el := time.Since(t).Seconds()
	sr.Baselines.DownloadFilesSec, sr.Baselines.DownloadMBSec, sr.Baselines.DownloadConcurrency = float64(n)/el, float64(got)/el/1e6, 8
	fmt.Fprintf(log, "  baseline: raw download (8 GETs at a time, io.Discard) %.2f s, %s files/s, %.1f MB/s; serve peak RSS meanwhile %s\n",
		el, commas(sr.Baselines.DownloadFilesSec), sr.Baselines.DownloadMBSec, mb(srv.hwm()))

	dest := p("dest")
	srv.resetHWM()
	pr, err = b.mustRun(ctx, tag("sync-baseline"), "sync", "--progress", "quiet", base, dest)
	if err != nil {
		return err
	}
	serveSync := srv.hwm()
	if err := src.verify(dest); err != nil {
		return fmt.Errorf("after the baseline sync: %w", err)
	}
	s := b.step(st, "sync baseline", n, src.bytes, pr, setLine(pr.out))
	s.versus("creation ceiling", sr.Baselines.CreateFilesSec, "files")
	b.step(st, "serve during baseline sync", 0, 0, &proc{seconds: pr.seconds, maxRSS: serveSync}, "peak RSS of serve while it served the sync")
	if !b.cfg.SkipNoDumpSync {
		// The same baseline fetching every resource on its own (the path
		// a Source without dumps gets), into another DEST.
		destND := p("dest-nodump")
		srv.resetHWM()
		pr, err = b.mustRun(ctx, tag("sync-baseline-nodump"), "sync", "--no-dump", "--progress", "quiet", base, destND)
		if err != nil {
			return err
		}
		if err := src.verify(destND); err != nil {
			return fmt.Errorf("after the baseline sync --no-dump: %w", err)
		}
		b.step(st, "sync baseline --no-dump", n, src.bytes, pr, setLine(pr.out)).versus("creation ceiling", sr.Baselines.CreateFilesSec, "files")
		b.step(st, "serve during baseline sync --no-dump", 0, 0, &proc{seconds: pr.seconds, maxRSS: srv.hwm()}, "peak RSS of serve while it served the sync")
	}

	// Change files; restart serve on its state (its start-up scan picks
	// them up); incremental sync, audit, validate.
	k := min(b.cfg.Changes, n-1)
	var changed int64
	for j := range k {
		i := 1 + j*((n-1)/k)
		if err := src.change(i, 2); err != nil {
			return err
		}
		fi, err := os.Stat(filepath.Join(src.dir, relPath(i)))
		if err != nil {
			return err
		}
		changed += fi.Size()
	}
	if _, err := srv.stop(); err != nil {
		return err
	}
	srv = nil
	syscall.Sync()
	srv, err = b.serve(ctx, tag("serve-2"), serveArgs...)
	if err != nil {
		return err
	}
	b.step(st, fmt.Sprintf("serve restart (own state, %d changed)", k), 0, 0, &proc{seconds: srv.ready, maxRSS: srv.hwm()}, "time to ready (start-up scan included); peak RSS at ready")
	srv.resetHWM()
	pr, err = b.mustRun(ctx, tag("sync-incremental"), "sync", "--progress", "quiet", base, dest)
	if err != nil {
		return err
	}
	if err := src.verify(dest); err != nil {
		return fmt.Errorf("after the incremental sync: %w", err)
	}
	b.step(st, fmt.Sprintf("sync incremental (%d changes)", k), k, changed, pr, setLine(pr.out))
	pr, err = b.mustRun(ctx, tag("sync-audit"), "sync", "--audit", "--progress", "quiet", base, dest)
	if err != nil {
		return err
	}
	b.step(st, "sync --audit", n, src.bytes, pr, setLine(pr.out))
	pr, err = b.run(ctx, tag("validate"), "validate", "--max-docs", "1000000", base)
	if err != nil {
		return err
	}
	note := lastLine(pr.out)
	if pr.code != 0 {
		note = fmt.Sprintf("exit %d: %s", pr.code, note)
	}
	b.step(st, "validate (whole tree)", 0, 0, pr, note)
	serveAfter := srv.hwm()
	if _, err := srv.stop(); err != nil {
		return err
	}
	srv = nil
	b.step(st, "serve during incr./audit/validate", 0, 0, &proc{maxRSS: serveAfter}, "peak RSS of serve while it served them")

	// The update target as a Source keeps itself up to date: serve
	// --watch, one file changed, time until the served Change Lists list
	// the change (event, debounce, scan of the changed path, journal,
	// documents; a full rescan is what `publish` after 1 change costs).
	srv, err = b.serve(ctx, tag("serve-watch"), append([]string{"--watch"}, serveArgs...)...)
	if err != nil {
		return err
	}
	j := n / 2
	loc := base + relPath(j)
	before, err := b.changeListMentions(ctx, base, loc)
	if err != nil {
		return fmt.Errorf("serve --watch: %w", err)
	}
	srv.resetHWM()
	t = time.Now()
	if err := src.change(j, 3); err != nil {
		return err
	}
	for {
		c, err := b.changeListMentions(ctx, base, loc)
		if err != nil {
			return fmt.Errorf("serve --watch: %w", err)
		}
		if c > before {
			break
		}
		if time.Since(t) > time.Minute {
			return fmt.Errorf("serve --watch: the change of %s was not listed within a minute", loc)
		}
		time.Sleep(10 * time.Millisecond)
	}
	el = time.Since(t).Seconds()
	watchHWM := srv.hwm()
	if _, err := srv.stop(); err != nil {
		return err
	}
	srv = nil
	b.step(st, "serve --watch: 1 change listed", 0, 0, &proc{seconds: el, maxRSS: watchHWM},
		"from the file's change to the served Change List naming it (polled every 10 ms); peak RSS of serve meanwhile")
	return nil
}

// changeListMentions counts the occurrences of loc in the Change Lists the
// Source's Change List Index names (every set's, found from the Source
// Description and Capability Lists by their conventional names).
func (b *bench) changeListMentions(ctx context.Context, base, loc string) (int, error) {
	body := func(u string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("GET %s: %s", u, resp.Status)
		}
		bs, err := io.ReadAll(resp.Body)
		return string(bs), err
	}
	index, err := body(base + ".resourcesync/default/changelist.xml")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range locRE.FindAllStringSubmatch(index, -1) {
		cl, err := body(m[1])
		if err != nil {
			return 0, err
		}
		n += strings.Count(cl, "<loc>"+loc+"</loc>")
	}
	return n, nil
}

var locRE = regexp.MustCompile(`<loc>([^<]*)</loc>`)

// large syncs a few large files and compares with the raw download.
func (b *bench) large(ctx context.Context) (*LargeResult, error) {
	n, size := b.cfg.Large, b.cfg.LargeSize
	lr := &LargeResult{Files: n, FileSize: size}
	fmt.Fprintf(b.log, "\n== large files: %d × %s ==\n", n, human(int64(size)))
	root := filepath.Join(b.scratch, "large")
	srcDir := filepath.Join(root, "src")
	rel := func(i int) string { return fmt.Sprintf("f%04d.bin", i) }
	buf := make([]byte, size)
	fill := func(i int) []byte {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], uint64(i))
		copy(seed[8:], "scalebench large")
		rand.NewChaCha8(seed).Read(buf)
		return buf
	}
	if err := os.MkdirAll(srcDir, 0o755); err != nil {
		return nil, err
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(srcDir, rel(i)), fill(i), 0o644); err != nil {
			return nil, err
		}
	}
	total := int64(n) * int64(size)
	syscall.Sync()
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	base := "http://" + addr + "/"
	srv, err := b.serve(ctx, "large-serve", "--addr", addr, "--state", filepath.Join(root, "state"), "--rescan-interval", "0", "--no-dumps", srcDir)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	b.step(&lr.Steps, "serve start (first, --no-dumps)", n, total, &proc{seconds: srv.ready, maxRSS: srv.hwm()}, "scan, hash, publish")

	dl := filepath.Join(root, "download")
	t := time.Now()
	got, err := b.download(ctx, base, n, 4, rel, dl)
	if err != nil {
		return nil, fmt.Errorf("raw download: %w", err)
	}
	if got != total {
		return nil, fmt.Errorf("raw download: %d bytes, want %d", got, total)
	}
	lr.DownloadMBSec = float64(got) / time.Since(t).Seconds() / 1e6
	fmt.Fprintf(b.log, "  baseline: raw download (4 GETs at a time into files) %.1f MB/s\n", lr.DownloadMBSec)
	os.RemoveAll(dl) // a hundred files: does not slow later creation
	syscall.Sync()

	dest := filepath.Join(root, "dest")
	pr, err := b.mustRun(ctx, "large-sync", "sync", "--progress", "quiet", base, dest)
	if err != nil {
		return nil, err
	}
	for i := range n {
		g, err := os.ReadFile(filepath.Join(dest, rel(i)))
		if err != nil {
			return nil, fmt.Errorf("after the sync: %w", err)
		}
		if !bytes.Equal(g, fill(i)) {
			return nil, fmt.Errorf("after the sync: %s differs from the Source", rel(i))
		}
	}
	b.step(&lr.Steps, "sync baseline", n, total, pr, setLine(pr.out)).versus("raw download", lr.DownloadMBSec, "MB")
	if _, err := srv.stop(); err != nil {
		return nil, err
	}
	os.RemoveAll(root)
	syscall.Sync()
	return lr, nil
}

// ---- targets and report ----

func (r *Result) targets() []Target {
	var ts []Target
	rssSteps := map[string]bool{"publish first": true, "publish --no-dumps first": true, "publish again (unchanged rescan)": true,
		"publish after 1 change (update)": true, "sync baseline": true, "sync baseline --no-dump": true, "sync --audit": true, "serve during baseline sync": true, "serve during baseline sync --no-dump": true,
		"serve during incr./audit/validate": true}
	for _, sr := range r.Sizes {
		for _, s := range sr.Steps {
			if s.PeakRSSKiB <= 0 {
				continue
			}
			if rssSteps[s.Name] || strings.HasPrefix(s.Name, "serve start") || strings.HasPrefix(s.Name, "serve restart") || strings.HasPrefix(s.Name, "serve --watch") || strings.HasPrefix(s.Name, "sync incremental") {
				ts = append(ts, Target{What: "peak RSS < 128 MB: " + s.Name, Size: sr.Files, Figure: mb(s.PeakRSSKiB),
					Met: float64(s.PeakRSSKiB)*1024/1e6 < targetRSSMB, Applies: true})
			}
		}
		for _, s := range sr.Steps {
			switch s.Name {
			case "sync baseline", "sync baseline --no-dump":
				what := "small-file baseline sync >= 10,000 files/s"
				if s.Name != "sync baseline" {
					what += " (--no-dump)"
				}
				ts = append(ts, Target{What: what, Size: sr.Files,
					Figure: fmt.Sprintf("%s files/s (%.2fx creation ceiling)", commas(s.FilesPerSec), s.Ratio), Met: s.FilesPerSec >= targetSmallFilesSec, Applies: true})
			case "publish first", "publish --no-dumps first":
				what := "first publish >= 0.8x md5sum"
				if s.Name != "publish first" {
					what += " (--no-dumps)"
				}
				ts = append(ts, Target{What: what, Size: sr.Files,
					Figure: fmt.Sprintf("%.2fx (%s vs %s files/s)", s.Ratio, commas(s.FilesPerSec), commas(sr.Baselines.Md5sumFilesSec)), Met: s.Ratio >= targetPublishRatio, Applies: true})
			case "publish again (unchanged rescan)":
				ts = append(ts, Target{What: "unchanged rescan >= 300,000 files/s", Size: sr.Files,
					Figure: fmt.Sprintf("%s files/s (%.2f s, whole publish command)", commas(s.FilesPerSec), s.Seconds), Met: s.FilesPerSec >= targetRescanFiles, Applies: true})
			case "serve --watch: 1 change listed":
				ts = append(ts, Target{What: "1 changed file -> update <= 2 s (at 1,000,000), serve --watch", Size: sr.Files,
					Figure: fmt.Sprintf("%.2f s (change to served Change List)", s.Seconds), Met: s.Seconds <= targetUpdateSec, Applies: sr.Files >= targetUpdateAtSize})
			case "publish after 1 change (update)":
				ts = append(ts, Target{What: "1 changed file -> update <= 2 s (at 1,000,000)", Size: sr.Files,
					Figure: fmt.Sprintf("%.2f s (whole publish command)", s.Seconds), Met: s.Seconds <= targetUpdateSec, Applies: sr.Files >= targetUpdateAtSize})
			}
		}
	}
	if r.Large != nil {
		for _, s := range r.Large.Steps {
			if s.Name == "sync baseline" {
				ts = append(ts, Target{What: fmt.Sprintf("large files (%d × %s) baseline sync >= 700 MB/s", r.Large.Files, human(int64(r.Large.FileSize))),
					Figure: fmt.Sprintf("%.0f MB/s (%.2fx raw download %.0f MB/s)", s.MBPerSec, s.Ratio, r.Large.DownloadMBSec), Met: s.MBPerSec >= targetLargeMBSec, Applies: true})
			}
		}
	}
	return ts
}

// mdIntro opens the markdown report (BENCHMARKS.md is written by -md).
const mdIntro = `# Benchmarks: the command line at scale

Written by ` + "`go run ./bench/scalebench -md BENCHMARKS.md`" + ` (issue 11). Each
step runs as a child process of the ` + "`resourcesync`" + ` binary built from this
checkout; its wall time and peak RSS (ru_maxrss as GNU time reports it; for
the long-running ` + "`serve`" + `, VmHWM from /proc, reset before the phase it is read for)
are printed beside baselines measured in the same run on the same disk:

- **creation ceiling**: the same N files written with os.WriteFile into a
  fresh directory by 1 and by 2 writers (the faster counts) — what a
  baseline sync of small files can at best reach;
- **md5sum**: ` + "`find | xargs -0 -P2 -n 1000 md5sum`" + ` over the tree, page cache warm
  (best of 2) — what the first publish (md5 + sha-256) is compared with;
- **raw download**: plain HTTP GETs of every file from the running Source
  (small files: 8 at a time into io.Discard; large: 4 at a time into files),
  no hashing, no verification.

Steps per size: generate (deterministic pseudo-random files of 512–1536
bytes, ~1,000 a directory); ` + "`publish`" + ` first (default settings: Resource Dump
included) and ` + "`publish --no-dumps`" + ` first (own state); ` + "`publish`" + ` again with
nothing changed (the unchanged rescan, whole command); ` + "`publish`" + ` after one
changed file (the update target); ` + "`serve`" + ` started on the published state
(time to ready, peak RSS at ready and while it serves each sync); a
baseline ` + "`sync`" + ` (from the Resource Dump the Source offers) and one with
` + "`--no-dump`" + ` (every resource fetched on its own); 1,000 files changed and
` + "`serve`" + ` restarted on its own state (its start-up scan picks them up); an
incremental ` + "`sync`" + `; ` + "`sync --audit`" + `; ` + "`validate`" + ` of the whole tree;
` + "`serve --watch`" + ` and one more changed file: the time until the served Change
Lists name it (the update target as a running Source meets it). After every
sync the destination is checked against the generator (file count, bytes of
a ~10,000-file sample and of every changed file). Then 100 × 10 MiB served
with ` + "`--no-dumps`" + `: baseline sync MB/s against the raw download.

Timings on a shared 2-core machine are noisy; compare ratios within a run.
Peak RSS is stable from run to run.

`

// Markdown is the report: machine, per-size tables, targets.
func (r *Result) Markdown() string {
	var w strings.Builder
	m := r.Machine
	w.WriteString(mdIntro)
	fmt.Fprintf(&w, "## Results (%s)\n\n", m.Date)
	if r.Command != "" {
		fmt.Fprintf(&w, "Command: `%s`\n\n", r.Command)
	}
	fmt.Fprintf(&w, "| machine | |\n|---|---|\n")
	fmt.Fprintf(&w, "| CPU | %s |\n| cores | %d |\n| RAM | %s |\n| kernel | %s |\n| file system of the work directory | %s |\n| Go | %s |\n| date | %s |\n| commit | %s |\n\n",
		m.CPU, m.Cores, m.RAM, m.Kernel, m.FS, m.GoVersion, m.Date, m.Commit)
	if r.RSSFrom != "" {
		fmt.Fprintf(&w, "Peak RSS from: %s.\n\n", r.RSSFrom)
	}
	for _, sr := range r.Sizes {
		bl := sr.Baselines
		fmt.Fprintf(&w, "### %s files (%s)\n\n", commas(float64(sr.Files)), human(sr.Bytes))
		fmt.Fprintf(&w, "Baselines: file-creation ceiling %s files/s (1 writer %s, 2 writers %s); `find | xargs -0 -P2 -n 1000 md5sum` %s files/s (%.0f MB/s); raw download (%d GETs at a time, no hashing) %s files/s (%.0f MB/s).\n\n",
			commas(bl.CreateFilesSec), commas(bl.Create1FilesSec), commas(bl.Create2FilesSec), commas(bl.Md5sumFilesSec), bl.Md5sumMBSec,
			bl.DownloadConcurrency, commas(bl.DownloadFilesSec), bl.DownloadMBSec)
		stepTable(&w, sr.Steps)
	}
	if r.Large != nil {
		fmt.Fprintf(&w, "### large files (%d × %s)\n\nBaseline: raw download (4 GETs at a time into files, no hashing) %.0f MB/s.\n\n", r.Large.Files, human(int64(r.Large.FileSize)), r.Large.DownloadMBSec)
		stepTable(&w, r.Large.Steps)
	}
	if len(r.Targets) > 0 {
		fmt.Fprintf(&w, "### targets (issue 11)\n\n| target | size | figure | |\n|---|---:|---|---|\n")
		for _, t := range r.Targets {
			verdict := "missed"
			if t.Met {
				verdict = "met"
			}
			if !t.Applies {
				verdict += " (target applies at 1,000,000)"
			}
			size := ""
			if t.Size > 0 {
				size = commas(float64(t.Size))
			}
			fmt.Fprintf(&w, "| %s | %s | %s | %s |\n", t.What, size, t.Figure, verdict)
		}
		w.WriteString("\n")
	}
	if r.Error != "" {
		fmt.Fprintf(&w, "**The run failed:** `%s`\n\n", strings.ReplaceAll(r.Error, "\n", " "))
	}
	return w.String()
}

func stepTable(w io.Writer, steps []*Step) {
	fmt.Fprintf(w, "| step | time | files/s | MB/s | peak RSS | CPU | vs baseline | note |\n|---|---:|---:|---:|---:|---:|---|---|\n")
	for _, s := range steps {
		cell := func(ok bool, f string, a ...any) string {
			if !ok {
				return ""
			}
			return fmt.Sprintf(f, a...)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", s.Name,
			cell(s.Seconds > 0, "%.2f s", s.Seconds),
			cell(s.FilesPerSec > 0, "%s", commas(s.FilesPerSec)),
			cell(s.MBPerSec > 0, "%.1f", s.MBPerSec),
			cell(s.PeakRSSKiB > 0, "%s", mb(s.PeakRSSKiB)),
			cell(s.CPUSec > 0, "%.2f s", s.CPUSec),
			cell(s.Versus != "", "%.2fx %s", s.Ratio, s.Versus),
			strings.ReplaceAll(s.Note, "|", "/"))
	}
	fmt.Fprintln(w)
}

// ---- machine ----

func machine(dir string) Machine {
	m := Machine{Cores: runtime.NumCPU(), FS: fsType(dir), Date: time.Now().UTC().Format("2006-01-02 15:04 UTC")}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				m.RAM = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(out))
	} else {
		m.GoVersion = runtime.Version()
	}
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
			m.Commit += " (with uncommitted changes)"
		}
	} else {
		m.Commit = "unknown"
	}
	return m
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

func mb(kib int64) string {
	return fmt.Sprintf("%.0f MB", float64(kib)*1024/1e6)
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
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
