//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tree is a generated collection: file i is relPath(i) with content(i).
// Nothing is kept in memory: the bytes are generated again to verify.
type tree struct {
	dir      string
	n        int
	min, max int // file sizes, inclusive
	seed     uint64
	bytes    int64
}

func (t *tree) rel(i int) string { return fmt.Sprintf("d%03d/f%06d.bin", i/1000, i) }

func (t *tree) content(i int) []byte {
	r := rand.New(rand.NewPCG(t.seed, uint64(i)))
	n := t.min
	if t.max > t.min {
		n += r.IntN(t.max - t.min + 1)
	}
	b := make([]byte, n)
	for j := 0; j < n; j += 8 {
		v := r.Uint64()
		for k := 0; k < 8 && j+k < n; k++ {
			b[j+k] = byte(v >> (8 * k))
		}
	}
	return b
}

// write creates the tree's files below dir (its own dir or a ceiling
// baseline's) with os.WriteFile, by writers goroutines, and returns the
// bytes written.
func (t *tree) write(dir string, writers int) (int64, error) {
	for d := 0; d*1000 < t.n; d++ {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(t.rel(d*1000))), 0o755); err != nil {
			return 0, err
		}
	}
	var total int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sum int64
			for i := w; i < t.n; i += writers {
				b := t.content(i)
				if err := os.WriteFile(filepath.Join(dir, t.rel(i)), b, 0o644); err != nil {
					mu.Lock()
					first = cmp(first, err)
					mu.Unlock()
					return
				}
				sum += int64(len(b))
			}
			mu.Lock()
			total += sum
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total, first
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// verify checks that dest holds exactly the tree's files (hidden names,
// a client's own state, are ignored) with the tree's bytes.
func (t *tree) verify(dest string) (files int, err error) {
	index := make(map[string]int, t.n)
	for i := range t.n {
		index[filepath.FromSlash(t.rel(i))] = i
	}
	var bad []string
	err = filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dest && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		files++
		rel, _ := filepath.Rel(dest, p)
		i, ok := index[rel]
		if !ok {
			bad = append(bad, "extra "+rel)
			return nil
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, t.content(i)) {
			bad = append(bad, "differs "+rel)
		}
		return nil
	})
	if err != nil {
		return files, err
	}
	if files != t.n || len(bad) > 0 {
		return files, fmt.Errorf("%d files, want %d; %d wrong (%s)", files, t.n, len(bad), strings.Join(bad[:min(3, len(bad))], ", "))
	}
	return files, nil
}

// generate writes the tree (2 writers) and measures its file-creation
// ceiling: the same files written into fresh directories by 1 and by 2
// writers, the faster counts. Nothing is deleted (see scalebench: on ext4
// files created soon after a mass deletion cost far more).
func (b *bench) generate(t *tree, bl *Baselines) error {
	st := time.Now()
	total, err := t.write(t.dir, 2)
	if err != nil {
		return err
	}
	t.bytes = total
	syscall.Sync()
	b.logf("  generated %s files (%s) in %.1fs (%s files/s)", commas(float64(t.n)), human(total), time.Since(st).Seconds(), commas(float64(t.n)/time.Since(st).Seconds()))
	for _, w := range []int{1, 2} {
		st := time.Now()
		if _, err := t.write(t.dir+fmt.Sprintf("-ceiling%d", w), w); err != nil {
			return fmt.Errorf("creation ceiling: %w", err)
		}
		rate := float64(t.n) / time.Since(st).Seconds()
		if w == 1 {
			bl.Create1 = rate
		} else {
			bl.Create2 = rate
		}
		bl.Ceiling = max(bl.Ceiling, rate)
		syscall.Sync()
	}
	d, err := md5sum(b.ctx, t.dir)
	if err != nil {
		return err
	}
	bl.Md5sum = float64(t.n) / d.Seconds()
	b.logf("  baselines: creation ceiling %s files/s (1 writer %s, 2 writers %s); md5sum %s files/s",
		commas(bl.Ceiling), commas(bl.Create1), commas(bl.Create2), commas(bl.Md5sum))
	return nil
}

// md5sum runs find | xargs -0 -P2 -n 1000 md5sum over dir twice (page
// cache warm) and returns the shorter time.
func md5sum(ctx context.Context, dir string) (time.Duration, error) {
	best := time.Duration(math.MaxInt64)
	for range 2 {
		t := time.Now()
		cmd := exec.CommandContext(ctx, "sh", "-c", `find "$1" -type f -print0 | xargs -0 -P2 -n 1000 md5sum >/dev/null`, "sh", dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("md5sum baseline: %w: %s", err, out)
		}
		best = min(best, time.Since(t))
	}
	return best, nil
}

// rawDownload GETs every file of t from base, 8 at a time, into
// io.Discard (no hashing, no files) and returns files/s.
func (b *bench) rawDownload(base string, t *tree) (float64, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	next := make(chan int)
	var total int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	st := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				n, err := get(b.ctx, client, base+t.rel(i))
				mu.Lock()
				total += n
				first = cmp(first, err)
				mu.Unlock()
			}
		}()
	}
	for i := range t.n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return 0, fmt.Errorf("raw download: %w", first)
	}
	if total != t.bytes {
		return 0, fmt.Errorf("raw download: %d bytes, want %d", total, t.bytes)
	}
	return float64(t.n) / time.Since(st).Seconds(), nil
}

func get(ctx context.Context, c *http.Client, u string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return io.Copy(io.Discard, resp.Body)
}

// proc is a finished child process.
type proc struct {
	Seconds float64 `json:"seconds"`
	CPU     float64 `json:"cpu_seconds"`
	RSSKiB  int64   `json:"peak_rss_kib"`
	Code    int     `json:"exit_code"`
	out     string
}

// run runs argv in dir (a new directory for the command's own files),
// under GNU time for its peak RSS when there is one, with env added.
func (b *bench) run(name, dir string, env []string, argv ...string) (*proc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf := filepath.Join(b.logs, name)
	stdout, err := os.Create(logf + ".out")
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	stderr, err := os.Create(logf + ".err")
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	cmd := exec.CommandContext(b.ctx, argv[0], argv[1:]...)
	if b.timeBin != "" {
		cmd = exec.CommandContext(b.ctx, b.timeBin, append([]string{"-f", "%M", "-o", logf + ".maxrss"}, argv...)...)
	}
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, stdout, stderr
	cmd.Env = append(os.Environ(), env...)
	st := time.Now()
	err = cmd.Run()
	p := &proc{Seconds: time.Since(st).Seconds()}
	if cmd.ProcessState == nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p.Code = cmd.ProcessState.ExitCode()
	p.CPU = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	if b.timeBin != "" {
		if raw, rerr := os.ReadFile(logf + ".maxrss"); rerr == nil {
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			p.RSSKiB, _ = strconv.ParseInt(lines[len(lines)-1], 10, 64)
		}
	}
	p.out = tail(logf+".out", 1024) + "\n" + tail(logf+".err", 1024)
	if p.Code != 0 {
		return p, fmt.Errorf("%s: exit %d: %s", name, p.Code, strings.TrimSpace(p.out))
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

// findTime returns GNU time if it works: a child's ru_maxrss from wait4
// is never below this process's own peak (see scalebench's findTime).
func findTime(dir string) string {
	const bin = "/usr/bin/time"
	f := filepath.Join(dir, "time-check")
	defer os.Remove(f)
	if err := exec.Command(bin, "-f", "%M", "-o", f, "true").Run(); err != nil {
		return ""
	}
	return bin
}

// server is a running `resourcesync serve`.
type server struct {
	cmd   *exec.Cmd
	base  string
	ready float64
	done  chan error
	kept  bool
}

// serve starts `serve` on a free loopback port and waits until it serves.
func (b *bench) serve(name string, args ...string) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	stderr, err := os.Create(filepath.Join(b.logs, name+".err"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(b.ctx, b.bin, append([]string{"serve", "--addr", addr, "--rescan-interval", "0"}, args...)...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	st := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, base: "http://" + addr + "/", done: make(chan error, 1)}
	ready := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "serving ") {
				select {
				case ready <- struct{}{}:
				default:
				}
			}
		}
		io.Copy(io.Discard, pipe)
		s.done <- cmd.Wait()
		stderr.Close()
	}()
	select {
	case <-ready:
		s.ready = time.Since(st).Seconds()
		return s, nil
	case err := <-s.done:
		return nil, fmt.Errorf("%s exited before serving: %v: %s", name, err, tail(stderr.Name(), 1024))
	}
}

func (s *server) stop() {
	if s == nil || s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// diskUse is the allocated size of the files below dir, in bytes; with
// skipHidden, names starting with '.' (the Source's own state) are left out.
func diskUse(dir string, skipHidden bool) (int64, error) {
	var total int64
	// A file with several names (publish hard-links the current Resource
	// List to its archived generation) is counted once, as du does.
	seen := map[[2]uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if skipHidden && p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if st.Nlink > 1 && !fi.IsDir() {
				id := [2]uint64{uint64(st.Dev), st.Ino}
				if seen[id] {
					return nil
				}
				seen[id] = true
			}
			total += st.Blocks * 512
		}
		return nil
	})
	return total, err
}

func commas(x float64) string {
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
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
