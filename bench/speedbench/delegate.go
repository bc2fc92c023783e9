//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// sdResult is the part of bench/sdsharebench's JSON rows read here.
type sdResult struct {
	Step            string  `json:"step"`
	What            string  `json:"what"`
	Seconds         float64 `json:"seconds"`
	FragmentsPerSec float64 `json:"fragmentsPerSec"`
	Fragments       int     `json:"fragments"`
	PeakRSSKiB      int64   `json:"peakRSSKiB"`
	PeakAnonKiB     int64   `json:"peakAnonKiB"`
	ReloadSec       float64 `json:"reloadSec"`
	Updated         int     `json:"updated"`
	Note            string  `json:"note"`
}

// delegate runs a bench built from this checkout and returns its stdout.
func (b *bench) delegate(root, name string, args ...string) ([]byte, error) {
	exe, err := b.buildBench(root, name)
	if err != nil {
		return nil, err
	}
	b.logf("  %s %s", name, strings.Join(args, " "))
	var out bytes.Buffer
	errLog, err := os.Create(filepath.Join(b.logs, name+".err"))
	if err != nil {
		return nil, err
	}
	defer errLog.Close()
	cmd := exec.CommandContext(b.ctx, exe, args...)
	cmd.Stdout, cmd.Stderr = &out, errLog
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s: %w: %s", name, err, tail(errLog.Name(), 600))
	}
	return out.Bytes(), nil
}

// buildBench builds bench/name from this checkout once and returns it.
func (b *bench) buildBench(root, name string) (string, error) {
	exe := filepath.Join(b.scratch, "bin", name)
	if _, err := os.Stat(exe); err != nil {
		b.logf("building bench/%s ...", name)
		if err := goBuild(b.ctx, root, exe, "./bench/"+name); err != nil {
			return "", err
		}
	}
	return exe, nil
}

// hasFlag tells whether the bench (built from this checkout) has -flag:
// other work may add modes to it.
func (b *bench) hasFlag(root, name, flag string) bool {
	exe, err := b.buildBench(root, name)
	if err != nil {
		return false
	}
	help, _ := exec.CommandContext(b.ctx, exe, "-h").CombinedOutput()
	return strings.Contains(string(help), "  -"+flag+" ") || strings.Contains(string(help), "  -"+flag+"\n")
}

func (b *bench) sdshareE2E(root, tag string, triples, fragments int, profile string) ([]sdResult, error) {
	dir := filepath.Join(b.scratch, "sdshare-"+tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"-steps", "end-to-end", "-virtuoso=false", "-json", "-dir", dir,
		"-triples", strconv.Itoa(triples), "-fragments", strconv.Itoa(fragments), "-small", "15"}
	if profile != "" {
		args = append(args, "-cpuprofile", profile)
	}
	out, err := b.delegate(root, "sdsharebench", args...)
	if err != nil {
		return nil, err
	}
	var rep struct {
		Results []sdResult `json:"results"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return nil, fmt.Errorf("sdsharebench output: %w", err)
	}
	return rep.Results, nil
}

func findSD(rs []sdResult, prefix string) *sdResult {
	for i := range rs {
		if strings.HasPrefix(rs[i].What, prefix) {
			return &rs[i]
		}
	}
	return nil
}

// sdshare measures rows (f) and (g) through bench/sdsharebench's
// end-to-end step (sdshare/server in a process of its own, the client
// loading into the embedded store).
func (b *bench) sdshare(root string) {
	wf := fmt.Sprintf("`sdshare serve`, %s triples", commas(float64(b.cfg.Triples)))
	wf2 := wf + ": a one-resource change"
	wg := fmt.Sprintf("`sdshare sync` into the embedded store, %s fragments", commas(float64(b.cfg.Fragments)))
	if b.cfg.Skip["sdshare"] {
		b.res.Rows = append(b.res.Rows, notRun("f", wf, "peak RSS <= 256 MiB", "skipped"),
			notRun("f", wf2, "in proportion to the change", "skipped"), notRun("g", wg, ">= 5,000 fragments/s", "skipped"))
		return
	}
	b.logf("\n== (f) sdshare serve, %s triples ==", commas(float64(b.cfg.Triples)))
	profF := ""
	if b.cfg.Profile {
		profF = filepath.Join(b.logs, "sdshare-f")
	}
	rs, err := b.sdshareE2E(root, "f", b.cfg.Triples, 1, profF)
	srv := findSD(rs, "end to end: server process")
	if err == nil && srv == nil {
		err = fmt.Errorf("sdsharebench: no server row")
	}
	if err != nil {
		b.fail("(f) sdshare serve", err)
		b.res.Rows = append(b.res.Rows, notRun("f", wf, "peak RSS <= 256 MiB", firstLine(err.Error())),
			notRun("f", wf2, "in proportion to the change", firstLine(err.Error())))
	} else {
		mib := float64(srv.PeakRSSKiB) / 1024
		b.res.Rows = append(b.res.Rows, Row{ID: "f", Workload: wf, Ratio: mib / 256, Status: verdict(mib <= 256),
			Figure:   fmt.Sprintf("peak RSS %.0f MiB (anon %.0f MiB); open %.1f s", mib, float64(srv.PeakAnonKiB)/1024, srv.Seconds),
			Baseline: "—", Target: "peak RSS <= 256 MiB",
			Note: "the server process's VmHWM over the whole run (open, snapshot, reload); it counts the pages of mapped files"})
		r := srv.ReloadSec / srv.Seconds
		b.res.Rows = append(b.res.Rows, Row{ID: "f", Workload: wf2, Ratio: r, Status: verdict(srv.Updated == 1 && r <= 0.1),
			Figure:   fmt.Sprintf("%.3f s (%d update journalled)", srv.ReloadSec, srv.Updated),
			Baseline: fmt.Sprintf("open of the whole collection %.1f s", srv.Seconds), Target: "in proportion to the change (here: <= 0.1x the open)",
			// One file: the loader cannot tell which of its bytes changed,
			// so it parses, merges and compares it whole
			// (sdshare/server load.go, affected); a directory collection's
			// small change is an overlay (bench/sdsharebench server-dir).
			Note: "a one-file collection, parsed, merged and compared whole at a reload; " + srv.Note})
		if last := &b.res.Rows[len(b.res.Rows)-1]; profF != "" && last.Status == "missed" {
			last.Profile = "the server process, the reload alone: " + b.pprofTop(profF+"-end-to-end-reload-server.pprof")
		}
		b.logf("  server: open %.1f s, peak RSS %.0f MiB, one-resource reload %.3f s", srv.Seconds, mib, srv.ReloadSec)
	}
	b.logf("\n== (g) sdshare sync, %s fragments ==", commas(float64(b.cfg.Fragments)))
	prof := ""
	if b.cfg.Profile {
		prof = filepath.Join(b.logs, "sdshare-g")
	}
	rs, err = b.sdshareE2E(root, "g", b.cfg.FragTriples, b.cfg.Fragments, prof)
	cl := findSD(rs, "end to end: client fragments")
	if err == nil && cl == nil {
		err = fmt.Errorf("sdsharebench: no client fragments row")
	}
	if err != nil {
		b.fail("(g) sdshare sync", err)
		b.res.Rows = append(b.res.Rows, notRun("g", wg, ">= 5,000 fragments/s", firstLine(err.Error())))
		return
	}
	baseline := "—"
	if gets := findSD(rs, "end to end: baseline, client fragments by one GET each"); gets != nil {
		baseline = fmt.Sprintf("one GET a fragment (the same client, NoBulk): %s fragments/s (%.2fx)", commas(gets.FragmentsPerSec), cl.FragmentsPerSec/max(gets.FragmentsPerSec, 1e-9))
	}
	b.res.Rows = append(b.res.Rows, Row{ID: "g", Workload: wg, Ratio: cl.FragmentsPerSec / 5000, Status: verdict(cl.FragmentsPerSec >= 5000),
		Figure:   fmt.Sprintf("%s fragments/s (%d in %.2f s)", commas(cl.FragmentsPerSec), cl.Fragments, cl.Seconds),
		Baseline: baseline, Target: ">= 5,000 fragments/s, crash-safe",
		Note: fmt.Sprintf("sdshare/client reading the feeds of sdshare/server (%s triples) into boltstore; %s", commas(float64(b.cfg.FragTriples)), cl.Note)})
	if last := &b.res.Rows[len(b.res.Rows)-1]; prof != "" && last.Status == "missed" {
		last.Profile = "the client process, fragments phase: " + b.pprofTop(prof+"-end-to-end-fragments.pprof") +
			"\n\nthe server process, fragments phase: " + b.pprofTop(prof+"-end-to-end-fragments-server.pprof")
	}
	b.logf("  client: %s fragments/s", commas(cl.FragmentsPerSec))
}

// hub measures row (h) through bench/hubbench (embedded store, one node).
func (b *bench) hub(root string) {
	w := fmt.Sprintf("hub fan-out, %s subscribers, one notification", commas(float64(b.cfg.Subs)))
	target := "last delivery <= 1 s, >= 50,000 deliveries/s"
	if b.cfg.Skip["hub"] {
		b.res.Rows = append(b.res.Rows, notRun("h", w, target, "skipped"))
		return
	}
	b.logf("\n== (h) hub fan-out, %s subscribers ==", commas(float64(b.cfg.Subs)))
	args := []string{"-subs", strconv.Itoa(b.cfg.Subs), "-notes", strconv.Itoa(b.cfg.Notes), "-stores", "bolt"}
	if b.hasFlag(root, "hubbench", "preload") {
		// Subscribing 10,000 callbacks with their verification GETs takes
		// minutes and is not what the row measures.
		args = append(args, "-preload")
	}
	prof := ""
	if b.cfg.Profile && b.hasFlag(root, "hubbench", "cpuprofile") {
		prof = filepath.Join(b.logs, "hub.pprof")
		args = append(args, "-cpuprofile", prof)
	}
	out, err := b.delegate(root, "hubbench", args...)
	var h hubRow
	if err == nil {
		h, err = parseHub(string(out))
	}
	if err != nil {
		b.fail("(h) hub", err)
		b.res.Rows = append(b.res.Rows, notRun("h", w, target, firstLine(err.Error())))
		return
	}
	one := float64(b.cfg.Subs) / h.last.Seconds()
	row := Row{ID: "h", Workload: w, Ratio: one / 50000, Status: verdict(h.last <= time.Second && one >= 50000),
		Figure:   fmt.Sprintf("last delivery %v (%s deliveries/s); sustained %s deliveries/s over %d notifications", h.last.Round(time.Millisecond), commas(one), commas(h.sustained), b.cfg.Notes),
		Baseline: "—", Target: target, Note: "bench/hubbench " + strings.Join(args, " ") + ": embedded store, one node, loopback subscriber server"}
	if h.baseline != "" {
		row.Baseline = "plain client, same POSTs: " + h.baseline
	}
	if prof != "" && row.Status == "missed" {
		row.Profile = b.pprofTop(prof)
	}
	b.res.Rows = append(b.res.Rows, row)
	b.logf("  last delivery %v, sustained %s deliveries/s", h.last, commas(h.sustained))
}

// hubRow is what is read from hubbench's table.
type hubRow struct {
	last      time.Duration
	sustained float64
	baseline  string // its same-run baseline cell, if it has one
}

// parseHub reads the bolt row of hubbench's markdown table: the last
// delivery of the one-notification column and the sustained rate, found by
// their headers.
func parseHub(md string) (hubRow, error) {
	cells := func(l string) []string {
		l = strings.Trim(strings.TrimSpace(l), "|")
		cs := strings.Split(l, "|")
		for i := range cs {
			cs[i] = strings.TrimSpace(cs[i])
		}
		return cs
	}
	lastCol, rateCol, baseCol := -1, -1, -1
	for _, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		cs := cells(l)
		if lastCol < 0 {
			for i, c := range cs {
				if strings.Contains(c, "last delivery") {
					lastCol = i
				}
				if strings.Contains(c, "sustained") {
					rateCol = i
				}
				if strings.HasPrefix(c, "baseline") {
					baseCol = i
				}
			}
			continue
		}
		if cs[0] != "bolt" || len(cs) <= max(lastCol, rateCol) || rateCol < 0 {
			continue
		}
		var h hubRow
		parts := strings.Split(cs[lastCol], "/")
		var err error
		if h.last, err = time.ParseDuration(strings.TrimSpace(parts[len(parts)-1])); err != nil || h.last <= 0 {
			return h, fmt.Errorf("hubbench last delivery %q: %v", cs[lastCol], err)
		}
		if h.sustained, err = strconv.ParseFloat(strings.ReplaceAll(cs[rateCol], ",", ""), 64); err != nil {
			return h, fmt.Errorf("hubbench sustained rate %q: %w", cs[rateCol], err)
		}
		if baseCol >= 0 && baseCol < len(cs) {
			h.baseline = cs[baseCol]
		}
		return h, nil
	}
	return hubRow{}, fmt.Errorf("hubbench: no bolt row in its table:\n%s", md)
}

// profileMissed runs the command of each missed row that has one again
// under strace -c -f and keeps the top of its summary in the row. The
// delegated rows (sdshare sync, hub) carry their CPU profile's top already.
func (b *bench) profileMissed() {
	if _, err := exec.LookPath("strace"); err != nil {
		b.logf("-profile: strace is not installed: the missed rows have no syscall profile")
		return
	}
	for i := range b.res.Rows {
		r := &b.res.Rows[i]
		if r.Status != "missed" || r.rerun == nil || len(r.rerun.argv) == 0 {
			continue
		}
		name := fmt.Sprintf("profile-%s-%d", r.ID, i)
		out := filepath.Join(b.logs, name+".strace")
		b.logf("profiling row %s: strace -c -f %s ...", r.ID, strings.Join(r.rerun.argv[1:], " "))
		argv := append([]string{"strace", "-f", "-c", "-o", out}, r.rerun.argv...)
		p, err := b.run(name, filepath.Join(b.scratch, name+"-cwd"), r.rerun.env, argv...)
		if err != nil {
			r.Profile = "strace run failed: " + firstLine(err.Error())
			continue
		}
		top, _ := os.ReadFile(out)
		lines := strings.Split(strings.TrimSpace(string(top)), "\n")
		r.Profile = fmt.Sprintf("strace -c -f of `%s` run again (%.2f s under strace, CPU %.2f s):\n%s",
			strings.Join(append([]string{"resourcesync"}, r.rerun.argv[1:]...), " "), p.Seconds, p.CPU, strings.Join(lines[:min(14, len(lines))], "\n"))
	}
}

// pprofTop is the top of a CPU profile, or why there is none.
func (b *bench) pprofTop(path string) string {
	out, err := exec.CommandContext(b.ctx, "go", "tool", "pprof", "-top", "-nodecount=15", path).CombinedOutput()
	if err != nil {
		return "no CPU profile: " + firstLine(string(out))
	}
	return "CPU profile " + filepath.Base(path) + " (go tool pprof -top):\n" + strings.TrimSpace(string(out))
}
