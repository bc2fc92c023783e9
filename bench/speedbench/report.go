//go:build linux

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

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
	LoadStart string `json:"load_average_start"`
	LoadEnd   string `json:"load_average_end"`
}

func machine(dir string) Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), LoadStart: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		m.RAM = human(int64(si.Totalram) * int64(si.Unit))
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil {
		switch st.Type {
		case unix.EXT4_SUPER_MAGIC:
			m.FS = "ext4"
		case unix.TMPFS_MAGIC:
			m.FS = "tmpfs"
		case unix.XFS_SUPER_MAGIC:
			m.FS = "xfs"
		case unix.BTRFS_SUPER_MAGIC:
			m.FS = "btrfs"
		case unix.OVERLAYFS_SUPER_MAGIC:
			m.FS = "overlayfs"
		default:
			m.FS = fmt.Sprintf("0x%x", st.Type)
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// sectionTitle starts the report's section in BENCHMARKS.md.
const sectionTitle = "# Issue 23: close to the physical limit (bench/speedbench)"

// Markdown is the report as a top-level section.
func (r *Result) Markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("%s\n\n", sectionTitle)
	w(`Written by bench/speedbench (issue 23): every row of the issue's table in one run,
each as met or missed beside a baseline measured in the same run on the same
disk. Each step is a child process (the resourcesync binary, py-resync, curl,
aria2c, wget, bench/sdsharebench, bench/hubbench); wall time around it, peak RSS
from GNU time -f %%M, CPU from wait4. Baselines per generated tree: the
**creation ceiling** (the same files written with os.WriteFile into a fresh
directory by 1 and 2 writers, the faster counts), the **raw download** (plain
GETs of every file from the running Source, 8 at a time, into io.Discard) and
**md5sum** (find | xargs -0 -P2 -n 1000 md5sum, page cache warm, best of 2).
Every sync's DEST is checked file by file against the generator (count and
bytes). The machine has 2 cores, often shared: compare the ratios within a run.

`)
	w("## Results (%s)\n\n", r.Machine.Date)
	w("Command: `%s` (%.1f min)\n\n", r.Command, r.Seconds/60)
	m := r.Machine
	w("| machine | |\n|---|---|\n| CPU | %s |\n| cores | %d |\n| RAM | %s |\n| kernel | %s |\n| file system of the work directory | %s |\n| Go | %s |\n| commit | %s |\n| load average (1/5/15 min) at start / end | %s / %s |\n\n",
		m.CPU, m.Cores, m.RAM, m.Kernel, m.FS, m.GoVersion, m.Commit, m.LoadStart, m.LoadEnd)

	w("### Issue 23's targets\n\n| | workload | measured | same-run baseline | target | verdict | note |\n|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		v := row.Status
		if v != "not run" {
			v = "**" + v + "**"
		}
		w("| %s | %s | %s | %s | %s | %s | %s |\n", row.ID, row.Workload, row.Figure, row.Baseline, row.Target, v, row.Note)
	}
	w("\n### Baselines and steps\n\n| tree | files | sizes | creation ceiling (1 / 2 writers) | raw download | md5sum |\n|---|---:|---|---|---:|---:|\n")
	for _, t := range r.Trees {
		dl := "—"
		if t.Baselines.Download > 0 {
			dl = commas(t.Baselines.Download) + " files/s"
		}
		w("| %s | %s | %s | %s files/s (%s / %s) | %s | %s files/s |\n", t.Name, commas(float64(t.Files)), t.Sizes,
			commas(t.Baselines.Ceiling), commas(t.Baselines.Create1), commas(t.Baselines.Create2), dl, commas(t.Baselines.Md5sum))
	}
	w("\n| tree | step | wall | files/s | peak RSS | CPU | DEST verified |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, t := range r.Trees {
		for _, k := range []string{"sync-list", "serve-ready", "sync-dump", "sync", "py-resync", "publish", "py-resync-build"} {
			s := t.Steps[k]
			if s == nil {
				continue
			}
			w("| %s | %s | %.2f s | %s | %s | %s | %s |\n", t.Name, stepName(t.Name, k), s.Seconds, rate(s.FilesPerSec), rss(s.RSSKiB), cpu(s.CPU), s.Verified)
		}
	}
	if len(r.Side) > 0 {
		w("\n### Side by side: %s files of 512–1536 bytes from `resourcesync serve`\n\n", commas(float64(r.SideN)))
		w("The same files from one default `serve` (dumps on; curl, aria2c, wget and py-resync GET the files, the URL list is the Resource List's). ")
		w("\"× resourcesync\" is the tool's wall time over `resourcesync sync`'s.\n\n")
		w("| tool | command | wall | files/s | peak RSS | CPU | × resourcesync | DEST verified (count + bytes) | note |\n|---|---|---:|---:|---:|---:|---:|---|---|\n")
		for _, t := range r.Side {
			if t.Step == nil {
				w("| %s | `%s` | %s | | | | | | %s |\n", t.Name, t.Command, t.Status, t.Note)
				continue
			}
			s := t.Step
			w("| %s | `%s` | %.2f s | %s | %s | %s | %.2f | %s | %s |\n", t.Name, t.Command, s.Seconds, rate(s.FilesPerSec), rss(s.RSSKiB), cpu(s.CPU), t.Ratio, s.Verified, t.Note)
		}
	}
	if ls := r.ListSide; ls != nil && len(ls.Reps) > 0 {
		w("\n### The list path against curl: %s files of 512–1536 bytes from `serve --no-dumps`\n\n", commas(float64(ls.Files)))
		w("curl -sS -f --parallel --parallel-max 16 --create-dirs -K LIST (url/output pairs), then `resourcesync sync --no-dumps BASE DEST`, alternating; load average at the start %s. Ratio: curl's time over sync's (>= 1: at least curl's rate); median %.2fx.\n\n", ls.Load, ls.Ratio)
		w("| rep | curl | sync --no-dumps | ratio | sync CPU | serve CPU under curl | serve CPU under sync |\n|---:|---:|---:|---:|---:|---:|---:|\n")
		for i, rp := range ls.Reps {
			w("| %d | %.2f s | %.2f s | %.2fx | %.2f s | %.2f s | %.2f s |\n", i+1, rp.Curl, rp.Sync, rp.Ratio, rp.SyncCPU, rp.ServeCPUCurl, rp.ServeCPUSync)
		}
		if ls.Profile != "" {
			w("\nThe serve process under one more sync (perf record -g; self time):\n\n```\n%s\n```\n", ls.Profile)
		}
	}
	header := false
	for _, row := range r.Rows {
		if row.Profile == "" {
			continue
		}
		if !header {
			w("\n### Why the missed rows missed (-profile)\n")
			header = true
		}
		w("\nRow %s, %s:\n\n```\n%s\n```\n", row.ID, row.Workload, row.Profile)
	}
	w("\npy-resync: %s.\n", r.PyNote)
	if len(r.Errors) > 0 {
		w("\nErrors (their rows say not run):\n\n")
		for _, e := range r.Errors {
			w("- %s\n", strings.ReplaceAll(firstLine(e), "|", "\\|"))
		}
	}
	return b.String()
}

func stepName(tree, k string) string {
	switch k {
	case "sync-list":
		if tree == "kb" {
			return "sync from `serve --no-dumps` (Resource List)"
		}
		return "sync --no-dump (Resource List)"
	case "serve-ready":
		return "default serve: time to ready"
	case "sync-dump":
		return "sync from default `serve` (Resource Dump)"
	case "sync":
		return "resourcesync sync (whole command)"
	case "py-resync":
		return "py-resync resync-sync --baseline"
	case "publish":
		return "resourcesync publish (default)"
	case "py-resync-build":
		return "py-resync resync-build --write-resourcelist"
	}
	return k
}

func rate(x float64) string {
	if x == 0 {
		return ""
	}
	return commas(x)
}

func rss(kib int64) string {
	if kib <= 0 {
		return ""
	}
	return fmt.Sprintf("%d MiB", kib>>10)
}

func cpu(s float64) string {
	if s == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f s", s)
}

// replaceSection puts section in place of the file's "# Issue 23:" section
// (up to the next top-level heading), or appends it; the rest is kept.
func replaceSection(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s := string(old)
	start := -1
	if strings.HasPrefix(s, "# Issue 23:") {
		start = 0
	} else if i := strings.Index(s, "\n# Issue 23:"); i >= 0 {
		start = i + 1
	}
	var out string
	switch {
	case start < 0:
		if s != "" && !strings.HasSuffix(s, "\n\n") {
			s = strings.TrimRight(s, "\n") + "\n\n"
		}
		out = s + section
	default:
		rest := ""
		if j := strings.Index(s[start+1:], "\n# "); j >= 0 {
			rest = "\n" + s[start+1+j+1:]
		}
		out = s[:start] + section + rest
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
