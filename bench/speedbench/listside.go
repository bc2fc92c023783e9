//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// ListSide is the list path against curl (issue 33, "The list path"):
// the same files from one `serve --no-dumps`, fetched by curl --parallel
// and by `resourcesync sync --no-dumps`, Reps times each, alternating, so
// that each sync has a curl run beside it under the same load.
type ListSide struct {
	Files int     `json:"files"`
	Reps  []Rep   `json:"reps"`
	Load  string  `json:"load_average"`
	Ratio float64 `json:"median_ratio_to_curl"` // sync's rate over curl's, median of the reps
	// Profile, with -profile, is the top of `perf report` of the serve
	// process under one more sync: the Source's own per-GET cost.
	Profile string `json:"serve_profile,omitempty"`
}

// Rep is one repetition: curl, then the sync, into fresh directories.
type Rep struct {
	Curl  float64 `json:"curl_seconds"`
	Sync  float64 `json:"sync_seconds"`
	Ratio float64 `json:"ratio"` // curl's time over the sync's: >= 1 is at least curl's rate
	// CPU seconds of the serve process while curl and the sync ran:
	// the Source's own cost of each way of fetching.
	ServeCPUCurl float64 `json:"serve_cpu_seconds_curl"`
	ServeCPUSync float64 `json:"serve_cpu_seconds_sync"`
	SyncCPU      float64 `json:"sync_cpu_seconds"`
}

// procCPU is the user+system CPU seconds of process pid so far (Linux
// /proc; USER_HZ is 100 on every Linux ABI Go supports), or 0.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	var u, k float64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &k)
	return (u + k) / 100
}

func (b *bench) listSide() {
	if b.cfg.Skip["listside"] || b.cfg.NListSide <= 0 {
		return
	}
	n := b.cfg.NListSide
	b.logf("\n== list path: %s files from serve --no-dumps, curl --parallel-max 16 vs sync --no-dumps, %d reps ==", commas(float64(n)), b.cfg.Reps)
	ls, err := b.listSideRun(n)
	if err != nil {
		b.fail("list side by side", err)
	}
	b.res.ListSide = ls
}

func (b *bench) listSideRun(n int) (*ListSide, error) {
	tr := b.newTree("listside", n, 512, 1536, 6)
	t := &tree{dir: filepath.Join(b.scratch, "listside"), n: n, min: 512, max: 1536, seed: 6}
	if _, err := t.write(t.dir, 2); err != nil {
		return nil, err
	}
	syscall.Sync()
	srv, err := b.serve("listside-serve", "--no-dumps", "--state", filepath.Join(b.scratch, "listside-state"), t.dir)
	if err != nil {
		return nil, err
	}
	defer b.release(srv)
	ls := &ListSide{Files: n, Load: loadAvg()}
	workers := b.cfg.SyncWorkers
	for r := range b.cfg.Reps {
		dest := func(k string) string { return filepath.Join(b.scratch, fmt.Sprintf("listside-%s-%d", k, r)) }
		var cfg strings.Builder
		for i := range n {
			fmt.Fprintf(&cfg, "url = \"%s\"\noutput = \"%s\"\n", srv.base+t.rel(i), filepath.Join(dest("curl"), t.rel(i)))
		}
		cfgPath := dest("curl") + ".cfg"
		if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
			return ls, err
		}
		if _, err := exec.LookPath("curl"); err != nil {
			return ls, fmt.Errorf("curl: %w", err)
		}
		pid := srv.cmd.Process.Pid
		cpu0 := procCPU(pid)
		c, err := b.run(fmt.Sprintf("listside-curl-%d", r), dest("curl")+"-cwd", nil, "curl", "-sS", "-f", "--parallel", "--parallel-max", "16", "--create-dirs", "-K", cfgPath)
		if err != nil {
			return ls, err
		}
		if _, err := t.verify(dest("curl")); err != nil {
			return ls, fmt.Errorf("curl DEST: %w", err)
		}
		cpu1 := procCPU(pid)
		syscall.Sync()
		argv := []string{b.bin, "sync", "--progress", "quiet", "--no-dumps"}
		if workers > 0 {
			argv = append(argv, "--workers", fmt.Sprint(workers))
		}
		cpu2 := procCPU(pid)
		s, err := b.run(fmt.Sprintf("listside-sync-%d", r), dest("sync")+"-cwd", nil, append(argv, srv.base, dest("sync"))...)
		if err != nil {
			return ls, err
		}
		cpu3 := procCPU(pid)
		if _, err := t.verify(dest("sync")); err != nil {
			return ls, fmt.Errorf("sync DEST: %w", err)
		}
		syscall.Sync()
		rep := Rep{Curl: c.Seconds, Sync: s.Seconds, Ratio: c.Seconds / s.Seconds, ServeCPUCurl: cpu1 - cpu0, ServeCPUSync: cpu3 - cpu2, SyncCPU: s.CPU}
		ls.Reps = append(ls.Reps, rep)
		b.logf("  rep %d: curl %.2f s (%s files/s; serve CPU %.2f s), sync --no-dumps %.2f s (%s files/s, CPU %.2f s; serve CPU %.2f s): %.2fx curl's rate",
			r+1, c.Seconds, commas(float64(n)/c.Seconds), rep.ServeCPUCurl, s.Seconds, commas(float64(n)/s.Seconds), s.CPU, rep.ServeCPUSync, rep.Ratio)
	}
	rs := make([]float64, len(ls.Reps))
	for i, r := range ls.Reps {
		rs[i] = r.Ratio
	}
	if len(rs) > 0 {
		ls.Ratio = median(rs)
	}
	tr.Steps["serve-ready"] = &Step{proc: proc{Seconds: srv.ready}}
	if b.cfg.Profile {
		ls.Profile = b.perfServe(srv, t)
	}
	return ls, nil
}

// perfServe runs one more sync while perf records the serve process and
// returns the top of the report (or why there is none).
func (b *bench) perfServe(srv *server, t *tree) string {
	if _, err := exec.LookPath("perf"); err != nil {
		return "perf not installed"
	}
	data := filepath.Join(b.scratch, "listside-serve.perf")
	rec := exec.CommandContext(b.ctx, "perf", "record", "-F", "999", "-g", "-o", data, "-p", fmt.Sprint(srv.cmd.Process.Pid))
	rec.Stderr = nil
	if err := rec.Start(); err != nil {
		return "perf record: " + err.Error()
	}
	_, err := b.run("listside-sync-perf", filepath.Join(b.scratch, "listside-perf-cwd"), nil,
		b.bin, "sync", "--progress", "quiet", "--no-dumps", srv.base, filepath.Join(b.scratch, "listside-sync-perf"))
	rec.Process.Signal(syscall.SIGINT)
	rec.Wait()
	if err != nil {
		return "sync: " + err.Error()
	}
	out, err := exec.CommandContext(b.ctx, "perf", "report", "-i", data, "--no-children", "--stdio", "-g", "none", "--percent-limit", "1.5").Output()
	if err != nil {
		return "perf report: " + err.Error()
	}
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			keep = append(keep, strings.TrimRight(l, " "))
		}
	}
	return strings.Join(keep[:min(len(keep), 30)], "\n")
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
