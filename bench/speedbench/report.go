//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
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

// components are BENCHMARKS.md's sections that speedbench writes, in
// order, with the rows of each (by ID).
var components = []struct{ key, title, rows string }{
	{"destination", "Destination (`sync`)", "abcij"},
	{"source", "Source (`serve`, `publish`)", "de"},
	{"sdshare", "SDShare", "fg"},
	{"hub", "WebSub hub", "h"},
	{"oai", "OAI-PMH", "k"},
}

// Markdown is the whole report, one section per component (what the run
// prints; -md writes the same blocks into BENCHMARKS.md).
func (r *Result) Markdown() string {
	bl := r.Blocks()
	var b strings.Builder
	b.WriteString("# bench/speedbench\n\n" + bl["run"])
	for _, c := range components {
		b.WriteString("\n## " + c.title + "\n\n" + bl[c.key])
	}
	return b.String()
}

// Blocks renders the run: "run" (machine, command, py-resync, errors), one
// block per component key, and "history" (this run's rows as history
// table lines, newest first).
func (r *Result) Blocks() map[string]string {
	out := map[string]string{}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := r.Machine
	w("Last run: %s. Command: `%s` (%.1f min)\n\n", m.Date, r.Command, r.Seconds/60)
	w("| machine | |\n|---|---|\n| CPU | %s |\n| cores | %d |\n| RAM | %s |\n| kernel | %s |\n| file system of the work directory | %s |\n| Go | %s |\n| commit | %s |\n| load average (1/5/15 min) at start / end | %s / %s |\n",
		m.CPU, m.Cores, m.RAM, m.Kernel, m.FS, m.GoVersion, m.Commit, m.LoadStart, m.LoadEnd)
	w("\npy-resync: %s.\n", r.PyNote)
	if len(r.Errors) > 0 {
		w("\nErrors (their rows say not run):\n\n")
		for _, e := range r.Errors {
			w("- %s\n", strings.ReplaceAll(firstLine(e), "|", "\\|"))
		}
	}
	out["run"] = b.String()

	for _, c := range components {
		b.Reset()
		w("Targets, %s (bench/speedbench, %s):\n\n", r.Machine.Date, shortCommit(r.Machine.Commit))
		w("| | workload | measured | same-run baseline | target | verdict | note |\n|---|---|---|---|---|---|---|\n")
		for _, row := range r.Rows {
			if !strings.Contains(c.rows, row.ID) {
				continue
			}
			v := row.Status
			if v != "not run" {
				v = "**" + v + "**"
			}
			w("| %s | %s | %s | %s | %s | %s | %s |\n", row.ID, row.Workload, row.Figure, row.Baseline, row.Target, v, row.Note)
		}
		switch c.key {
		case "destination":
			r.trees(w, "kb", "b72", "py", "side")
			r.side(w)
			r.listSide(w)
			r.syscalls(w)
		case "source":
			r.trees(w, "pub")
		}
		header := false
		for _, row := range r.Rows {
			if row.Profile == "" || !strings.Contains(c.rows, row.ID) {
				continue
			}
			if !header {
				w("\nWhy the missed rows missed (-profile):\n")
				header = true
			}
			w("\nRow %s, %s:\n\n```\n%s\n```\n", row.ID, row.Workload, row.Profile)
		}
		out[c.key] = b.String()
	}

	b.Reset()
	for _, c := range components {
		for _, row := range r.Rows {
			if !strings.Contains(c.rows, row.ID) || row.Status == "not run" {
				continue
			}
			w("| %s | %s | %s | %s | %s | %s |\n", strings.TrimSuffix(m.Date, " UTC")[:10], shortCommit(m.Commit), c.key, row.Workload, row.Figure, row.Status)
		}
	}
	out["history"] = b.String()
	return out
}

func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

// trees writes the baselines and steps of the named trees.
func (r *Result) trees(w func(string, ...any), names ...string) {
	var ts []*TreeResult
	for _, t := range r.Trees {
		if slices.Contains(names, t.Name) {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return
	}
	w("\n| tree | files | sizes | creation ceiling (1 / 2 writers) | raw download | md5sum |\n|---|---:|---|---|---:|---:|\n")
	for _, t := range ts {
		dl := "—"
		if t.Baselines.Download > 0 {
			dl = commas(t.Baselines.Download) + " files/s"
		}
		w("| %s | %s | %s | %s files/s (%s / %s) | %s | %s files/s |\n", t.Name, commas(float64(t.Files)), t.Sizes,
			commas(t.Baselines.Ceiling), commas(t.Baselines.Create1), commas(t.Baselines.Create2), dl, commas(t.Baselines.Md5sum))
	}
	w("\n| tree | step | wall | files/s | peak RSS | CPU | DEST verified |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, t := range ts {
		for _, k := range []string{"sync-list", "serve-ready", "sync-dump", "sync-default", "sync", "py-resync", "publish", "publish-dumps", "py-resync-build"} {
			s := t.Steps[k]
			if s == nil {
				continue
			}
			w("| %s | %s | %.2f s | %s | %s | %s | %s |\n", t.Name, stepName(t.Name, k), s.Seconds, rate(s.FilesPerSec), rss(s.RSSKiB), cpu(s.CPU), s.Verified)
		}
	}
}

func (r *Result) side(w func(string, ...any)) {
	if len(r.Side) == 0 {
		return
	}
	w("\nSide by side, %s files of 512–1536 bytes from one default `resourcesync serve` ", commas(float64(r.SideN)))
	w("(dumps on; curl, aria2c, wget and py-resync GET the files, the URL list is the Resource List's). ")
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

// listSide is the list path against curl (listside.go).
func (r *Result) listSide(w func(string, ...any)) {
	ls := r.ListSide
	if ls == nil || len(ls.Reps) == 0 {
		return
	}
	w("\nThe list path against curl: %s files of 512–1536 bytes from `serve --no-dumps`; ", commas(float64(ls.Files)))
	w("curl -sS -f --parallel --parallel-max 16 --create-dirs -K LIST (url/output pairs), then `resourcesync sync --no-dumps BASE DEST`, alternating; load average at the start %s. Ratio: curl's time over sync's (>= 1: at least curl's rate); median %.2fx.\n\n", ls.Load, ls.Ratio)
	w("| rep | curl | sync --no-dumps | ratio | sync CPU | serve CPU under curl | serve CPU under sync |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, rp := range ls.Reps {
		w("| %d | %.2f s | %.2f s | %.2fx | %.2f s | %.2f s | %.2f s |\n", i+1, rp.Curl, rp.Sync, rp.Ratio, rp.SyncCPU, rp.ServeCPUCurl, rp.ServeCPUSync)
	}
	if ls.Profile != "" {
		w("\nThe serve process under one more sync (perf record -g; self time):\n\n```\n%s\n```\n", ls.Profile)
	}
}

func (r *Result) syscalls(w func(string, ...any)) {
	if len(r.Syscalls) == 0 {
		return
	}
	w("\nSystem calls per file of the side-by-side tree's sync, run again under `strace -c -f` into a new DEST (all threads; the process's start-up included):\n\n")
	w("| sync | files | calls | calls per file | most frequent, per file |\n|---|---:|---:|---:|---|\n")
	for _, s := range r.Syscalls {
		w("| %s | %s | %s | %.1f | %s |\n", s.Name, commas(float64(s.Files)), commas(float64(s.Total)), s.PerFile, topKinds(s.ByKind, 10))
	}
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
		return "sync --dumps from default `serve` (Resource Dump)"
	case "sync-default":
		return "sync from default `serve` (default: its bulk GET)"
	case "sync":
		return "resourcesync sync (whole command)"
	case "py-resync":
		return "py-resync resync-sync --baseline"
	case "publish":
		return "resourcesync publish (default)"
	case "publish-dumps":
		return "resourcesync publish --dumps (dump ZIPs too)"
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

// historyHeader opens the history table; rows older runs wrote follow
// this run's.
const historyHeader = "| date | commit | component | workload | measured | verdict |\n|---|---|---|---|---|---|\n"

// replaceBlocks puts each block between its markers in the file at path:
//
//	<!-- speedbench:KEY -->
//	...
//	<!-- /speedbench:KEY -->
//
// and the "history" block's lines at the top of the history table (the
// rows already there are kept below them). The file's other text,
// maintained by hand, stays. A marker missing from the file is an error
// naming it, and nothing is written.
func replaceBlocks(path string, blocks map[string]string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(raw)
	keys := make([]string, 0, len(blocks))
	for k := range blocks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var missing []string
	for _, k := range keys {
		open, end := "<!-- speedbench:"+k+" -->\n", "<!-- /speedbench:"+k+" -->"
		i := strings.Index(s, open)
		j := strings.Index(s, end)
		if i < 0 || j < i {
			missing = append(missing, k)
			continue
		}
		body := blocks[k]
		if k == "history" {
			body = historyHeader + body
			for _, l := range strings.SplitAfter(s[i+len(open):j], "\n") {
				if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, historyHeader[:8]) {
					body += l
				}
			}
		}
		s = s[:i+len(open)] + body + s[j:]
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: no <!-- speedbench:KEY --> ... <!-- /speedbench:KEY --> markers for %s; nothing written", path, strings.Join(missing, ", "))
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
