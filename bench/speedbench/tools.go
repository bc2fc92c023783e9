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

// pyResync is py-resync 2.0.1 as found (or not) on this machine.
type pyResync struct {
	dir, python string
	env         []string
	missing     string // why it cannot run; "" when it can
	note        string
}

// findPyResync finds an interpreter that imports py-resync from dir. When
// the only thing missing is defusedxml (which py-resync uses only for its
// parse function), a stub re-exporting xml.etree's parse is put under the
// system's temporary directory for the bench and the report says so.
func findPyResync(dir, python string) *pyResync {
	p := &pyResync{dir: dir}
	if _, err := os.Stat(filepath.Join(dir, "resync-sync")); err != nil {
		p.missing = fmt.Sprintf("not installed (no %s; check out py-resync 2.0.1 there, or give -pyresync)", filepath.Join(dir, "resync-sync"))
		return p
	}
	cands := []string{"python3", "/usr/bin/python3"}
	if python != "" {
		cands = []string{python}
	}
	try := func(py string, path string) (string, bool) {
		cmd := exec.Command(py, "-c", "import resync, resync.client, resync.resource_list_builder; print(resync.__version__)")
		cmd.Env = append(os.Environ(), "PYTHONPATH="+path)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err == nil
	}
	var lastErr string
	for _, py := range cands {
		if _, err := exec.LookPath(py); err != nil {
			continue
		}
		if v, ok := try(py, dir); ok {
			p.python, p.env = py, []string{"PYTHONPATH=" + dir}
			p.note = fmt.Sprintf("py-resync %s from %s with %s", v, dir, py)
			return p
		} else {
			lastErr = v
		}
	}
	if strings.Contains(lastErr, "No module named 'defusedxml'") {
		stub := filepath.Join(os.TempDir(), "speedbench-pystub")
		os.MkdirAll(filepath.Join(stub, "defusedxml"), 0o755)
		os.WriteFile(filepath.Join(stub, "defusedxml", "__init__.py"), nil, 0o644)
		os.WriteFile(filepath.Join(stub, "defusedxml", "ElementTree.py"), []byte("from xml.etree.ElementTree import parse  # speedbench stub\n"), 0o644)
		for _, py := range cands {
			if _, err := exec.LookPath(py); err != nil {
				continue
			}
			path := dir + string(os.PathListSeparator) + stub
			if v, ok := try(py, path); ok {
				p.python, p.env = py, []string{"PYTHONPATH=" + path}
				p.note = fmt.Sprintf("py-resync %s from %s with %s; defusedxml was missing: stubbed in %s with xml.etree's parse", v, dir, py, stub)
				return p
			}
		}
	}
	lines := strings.Split(lastErr, "\n")
	p.missing = "cannot be imported: " + lines[len(lines)-1]
	return p
}

func (p *pyResync) describe() string {
	if p.missing != "" {
		return p.missing
	}
	return p.note
}

func (p *pyResync) sync(base, dest, logf string) []string {
	return []string{p.python, filepath.Join(p.dir, "resync-sync"), "--baseline", "--logfile", logf, base + "=" + dest}
}

// pyRows measures rows (c) and (d).
func (b *bench) pyRows() {
	wc, tc := "baseline of %s small files, whole command, against py-resync 2.0.1", ">= 10x"
	wd, td := "default `publish` (HTML pages on; dumps opt-in, --dumps) of %s files against py-resync's resource-list writer", ">= 3x"
	if b.cfg.Skip["py"] || b.cfg.NPy <= 0 {
		b.res.Rows = append(b.res.Rows, notRun("c", fmt.Sprintf(wc, "N"), tc, "skipped"))
	} else if b.py.missing != "" {
		b.res.Rows = append(b.res.Rows, notRun("c", fmt.Sprintf(wc, commas(float64(b.cfg.NPy))), tc, "py-resync "+b.py.missing))
	} else if row, err := b.rowC(); err != nil {
		b.fail("(c) py-resync sync", err)
		b.res.Rows = append(b.res.Rows, notRun("c", fmt.Sprintf(wc, commas(float64(b.cfg.NPy))), tc, err.Error()))
	} else {
		row.Workload, row.Target = fmt.Sprintf(wc, commas(float64(b.cfg.NPy))), tc
		b.res.Rows = append(b.res.Rows, row)
	}
	if b.cfg.Skip["publish"] || b.cfg.NPublish <= 0 {
		b.res.Rows = append(b.res.Rows, notRun("d", fmt.Sprintf(wd, "N"), td, "skipped"))
	} else if b.py.missing != "" {
		b.res.Rows = append(b.res.Rows, notRun("d", fmt.Sprintf(wd, commas(float64(b.cfg.NPublish))), td, "py-resync "+b.py.missing))
	} else if row, err := b.rowD(); err != nil {
		b.fail("(d) publish against py-resync", err)
		b.res.Rows = append(b.res.Rows, notRun("d", fmt.Sprintf(wd, commas(float64(b.cfg.NPublish))), td, err.Error()))
	} else {
		row.Workload, row.Target = fmt.Sprintf(wd, commas(float64(b.cfg.NPublish))), td
		b.res.Rows = append(b.res.Rows, row)
	}
}

func (b *bench) rowC() (Row, error) {
	b.logf("\n== (c) %s files: sync against py-resync ==", commas(float64(b.cfg.NPy)))
	tr := b.newTree("py", b.cfg.NPy, 512, 1536, 3)
	t := &tree{dir: filepath.Join(b.scratch, "py"), n: tr.Files, min: 512, max: 1536, seed: 3}
	if err := b.generate(t, &tr.Baselines); err != nil {
		return Row{}, err
	}
	tr.Bytes = t.bytes
	srv, err := b.serve("py-serve", "--state", filepath.Join(b.scratch, "py-state"), t.dir)
	if err != nil {
		return Row{}, err
	}
	defer b.release(srv)
	rs, err := b.syncStep(tr, t, "sync", srv.base)
	if err != nil {
		return Row{}, err
	}
	py, err := b.pySync(tr, t, "py-resync", srv.base)
	if err != nil {
		return Row{}, err
	}
	r := py.Seconds / rs.Seconds
	return Row{ID: "c", Ratio: r, Status: verdict(r >= 10), rerun: rs,
		Figure:   fmt.Sprintf("%.2f s (%s files/s), %.1fx faster", rs.Seconds, commas(rs.FilesPerSec), r),
		Baseline: fmt.Sprintf("py-resync %.2f s (%s files/s); ceiling %s files/s", py.Seconds, commas(py.FilesPerSec), commas(tr.Baselines.Ceiling)),
		Note:     "both from the same default `serve`; py-resync with its defaults (no digests checked), resourcesync verifying sha-256"}, nil
}

// pySync runs resync-sync --baseline into a new DEST and verifies it.
func (b *bench) pySync(tr *TreeResult, t *tree, key, base string) (*Step, error) {
	dest := filepath.Join(b.scratch, tr.Name+"-"+key)
	p, err := b.run(tr.Name+"-"+key, filepath.Join(b.scratch, tr.Name+"-"+key+"-cwd"), b.py.env, b.py.sync(base, dest, filepath.Join(b.logs, tr.Name+"-"+key+".log"))...)
	if err != nil {
		return nil, err
	}
	s := &Step{proc: *p, FilesPerSec: float64(t.n) / p.Seconds, Verified: "yes"}
	if _, err := t.verify(dest); err != nil {
		s.Verified = "no: " + err.Error()
		return s, fmt.Errorf("%s: DEST: %v", key, err)
	}
	tr.Steps[key] = s
	syscall.Sync()
	b.logf("  %s: %.2f s, %s files/s, peak RSS %d MiB", key, s.Seconds, commas(s.FilesPerSec), s.RSSKiB>>10)
	return s, nil
}

func (b *bench) rowD() (Row, error) {
	b.logf("\n== (d) publish of %s files against resync-build ==", commas(float64(b.cfg.NPublish)))
	tr := b.newTree("pub", b.cfg.NPublish, 512, 1536, 4)
	t := &tree{dir: filepath.Join(b.scratch, "pub"), n: tr.Files, min: 512, max: 1536, seed: 4}
	if err := b.generate(t, &tr.Baselines); err != nil {
		return Row{}, err
	}
	tr.Bytes = t.bytes
	base := "http://127.0.0.1:1/"
	argv := func(suffix string) []string {
		return []string{b.bin, "publish", "--base-url", base,
			"--state", filepath.Join(b.scratch, "pub-state"+suffix), "--out", filepath.Join(b.scratch, "pub-out"+suffix), t.dir}
	}
	p, err := b.run("pub-publish", b.scratch, nil, argv("")...)
	if err != nil {
		return Row{}, err
	}
	pub := &Step{proc: *p, FilesPerSec: float64(t.n) / p.Seconds, argv: argv("-profile")}
	tr.Steps["publish"] = pub
	syscall.Sync()
	// The opt-in dumps (issue 33 made them so), for the record: what a
	// second read of every file into the ZIPs costs.
	if pd, err := b.run("pub-publish-dumps", b.scratch, nil, append(argv("-dumps")[:2], append([]string{"--dumps"}, argv("-dumps")[2:]...)...)...); err != nil {
		b.logf("  publish --dumps: %v", err)
	} else {
		tr.Steps["publish-dumps"] = &Step{proc: *pd, FilesPerSec: float64(t.n) / pd.Seconds}
		b.logf("  publish --dumps %.2f s (default publish %.2f s)", pd.Seconds, p.Seconds)
		syscall.Sync()
	}
	py, err := b.run("pub-resync-build", filepath.Join(b.scratch, "pub-py-cwd"), b.py.env, b.py.python, filepath.Join(b.py.dir, "resync-build"),
		"--write-resourcelist", "--outfile", filepath.Join(b.scratch, "pub-py-resourcelist.xml"), base+"="+t.dir)
	if err != nil {
		return Row{}, err
	}
	tr.Steps["py-resync-build"] = &Step{proc: *py, FilesPerSec: float64(t.n) / py.Seconds}
	b.logf("  publish %.2f s, resync-build --write-resourcelist %.2f s", p.Seconds, py.Seconds)
	r := py.Seconds / p.Seconds
	return Row{ID: "d", Ratio: r, Status: verdict(r >= 3), rerun: pub,
		Figure:   fmt.Sprintf("%.2f s (%s files/s), %.2fx", p.Seconds, commas(float64(t.n)/p.Seconds), r),
		Baseline: fmt.Sprintf("resync-build --write-resourcelist %.2f s; md5sum %s files/s", py.Seconds, commas(tr.Baselines.Md5sum)),
		Note:     "publish writes md5 and sha-256, Change List, archives and HTML pages (no dump: opt-in since issue 33); resync-build with its defaults (no digests)"}, nil
}

// sideBySide syncs the same files with what users would pick instead.
func (b *bench) sideBySide() {
	if b.cfg.Skip["side"] || b.cfg.NSide <= 0 {
		return
	}
	n := b.cfg.NSide
	b.res.SideN = n
	b.logf("\n== side by side: %s files ==", commas(float64(n)))
	if err := b.side(n); err != nil {
		b.fail("side by side", err)
	}
}

func (b *bench) side(n int) error {
	tr := b.newTree("side", n, 512, 1536, 5)
	t := &tree{dir: filepath.Join(b.scratch, "side"), n: n, min: 512, max: 1536, seed: 5}
	if err := b.generate(t, &tr.Baselines); err != nil {
		return err
	}
	tr.Bytes = t.bytes
	srv, err := b.serve("side-serve", "--state", filepath.Join(b.scratch, "side-state"), t.dir)
	if err != nil {
		return err
	}
	defer b.release(srv)
	if tr.Baselines.Download, err = b.rawDownload(srv.base, t); err != nil {
		return err
	}
	dest := func(k string) string { return filepath.Join(b.scratch, "side-"+k) }
	var urls, curlCfg, aria strings.Builder
	for i := range n {
		u := srv.base + t.rel(i)
		fmt.Fprintln(&urls, u)
		fmt.Fprintf(&curlCfg, "url = \"%s\"\noutput = \"%s\"\n", u, filepath.Join(dest("curl"), t.rel(i)))
		fmt.Fprintf(&aria, "%s\n  out=%s\n", u, t.rel(i))
	}
	files := map[string]string{"urls.txt": urls.String(), "curl.cfg": curlCfg.String(), "aria2.txt": aria.String()}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(b.scratch, "side-"+name), []byte(s), 0o644); err != nil {
			return err
		}
	}
	list := func(name string) string { return filepath.Join(b.scratch, "side-"+name) }
	type cand struct {
		name, bin string
		argv      []string
		env       []string
		missing   string
		show      string
	}
	cands := []cand{
		{name: "resourcesync sync (default: the bulk GET of our serve)", bin: b.bin, argv: []string{b.bin, "sync", "--progress", "quiet", srv.base, dest("rs")}, show: "resourcesync sync BASE DEST"},
		{name: "resourcesync sync --no-dump (every file its own GET)", bin: b.bin, argv: []string{b.bin, "sync", "--progress", "quiet", "--no-dump", srv.base, dest("rs-nodump")}, show: "resourcesync sync --no-dump BASE DEST"},
		{name: "curl --parallel", bin: "curl", argv: []string{"curl", "-sS", "-f", "--parallel", "--parallel-max", "16", "--create-dirs", "-K", list("curl.cfg")}, show: "curl -sS -f --parallel --parallel-max 16 --create-dirs -K LIST (url/output pairs)"},
		{name: "aria2c -j16", bin: "aria2c", argv: []string{"aria2c", "-q", "-j16", "--file-allocation=none", "--auto-file-renaming=false", "-d", dest("aria2c"), "-i", list("aria2.txt")}, show: "aria2c -q -j16 --file-allocation=none -d DEST -i LIST (url + out=)"},
		{name: "wget -i", bin: "wget", argv: []string{"wget", "-q", "-x", "-nH", "-P", dest("wget"), "-i", list("urls.txt")}, show: "wget -q -x -nH -P DEST -i URLS"},
		{name: "py-resync 2.0.1 resync-sync --baseline", missing: b.py.missing, show: "resync-sync --baseline BASE=DEST"},
		{name: "resourcesync sync --dumps (from the Resource Dump)", bin: b.bin, argv: []string{b.bin, "sync", "--progress", "quiet", "--dumps", srv.base, dest("rs-dumps")}, show: "resourcesync sync --dumps BASE DEST"},
	}
	if b.py.missing == "" {
		cands[5].bin = b.py.python
		cands[5].argv = b.py.sync(srv.base, dest("py"), list("py.log"))
		cands[5].env = b.py.env
	}
	var rsSec float64
	for k, c := range cands {
		tool := Tool{Name: c.name, Command: c.show}
		switch {
		case c.missing != "":
			tool.Status = c.missing
		case c.bin == "":
			tool.Status = "not installed"
		default:
			if _, err := exec.LookPath(c.bin); err != nil {
				tool.Status = "not installed"
				break
			}
			key := fmt.Sprintf("side-%d", k)
			p, err := b.run(key, filepath.Join(b.scratch, key+"-cwd"), c.env, c.argv...)
			if p == nil {
				tool.Status, tool.Note = "failed", err.Error()
				break
			}
			s := &Step{proc: *p, FilesPerSec: float64(n) / p.Seconds}
			tool.Step, tool.Status = s, "ok"
			if err != nil {
				tool.Status, tool.Note = "failed", firstLine(err.Error())
			}
			d := c.argv[len(c.argv)-1]
			for i, a := range c.argv {
				if a == "-d" || a == "-P" {
					d = c.argv[i+1]
				}
			}
			switch c.bin {
			case "curl":
				d = dest("curl")
			case b.py.python:
				d = dest("py")
			}
			if _, verr := t.verify(d); verr != nil {
				s.Verified = "no: " + verr.Error()
			} else {
				s.Verified = "yes"
			}
			if k == 0 {
				rsSec = p.Seconds
			}
			if c.bin == "aria2c" && tool.Note == "" {
				tool.Note = "aria2c's rate on many small files was the same with -x1 -s1, --enable-http-pipelining, --summary-interval=0 or --optimize-concurrent-downloads"
			}
			if rsSec > 0 {
				tool.Ratio = p.Seconds / rsSec
			}
			b.logf("  %s: %.2f s, %s files/s, peak RSS %d MiB, verified %s", c.name, p.Seconds, commas(s.FilesPerSec), p.RSSKiB>>10, s.Verified)
			syscall.Sync()
		}
		if tool.Step == nil {
			b.logf("  %s: %s %s", c.name, tool.Status, tool.Note)
		}
		b.res.Side = append(b.res.Side, tool)
	}
	b.res.Rows = append(b.res.Rows, curlRows(b.res.Side, n)...)
	b.syscallsPerFile(t, srv.base)
	return nil
}

// curlRows are issue 33's rows against curl --parallel in the same
// side-by-side run: the default sync at least twice curl's rate, sync
// from the list at least curl's rate.
func curlRows(side []Tool, n int) []Row {
	wi := fmt.Sprintf("%s small files from one default `serve`: `sync` (default: its bulk GET) against `curl --parallel --parallel-max 16`", commas(float64(n)))
	wj := fmt.Sprintf("%s small files from one default `serve`: `sync --no-dump` (every file its own GET) against `curl --parallel --parallel-max 16`", commas(float64(n)))
	ti, tj := ">= 2x curl's rate", ">= curl's rate"
	if len(side) < 3 || side[2].Step == nil || side[2].Step.Verified != "yes" {
		why := "curl did not run"
		if len(side) >= 3 {
			why = "curl: " + side[2].Status + " " + side[2].Note
		}
		return []Row{notRun("i", wi, ti, why), notRun("j", wj, tj, why)}
	}
	curl := side[2].Step
	row := func(id, w, target string, t Tool, want float64) Row {
		if t.Step == nil || t.Step.Verified != "yes" {
			return notRun(id, w, target, t.Status+" "+t.Note)
		}
		r := curl.Seconds / t.Step.Seconds
		return Row{ID: id, Workload: w, Ratio: r / want, Status: verdict(r >= want), Target: target,
			Figure:   fmt.Sprintf("%.2f s, %s files/s (%.2fx curl)", t.Step.Seconds, commas(t.Step.FilesPerSec), r),
			Baseline: fmt.Sprintf("curl %.2f s, %s files/s", curl.Seconds, commas(curl.FilesPerSec)),
			Note:     "curl writes no digests and keeps no state; sync verifies sha-256 and records every file"}
	}
	return []Row{row("i", wi, ti, side[0], 2), row("j", wj, tj, side[1], 1)}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
