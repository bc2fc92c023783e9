//go:build linux

// Command speedbench measures every row of issues 23's and 33's tables in
// one run, on one disk, each beside a baseline measured in the same run,
// and reports each as met or missed, one section per component of
// BENCHMARKS.md (Destination, Source, SDShare, hub, OAI-PMH):
//
//	go run ./bench/speedbench -md BENCHMARKS.md
//	go run ./bench/speedbench -quick -json
//
// Each step is a child process of the resourcesync binary built from this
// checkout (or -bin); wall time around it, peak RSS from GNU time
// (/usr/bin/time -f %M), CPU from wait4. The rows:
//
//   - (a) baseline sync of -n-list small files (512–1536 bytes) from
//     `serve --no-dumps` (every file its own GET), against the
//     file-creation ceiling (the same files written with os.WriteFile into
//     a fresh directory by 1 and 2 writers, the faster counts): >= 0.3x;
//   - (b) baseline sync from the default `serve` (Resource Dump, forced by
//     `sync --dumps`: the default sync takes serve's bulk GET, also
//     measured and noted) of the same
//     tree and of a tree of -n-dump 72-byte files: >= 0.5x the ceiling of
//     its own tree and not slower than the list path on the same tree ((a),
//     or `sync --no-dump` from the same Source for the 72-byte tree);
//   - (c) -n-py files, whole `sync` command against py-resync 2.0.1's
//     resync-sync --baseline from the same Source: >= 10x;
//   - (d) default `publish` of -n-publish files against py-resync's
//     resync-build --write-resourcelist: >= 3x;
//   - (e) `serve DIR` (default settings) disk use of DIR/.resourcesync as a
//     share of DIR, measured after it served (b)'s sync: <= 5%;
//   - (f) and (g) delegated to bench/sdsharebench (its end-to-end step):
//     sdshare/server on -triples triples, peak RSS <= 256 MiB, time to open,
//     and the reload after one changed resource; the client applying
//     -fragments fragments from the feeds into the embedded store:
//     >= 5,000 fragments/s;
//   - (h) delegated to bench/hubbench: -subs subscribers on the embedded
//     store, last delivery of one notification <= 1 s, sustained
//     >= 50,000 deliveries/s;
//   - (i) and (j) from the side-by-side below: the default `sync` (from
//     serve: its bulk GET) at least 2x curl --parallel's rate, `sync
//     --no-dump` at least curl's;
//   - (k) delegated to bench/oaibench: OAI-PMH harvest + publish of -oai-n
//     records, >= 5,000 records/s, beside the raw ListRecords download.
//
// Beside them the same-run baselines for each tree: the creation ceiling,
// the raw download (plain GETs, 8 at a time, into io.Discard, from the
// running Source) and md5sum over the tree (find | xargs -P2 md5sum, page
// cache warm, best of 2). Then a side-by-side on -n-side files served by
// `serve` (its default: dumps on; the files are the same URLs either
// way): curl --parallel --parallel-max 16, aria2c -j16 -i, wget -i, py-resync
// and resourcesync sync (default: serve's bulk GET; --dumps: from the dump;
// --no-dump: from the list),
// each with wall time, files/s, peak RSS, CPU and whether DEST holds
// exactly the files with their bytes. A tool that is not installed is
// reported as such.
//
// No generated tree is deleted before the end of the run (on ext4 files
// created soon after a mass deletion cost far more, see bench/syncbench);
// leave some minutes between runs. The side-by-side tree's syncs (from the
// dump and --no-dump) also run under strace -c -f, for the system calls
// per file of the write path. With -profile each missed row says why:
// its resourcesync command run again under strace -c -f (against the same
// Source, kept serving for it), or the top of the CPU profile of the
// delegated bench (sdshare sync; the hub when bench/hubbench has
// -cpuprofile). -md FILE rewrites the blocks between FILE's
// <!-- speedbench:NAME --> markers (run, destination, source, sdshare,
// hub, oai) and adds the run's rows to its history block, keeping
// everything else; -json prints the result as JSON on stdout.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Config is one run.
type Config struct {
	NList, NDump, NPy, NPublish, NSide int
	NListSide, Reps, SyncWorkers       int
	Triples, Fragments, FragTriples    int
	Subs, Notes                        int
	NOAI                               int
	Workdir, Bin, PyResync, Python     string
	Skip                               map[string]bool
	Keep, Profile                      bool
	Command                            string
	Log                                io.Writer
}

// Baselines are measured on one tree, in files/s.
type Baselines struct {
	Ceiling  float64 `json:"creation_ceiling_files_per_sec"`
	Create1  float64 `json:"creation_1_writer_files_per_sec"`
	Create2  float64 `json:"creation_2_writers_files_per_sec"`
	Md5sum   float64 `json:"md5sum_files_per_sec"`
	Download float64 `json:"raw_download_files_per_sec,omitempty"`
}

// TreeResult is a generated tree and what was measured on it.
type TreeResult struct {
	Name      string           `json:"name"`
	Files     int              `json:"files"`
	Bytes     int64            `json:"bytes"`
	Sizes     string           `json:"file_sizes"`
	Baselines Baselines        `json:"baselines"`
	Steps     map[string]*Step `json:"steps"`
}

// Step is one measured command.
type Step struct {
	proc
	FilesPerSec float64 `json:"files_per_sec,omitempty"`
	Verified    string  `json:"verified,omitempty"`
	Note        string  `json:"note,omitempty"`
	// argv and env run the step again for a profile (its DEST, state and
	// output directories are the arguments ending in "-profile" then).
	argv, env []string
}

// Row is one row of the table.
type Row struct {
	ID       string  `json:"id"`
	Workload string  `json:"workload"`
	Figure   string  `json:"figure"`
	Baseline string  `json:"baseline"`
	Target   string  `json:"target"`
	Ratio    float64 `json:"ratio,omitempty"`
	Status   string  `json:"status"` // met, missed, not run
	Note     string  `json:"note,omitempty"`
	// Profile, with -profile, is why a missed row missed: the top of
	// strace -c -f of its command run again, or of its CPU profile.
	Profile string `json:"profile,omitempty"`
	rerun   *Step
}

// Tool is one row of the side-by-side table.
type Tool struct {
	Name    string  `json:"name"`
	Command string  `json:"command"`
	Status  string  `json:"status"` // ok, failed, not installed, skipped
	Step    *Step   `json:"step,omitempty"`
	Ratio   float64 `json:"ratio_to_resourcesync,omitempty"`
	Note    string  `json:"note,omitempty"`
}

// Result is the outcome of Run.
type Result struct {
	Command  string        `json:"command"`
	Machine  Machine       `json:"machine"`
	Scratch  string        `json:"scratch"`
	Trees    []*TreeResult `json:"trees"`
	Rows     []Row         `json:"rows"`
	Side     []Tool        `json:"side_by_side"`
	ListSide *ListSide     `json:"list_side_by_side,omitempty"`
	SideN    int           `json:"side_by_side_files"`
	PyNote   string        `json:"py_resync,omitempty"`
	Seconds  float64       `json:"seconds"`
	Errors   []string      `json:"errors,omitempty"`
	// Syscalls are the side-by-side tree's syncs run again under strace -c.
	Syscalls []SyscallStep `json:"syscalls_per_file,omitempty"`
}

func main() {
	var cfg Config
	flag.IntVar(&cfg.NList, "n-list", 200000, "(a) files of the Resource List baseline (512–1536 bytes), also (b)'s first tree and (e)'s DIR")
	flag.IntVar(&cfg.NDump, "n-dump", 200000, "(b) 72-byte files of the Resource Dump baseline")
	flag.IntVar(&cfg.NPy, "n-py", 5000, "(c) files of the whole-command comparison with py-resync")
	flag.IntVar(&cfg.NPublish, "n-publish", 20000, "(d) files of the publish comparison with py-resync's list writer")
	flag.IntVar(&cfg.NSide, "n-side", 10000, "files of the side-by-side with curl, aria2c, wget, py-resync")
	flag.IntVar(&cfg.NListSide, "n-listside", 20000, "files of the list path against curl (serve --no-dumps; issue 33)")
	flag.IntVar(&cfg.Reps, "reps", 3, "repetitions of the list path against curl")
	flag.IntVar(&cfg.SyncWorkers, "sync-workers", 0, "--workers of the list path's sync (0: its default)")
	flag.IntVar(&cfg.Triples, "triples", 1000000, "(f) triples served by sdshare/server (bench/sdsharebench)")
	flag.IntVar(&cfg.Fragments, "fragments", 10000, "(g) fragments the sdshare client applies (bench/sdsharebench)")
	flag.IntVar(&cfg.FragTriples, "fragment-triples", 150000, "(g) triples of the collection the fragments change")
	flag.IntVar(&cfg.Subs, "subs", 10000, "(h) hub subscribers (bench/hubbench)")
	flag.IntVar(&cfg.Notes, "notes", 5, "(h) notifications for the sustained rate")
	flag.IntVar(&cfg.NOAI, "oai-n", 100000, "(k) OAI-PMH records harvested (bench/oaibench)")
	flag.StringVar(&cfg.Workdir, "workdir", ".speedbench", "work directory on the disk to measure (not a tmpfs); a run-* directory is made in it")
	flag.StringVar(&cfg.Bin, "bin", "", "resourcesync binary to measure (default: build ./cmd/resourcesync)")
	flag.StringVar(&cfg.PyResync, "pyresync", "/tmp/pyresync", "a checkout of py-resync 2.0.1 (its resync-sync and resync-build scripts); missing: its rows say not run")
	flag.StringVar(&cfg.Python, "python", "", "Python 3 interpreter for py-resync (default: the first of python3, /usr/bin/python3 that imports it)")
	skip := flag.String("skip", "", "comma-separated parts to leave out: list, dump72, py, publish, side, listside, sdshare, hub, oai")
	quick := flag.Bool("quick", false, "a smoke test with small sizes (2,000 files, 20,000 triples, 200 subscribers, ...)")
	md := flag.String("md", "", "replace the speedbench blocks of `FILE` (BENCHMARKS.md: one per component, between <!-- speedbench:NAME --> markers) with the report, and add the run to its history table")
	asJSON := flag.Bool("json", false, "print the result as JSON on stdout (progress goes to stderr)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the work directory")
	flag.BoolVar(&cfg.Profile, "profile", false, "for each missed row, say why: run its command again under strace -c -f (resourcesync rows) or with the delegated bench's -cpuprofile (sdshare sync, hub), and put the top lines in the report")
	flag.Parse()
	if *quick {
		cfg.NList, cfg.NDump, cfg.NPy, cfg.NPublish, cfg.NSide, cfg.NListSide, cfg.Reps = 2000, 2000, 500, 1000, 1000, 1000, 1
		cfg.Triples, cfg.Fragments, cfg.FragTriples, cfg.Subs, cfg.Notes = 20000, 500, 15000, 200, 3
		cfg.NOAI = 2000
	}
	cfg.Skip = map[string]bool{}
	for _, s := range strings.Split(*skip, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Skip[s] = true
		}
	}
	cfg.Command = strings.TrimSpace("go run ./bench/speedbench " + strings.Join(os.Args[1:], " "))
	cfg.Log = os.Stdout
	if *asJSON {
		cfg.Log = os.Stderr
	}
	res, err := Run(context.Background(), cfg)
	if res != nil {
		if !*asJSON {
			fmt.Fprint(cfg.Log, "\n"+res.Markdown())
		}
		if *md != "" {
			if werr := replaceBlocks(*md, res.Blocks()); werr != nil {
				log.Print(werr)
			}
		}
		if *asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			enc.Encode(res)
		}
		if !cfg.Keep {
			os.RemoveAll(res.Scratch)
		}
	}
	if err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// bench is one run's state.
type bench struct {
	ctx     context.Context
	cfg     Config
	bin     string
	timeBin string
	scratch string
	logs    string
	res     *Result
	py      *pyResync
	live    []*server // with -profile: kept serving for profileMissed
}

// release stops s, or with -profile keeps it serving until the missed
// rows' commands have run again against it.
func (b *bench) release(s *server) {
	if !b.cfg.Profile {
		s.stop()
		return
	}
	if !s.kept {
		s.kept = true
		b.live = append(b.live, s)
	}
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.cfg.Log, format+"\n", args...)
}

// fail records a part that could not run; the run goes on.
func (b *bench) fail(part string, err error) {
	b.logf("  %s: %v", part, err)
	b.res.Errors = append(b.res.Errors, fmt.Sprintf("%s: %v", part, err))
}

// Run measures everything cfg asks for. A part that fails is reported in
// the result's Errors and its rows say "not run"; the others go on.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Skip == nil {
		cfg.Skip = map[string]bool{}
	}
	start := time.Now()
	if err := os.MkdirAll(cfg.Workdir, 0o755); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(cfg.Workdir, "run-")
	if err != nil {
		return nil, err
	}
	scratch, _ = filepath.Abs(scratch)
	b := &bench{ctx: ctx, cfg: cfg, scratch: scratch, logs: filepath.Join(scratch, "logs")}
	b.res = &Result{Command: cfg.Command, Scratch: scratch, Machine: machine(scratch)}
	if err := os.MkdirAll(b.logs, 0o755); err != nil {
		return b.res, err
	}
	b.timeBin = findTime(scratch)
	root, err := moduleDir()
	if err != nil {
		return b.res, err
	}
	b.bin = cfg.Bin
	if b.bin == "" {
		b.bin = filepath.Join(scratch, "bin", "resourcesync")
		b.logf("building resourcesync ...")
		if err := goBuild(ctx, root, b.bin, "./cmd/resourcesync"); err != nil {
			return b.res, err
		}
	}
	b.py = findPyResync(cfg.PyResync, cfg.Python)
	b.res.PyNote = b.py.describe()
	b.logf("py-resync: %s", b.res.PyNote)

	b.smallFiles()
	b.pyRows()
	b.sideBySide()
	b.listSide()
	b.sdshare(root)
	b.hub(root)
	b.oai(root)
	if cfg.Profile {
		b.profileMissed()
	}
	for _, s := range b.live {
		s.stop()
	}
	b.res.Machine.LoadEnd = loadAvg()
	b.res.Seconds = time.Since(start).Seconds()
	return b.res, nil
}

func goBuild(ctx context.Context, root, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w: %s", pkg, err, o)
	}
	return nil
}

func moduleDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func (b *bench) newTree(name string, n, lo, hi int, seed uint64) *TreeResult {
	tr := &TreeResult{Name: name, Files: n, Sizes: fmt.Sprintf("%d–%d bytes", lo, hi), Steps: map[string]*Step{}}
	if lo == hi {
		tr.Sizes = fmt.Sprintf("%d bytes", lo)
	}
	b.res.Trees = append(b.res.Trees, tr)
	return tr
}

// syncStep runs `resourcesync sync` into a new DEST and verifies it.
func (b *bench) syncStep(tr *TreeResult, t *tree, key, base string, args ...string) (*Step, error) {
	dest := filepath.Join(b.scratch, tr.Name+"-"+key)
	argv := append([]string{b.bin, "sync", "--progress", "quiet"}, args...)
	p, err := b.run(tr.Name+"-"+key, b.scratch, nil, append(argv, base, dest)...)
	if err != nil {
		return nil, err
	}
	s := &Step{proc: *p, FilesPerSec: float64(t.n) / p.Seconds, argv: append(slices.Clone(argv), base, dest+"-profile")}
	if _, err := t.verify(dest); err != nil {
		s.Verified = "no: " + err.Error()
		return s, fmt.Errorf("%s: DEST: %v", key, err)
	}
	s.Verified = "yes"
	tr.Steps[key] = s
	syscall.Sync()
	b.logf("  %s: %.2f s, %s files/s, peak RSS %d MiB, CPU %.2f s", key, s.Seconds, commas(s.FilesPerSec), s.RSSKiB>>10, s.CPU)
	return s, nil
}

// smallFiles measures rows (a), (b) and (e).
func (b *bench) smallFiles() {
	var kb, b72 *TreeResult
	if !b.cfg.Skip["list"] && b.cfg.NList > 0 {
		b.logf("\n== %s files of 512–1536 bytes: Resource List, Resource Dump, serve disk use ==", commas(float64(b.cfg.NList)))
		kb = b.newTree("kb", b.cfg.NList, 512, 1536, 1)
		if err := b.kbTree(kb); err != nil {
			b.fail("small files (512–1536 bytes)", err)
		}
	}
	if !b.cfg.Skip["dump72"] && b.cfg.NDump > 0 {
		b.logf("\n== %s files of 72 bytes: Resource Dump against the list path ==", commas(float64(b.cfg.NDump)))
		b72 = b.newTree("b72", b.cfg.NDump, 72, 72, 2)
		if err := b.tinyTree(b72); err != nil {
			b.fail("small files (72 bytes)", err)
		}
	}
	b.res.Rows = append(b.res.Rows, rowsSmall(kb, b72)...)
}

func (b *bench) kbTree(tr *TreeResult) error {
	t := &tree{dir: filepath.Join(b.scratch, "kb"), n: tr.Files, min: 512, max: 1536, seed: 1}
	if err := b.generate(t, &tr.Baselines); err != nil {
		return err
	}
	tr.Bytes = t.bytes
	// (a): serve --no-dumps, its state outside DIR.
	srv, err := b.serve("kb-serve-nodumps", "--no-dumps", "--state", filepath.Join(b.scratch, "kb-state-nodumps"), t.dir)
	if err != nil {
		return err
	}
	defer b.release(srv)
	if tr.Baselines.Download, err = b.rawDownload(srv.base, t); err != nil {
		return err
	}
	b.logf("  baseline: raw download (8 GETs at a time) %s files/s", commas(tr.Baselines.Download))
	if _, err := b.syncStep(tr, t, "sync-list", srv.base); err != nil {
		return err
	}
	b.release(srv)
	// (b) and (e): the default serve, state in DIR/.resourcesync.
	srv, err = b.serve("kb-serve", t.dir)
	if err != nil {
		return err
	}
	defer b.release(srv)
	tr.Steps["serve-ready"] = &Step{proc: proc{Seconds: srv.ready}, Note: "default serve: time to ready"}
	// The dump path (sync --dumps: the default sync takes the bulk GET
	// of our serve instead), then the default sync from the same Source.
	if _, err := b.syncStep(tr, t, "sync-dump", srv.base, "--dumps"); err != nil {
		return err
	}
	if _, err := b.syncStep(tr, t, "sync-default", srv.base); err != nil {
		return err
	}
	b.release(srv)
	state, err := diskUse(filepath.Join(t.dir, ".resourcesync"), false)
	if err != nil {
		return err
	}
	data, err := diskUse(t.dir, true)
	if err != nil {
		return err
	}
	tr.Steps["serve-disk"] = &Step{Note: fmt.Sprintf("%d/%d", state, data)}
	b.logf("  serve disk use: DIR/.resourcesync %s of DIR's %s (%.1f%%)", human(state), human(data), 100*float64(state)/float64(data))
	// Where it goes: the state store, the documents (the Resource List
	// and its parts above all), anything else.
	st, _ := diskUse(filepath.Join(t.dir, ".resourcesync", "default"), false)
	docs, _ := diskUse(filepath.Join(t.dir, ".resourcesync", "docs"), false)
	b.logf("    of which state %s, documents %s, other %s", human(st), human(docs), human(state-st-docs))
	return nil
}

func (b *bench) tinyTree(tr *TreeResult) error {
	t := &tree{dir: filepath.Join(b.scratch, "b72"), n: tr.Files, min: 72, max: 72, seed: 2}
	if err := b.generate(t, &tr.Baselines); err != nil {
		return err
	}
	tr.Bytes = t.bytes
	srv, err := b.serve("b72-serve", t.dir)
	if err != nil {
		return err
	}
	defer b.release(srv)
	if tr.Baselines.Download, err = b.rawDownload(srv.base, t); err != nil {
		return err
	}
	b.logf("  baseline: raw download (8 GETs at a time) %s files/s", commas(tr.Baselines.Download))
	if _, err := b.syncStep(tr, t, "sync-dump", srv.base, "--dumps"); err != nil {
		return err
	}
	if _, err := b.syncStep(tr, t, "sync-default", srv.base); err != nil {
		return err
	}
	_, err = b.syncStep(tr, t, "sync-list", srv.base, "--no-dump")
	return err
}

func notRun(id, workload, target, why string) Row {
	return Row{ID: id, Workload: workload, Target: target, Status: "not run", Figure: "—", Baseline: "—", Note: why}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

func rowsSmall(kb, b72 *TreeResult) []Row {
	var rows []Row
	step := func(tr *TreeResult, k string) *Step {
		if tr == nil {
			return nil
		}
		return tr.Steps[k]
	}
	wa := "baseline sync of %s small files from the Resource List (`serve --no-dumps`)"
	if s := step(kb, "sync-list"); s != nil {
		r := s.FilesPerSec / kb.Baselines.Ceiling
		rows = append(rows, Row{ID: "a", Workload: fmt.Sprintf(wa, commas(float64(kb.Files))), Ratio: r, rerun: s,
			Figure: fmt.Sprintf("%s files/s (%.2fx)", commas(s.FilesPerSec), r), Baseline: ceilingText(kb),
			Target: ">= 0.3x ceiling", Status: verdict(r >= 0.3)})
	} else {
		rows = append(rows, notRun("a", fmt.Sprintf(wa, "N"), ">= 0.3x ceiling", "skipped or failed (see errors)"))
	}
	wb := "baseline sync of %s files of %s from the Resource Dump (default `serve`, `sync --dumps`)"
	for _, c := range []struct {
		tr   *TreeResult
		list string
	}{{kb, "(a)"}, {b72, "`sync --no-dump` from the same Source"}} {
		s, l := step(c.tr, "sync-dump"), step(c.tr, "sync-list")
		if s == nil || l == nil {
			rows = append(rows, notRun("b", fmt.Sprintf(wb, "N", "small files"), ">= 0.5x ceiling, not slower than the list path", "skipped or failed (see errors)"))
			continue
		}
		r := s.FilesPerSec / c.tr.Baselines.Ceiling
		var note string
		if d := step(c.tr, "sync-default"); d != nil {
			note = fmt.Sprintf("the default sync from this Source takes its bulk GET instead: %s files/s (%.2fx the ceiling)", commas(d.FilesPerSec), d.FilesPerSec/c.tr.Baselines.Ceiling)
		}
		rows = append(rows, Row{ID: "b", Workload: fmt.Sprintf(wb, commas(float64(c.tr.Files)), c.tr.Sizes), Ratio: r, rerun: s, Note: note,
			Figure:   fmt.Sprintf("%s files/s (%.2fx); list path %s files/s (%.2fx of it)", commas(s.FilesPerSec), r, commas(l.FilesPerSec), s.FilesPerSec/l.FilesPerSec),
			Baseline: ceilingText(c.tr), Target: ">= 0.5x ceiling, not slower than the list path " + c.list,
			Status: verdict(r >= 0.5 && s.FilesPerSec >= l.FilesPerSec)})
	}
	we := "`serve DIR` (default) disk use of DIR/.resourcesync, %s files"
	if s := step(kb, "serve-disk"); s != nil {
		var state, data int64
		fmt.Sscanf(s.Note, "%d/%d", &state, &data)
		pct := 100 * float64(state) / float64(data)
		rows = append(rows, Row{ID: "e", Workload: fmt.Sprintf(we, commas(float64(kb.Files))), Ratio: pct / 100,
			Figure: fmt.Sprintf("%s (%.1f%% of DIR)", human(state), pct), Baseline: "DIR: " + human(data) + " allocated",
			Target: "<= 5% of DIR", Status: verdict(pct <= 5), Note: "measured after it served (b)'s sync from the dump"})
	} else {
		rows = append(rows, notRun("e", fmt.Sprintf(we, "N"), "<= 5% of DIR", "skipped or failed (see errors)"))
	}
	return rows
}

func ceilingText(tr *TreeResult) string {
	s := fmt.Sprintf("ceiling %s files/s", commas(tr.Baselines.Ceiling))
	if tr.Baselines.Download > 0 {
		s += fmt.Sprintf("; raw download %s", commas(tr.Baselines.Download))
	}
	return s + fmt.Sprintf("; md5sum %s", commas(tr.Baselines.Md5sum))
}
