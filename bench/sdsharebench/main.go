//go:build linux

// Command sdsharebench measures the SDShare stack on a generated dataset, in
// one run, against the raw parse rate of package rdf in the same run:
//
//	go run ./bench/sdsharebench [-triples 1000000] [-fragments 10000] [-virtuoso=true] [-json]
//	go run ./bench/sdsharebench -short
//
// The dataset has resources of 15 triples (labels with language tags,
// xsd:dateTime and xsd:integer literals, escaped strings, links between
// resources) of which 3 are in a blank-node structure (20%). It is written
// as N-Triples, Turtle and RDF/XML, plus a small N-Triples file (-small
// triples) and a changed copy in which -fragments resources differ.
//
// Each step runs in a child process (this program re-executed with the
// step in its environment), so that its peak RSS (VmHWM) is its own:
//
//   - parse: rdf.Parse of each format, the baseline;
//   - snapshot load: boltstore.ReplaceGraph of the small and the full file
//     (the difference of their peak RSS shows whether memory is bounded),
//     and the sparql store's ReplaceGraph into a Virtuoso 7 started for the
//     run (Graph Store PUT of a temporary graph, then DROP GRAPH + ADD);
//   - fragment apply: -fragments ApplyFragment calls into boltstore (the
//     graph the full load left), memstore (preloaded) and Virtuoso;
//   - end to end: sdshare/server serving the file on 127.0.0.1 and
//     sdshare/client loading its snapshot into a boltstore, then, after the
//     file changed, applying the changed fragments read from the feeds;
//   - server-dir: sdshare/server opening a directory of the dataset and
//     a one-resource file (graph on disk), then reloading after a change
//     of the small file (its time beside the open's).
//
// Rates are triples/s with the ratio to the N-Triples parse rate. The
// machine is usually shared: the table says its load average at the start
// and the end, and each step's CPU time beside its wall time.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/sparqltest"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/sparql"
)

// Config is one run.
type Config struct {
	Triples, Small, Fragments int
	Virtuoso                  bool
	// VirtuosoTxnLimit, if not 0, is set as Virtuoso's
	// TransactionAfterImageLimit (bytes) before its steps: with the
	// default, 50 MB, the swap of a 1,000,000-triple snapshot aborts
	// (SR325).
	VirtuosoTxnLimit int64
	NoSync           bool
	Dir              string // scratch directory (default: a temporary one, removed)
	CPUProfile       string // prefix of per-step CPU profiles
	Steps            []string
	Log              io.Writer // progress
}

// Machine describes where the run happened.
type Machine struct {
	CPUs       int    `json:"cpus"`
	Model      string `json:"model"`
	MemTotal   string `json:"memTotal"`
	GoVersion  string `json:"goVersion"`
	LoadStart  string `json:"loadAvgStart"`
	LoadEnd    string `json:"loadAvgEnd"`
	Durability string `json:"durability"`
}

// Report is the outcome of a run.
type Report struct {
	Machine Machine  `json:"machine"`
	Results []Result `json:"results"`
	// The peak RSS and anonymous RSS of the small and the full boltstore
	// load: whether memory is bounded.
	SmallLoadRSSKiB  int64 `json:"smallLoadPeakRSSKiB,omitempty"`
	FullLoadRSSKiB   int64 `json:"fullLoadPeakRSSKiB,omitempty"`
	SmallLoadAnonKiB int64 `json:"smallLoadPeakAnonKiB,omitempty"`
	FullLoadAnonKiB  int64 `json:"fullLoadPeakAnonKiB,omitempty"`
	// VirtuosoRSSKiB is the Virtuoso server's peak RSS (VmHWM), not a
	// child's.
	VirtuosoRSSKiB   int64  `json:"virtuosoPeakRSSKiB,omitempty"`
	VirtuosoTxnLimit int64  `json:"virtuosoTxnAfterImageLimit,omitempty"`
	VirtuosoSkip     string `json:"virtuosoSkipped,omitempty"`
}

func main() {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childMain(spec, os.Stdout))
	}
	cfg := Config{Log: os.Stderr}
	flag.IntVar(&cfg.Triples, "triples", 1000000, "triples in the dataset (rounded up to whole resources of 15 triples)")
	flag.IntVar(&cfg.Small, "small", 100000, "triples of the small snapshot whose load is compared with the full one (peak RSS)")
	flag.IntVar(&cfg.Fragments, "fragments", 10000, "changed fragments to apply (at most one per resource)")
	flag.BoolVar(&cfg.Virtuoso, "virtuoso", true, "also measure the sparql store against a Virtuoso 7 started for the run (needs virtuoso-t and isql-vt)")
	flag.Int64Var(&cfg.VirtuosoTxnLimit, "virtuoso-txn-limit", 2000000000, "set Virtuoso's TransactionAfterImageLimit to this many bytes (0: keep its default, 50 MB, with which the swap of a 1,000,000-triple snapshot aborts with SR325)")
	flag.BoolVar(&cfg.NoSync, "nosync", false, "open the stores without fsync (to measure the cost of durability)")
	flag.StringVar(&cfg.Dir, "dir", "", "scratch directory (default: a new temporary directory, removed at the end)")
	flag.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of each step to `PREFIX`-STEP.pprof")
	steps := flag.String("steps", "", "comma-separated steps to run (default all): "+strings.Join(allSteps, ","))
	short := flag.Bool("short", false, "a quick run: 20,000 triples, 2,000 small, 500 fragments, no Virtuoso")
	asJSON := flag.Bool("json", false, "print the report as JSON on stdout (progress goes to stderr)")
	flag.Parse()
	if *short {
		cfg.Triples, cfg.Small, cfg.Fragments, cfg.Virtuoso = 20000, 2000, 500, false
	}
	if *steps != "" {
		cfg.Steps = strings.Split(*steps, ",")
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
		return
	}
	printReport(os.Stdout, cfg, rep)
}

var allSteps = []string{stepParseNT, stepParseTurtle, stepParseRDFXML, stepBoltLoadSmall, stepBoltLoad,
	stepBoltApply, stepMemApply, stepSPARQLLoad, stepSPARQLApply, stepEndToEnd, stepServeDir}

// Run generates the dataset and runs every step in a child process.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Triples < perResource || cfg.Fragments < 1 || cfg.Small < 1 {
		return nil, errors.New("sdsharebench: need -triples >= 15, -small >= 1, -fragments >= 1")
	}
	steps := cfg.Steps
	if len(steps) == 0 {
		steps = allSteps
	}
	for _, s := range steps {
		if !contains(allSteps, s) {
			return nil, fmt.Errorf("sdsharebench: unknown step %q", s)
		}
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "sdsharebench")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	rep := &Report{Machine: describe()}
	rep.Machine.Durability = "fsync per commit (boltstore, server and client state)"
	if cfg.NoSync {
		rep.Machine.Durability = "no fsync (-nosync)"
	}

	t := time.Now()
	if err := writeFiles(cfg.Dir, cfg.Triples, cfg.Small, cfg.Fragments); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Log, "dataset of %d triples (%d resources) written in %.1fs to %s\n",
		resources(cfg.Triples)*perResource, resources(cfg.Triples), time.Since(t).Seconds(), cfg.Dir)

	spec := Spec{Dir: cfg.Dir, Triples: cfg.Triples, Small: cfg.Small, Fragments: cfg.Fragments, NoSync: cfg.NoSync}
	var virtuoso *sparqltest.Server
	if cfg.Virtuoso && (contains(steps, stepSPARQLLoad) || contains(steps, stepSPARQLApply)) {
		fmt.Fprintln(cfg.Log, "starting Virtuoso ...")
		var err error
		virtuoso, err = startVirtuoso()
		if err != nil {
			return nil, err
		}
		if cfg.VirtuosoTxnLimit != 0 {
			if err := virtuosoSQL(ctx, virtuoso, fmt.Sprintf("__dbf_set('txn_after_image_limit', %d);", cfg.VirtuosoTxnLimit)); err != nil {
				return nil, err
			}
			rep.VirtuosoTxnLimit = cfg.VirtuosoTxnLimit
		}
		spec.Virtuoso = sparql.Endpoints{Update: virtuoso.UpdateURL, Query: virtuoso.QueryURL, GraphStore: virtuoso.GraphStoreURL}
	} else if !cfg.Virtuoso {
		rep.VirtuosoSkip = "-virtuoso=false"
	}
	for _, step := range steps {
		if (step == stepSPARQLLoad || step == stepSPARQLApply) && virtuoso == nil {
			continue
		}
		sp := spec
		sp.Step = step
		if cfg.CPUProfile != "" {
			sp.CPUProfile = fmt.Sprintf("%s-%s.pprof", cfg.CPUProfile, step)
		}
		fmt.Fprintf(cfg.Log, "step %s ...\n", step)
		rs, err := runChild(ctx, sp, cfg.Log)
		if err != nil {
			return nil, fmt.Errorf("step %s: %w", step, err)
		}
		for _, r := range rs {
			fmt.Fprintf(cfg.Log, "  %s: %.0f triples/s in %.1fs, peak RSS %d MiB (anon %d MiB)\n", r.What, r.TriplesPerSec, r.Seconds, r.PeakRSSKiB>>10, r.PeakAnonKiB>>10)
		}
		rep.Results = append(rep.Results, rs...)
		switch step {
		case stepBoltLoadSmall:
			rep.SmallLoadRSSKiB, rep.SmallLoadAnonKiB = rs[0].PeakRSSKiB, rs[0].PeakAnonKiB
		case stepBoltLoad:
			rep.FullLoadRSSKiB, rep.FullLoadAnonKiB = rs[0].PeakRSSKiB, rs[0].PeakAnonKiB
		}
	}
	if virtuoso != nil {
		rep.VirtuosoRSSKiB = processHWM("virtuoso-t", virtuoso.Dir)
	}
	var parse float64
	for _, r := range rep.Results {
		if r.Step == stepParseNT {
			parse = r.TriplesPerSec
		}
	}
	for i := range rep.Results {
		if parse > 0 && rep.Results[i].Step != stepParseNT {
			rep.Results[i].RatioToParse = rep.Results[i].TriplesPerSec / parse
		}
	}
	rep.Machine.LoadEnd = loadAvg()
	return rep, nil
}

// runChild runs one step in a child process and returns its results, with
// the child's CPU time and peak RSS.
func runChild(ctx context.Context, sp Spec, log io.Writer) ([]Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(sp)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	cmd.Stdout = &out
	cmd.Stderr = log
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	var rs []Result
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		return nil, fmt.Errorf("child output %q: %w", out.String(), err)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	for i := range rs {
		if rs[i].CPUSec == 0 { // else another process's, measured there
			rs[i].CPUSec = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		}
		if rs[i].PeakRSSKiB == 0 && ru != nil {
			rs[i].PeakRSSKiB = ru.Maxrss // KiB on Linux
		}
	}
	return rs, nil
}

// benchTB lets the program use sparqltest's Virtuoso starter, written for
// tests: it needs a testing.TB only to report failure or a skip, which
// benchTB turns into a panic that startVirtuoso recovers.
type benchTB struct{ testing.TB }

type tbAbort struct{ msg string }

func (benchTB) Helper()                           {}
func (benchTB) Fatal(args ...any)                 { panic(tbAbort{fmt.Sprint(args...)}) }
func (benchTB) Fatalf(format string, args ...any) { panic(tbAbort{fmt.Sprintf(format, args...)}) }
func (benchTB) Skipf(format string, args ...any)  { panic(tbAbort{fmt.Sprintf(format, args...)}) }

// startVirtuoso starts a Virtuoso with a fresh database in a temporary
// directory; it is killed (and the directory removed) when this process
// exits, even by kill -9.
func startVirtuoso() (s *sparqltest.Server, err error) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(tbAbort)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("sdsharebench: Virtuoso: %s (or run with -virtuoso=false)", a.msg)
		}
	}()
	return sparqltest.Shared(benchTB{}), nil
}

// virtuosoSQL runs one SQL statement as dba (the password of sparqltest's
// fresh database).
func virtuosoSQL(ctx context.Context, s *sparqltest.Server, stmt string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "isql-vt", fmt.Sprintf("127.0.0.1:%d", s.SQLPort), "dba", "dba", "exec="+stmt).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("*** Error")) {
		return fmt.Errorf("sdsharebench: isql-vt %q: %v: %s", stmt, err, out)
	}
	return nil
}

// processHWM returns the VmHWM of the process named comm whose working
// directory is dir (0 if none is found).
func processHWM(comm, dir string) int64 {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p := filepath.Join("/proc", e.Name())
		c, err := os.ReadFile(filepath.Join(p, "comm"))
		if err != nil || strings.TrimSpace(string(c)) != comm {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join(p, "cwd")); err != nil || cwd != dir {
			continue
		}
		b, err := os.ReadFile(filepath.Join(p, "status"))
		if err == nil {
			return statusKiB(string(b), "VmHWM:")
		}
	}
	return 0
}

func describe() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadStart: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemTotal = fmt.Sprintf("%d MiB", statusKiB(string(b), "MemTotal:")>>10)
	}
	return m
}

// loadAvg is /proc/loadavg's 1, 5 and 15 minute averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func printReport(w io.Writer, cfg Config, rep *Report) {
	m := rep.Machine
	fmt.Fprintf(w, "sdsharebench: %d triples (%d resources, 20%% in blank-node structures), %d fragments of %d triples\n",
		resources(cfg.Triples)*perResource, resources(cfg.Triples), fragmentCount(cfg.Fragments, resources(cfg.Triples)), perResource)
	fmt.Fprintf(w, "machine: %d CPUs, %s, %s RAM, %s; durability: %s\n", m.CPUs, m.Model, m.MemTotal, m.GoVersion, m.Durability)
	fmt.Fprintf(w, "load average (1/5/15 min) at start %s, at end %s — the machine is shared with other jobs, so wall times include waiting for a CPU (compare CPU s)\n\n", m.LoadStart, m.LoadEnd)
	fmt.Fprintf(w, "%-58s %10s %6s %8s %7s %10s %7s %8s %6s %7s %8s\n", "step", "triples", "frags", "wall s", "CPU s", "triples/s", "MB/s", "frags/s", "×parse", "RSS MiB", "anon MiB")
	for _, r := range rep.Results {
		opt := func(v float64, f string) string {
			if v == 0 {
				return "-"
			}
			return fmt.Sprintf(f, v)
		}
		fmt.Fprintf(w, "%-58s %10d %6s %8.2f %7.2f %10s %7s %8s %6s %7d %8d\n", r.What, r.Triples, opt(float64(r.Fragments), "%.0f"), r.Seconds, r.CPUSec,
			commas(r.TriplesPerSec), opt(r.MBPerSec, "%.1f"), opt(r.FragmentsPerSec, "%.0f"), opt(r.RatioToParse, "%.3f"), r.PeakRSSKiB>>10, r.PeakAnonKiB>>10)
	}
	fmt.Fprintln(w)
	for _, r := range rep.Results {
		if r.Note != "" {
			fmt.Fprintf(w, "note (%s): %s\n", r.Step, r.Note)
		}
	}
	if rep.SmallLoadRSSKiB > 0 && rep.FullLoadRSSKiB > 0 {
		fmt.Fprintf(w, "bounded memory: boltstore snapshot load of %d triples: peak RSS %d MiB, anon %d MiB; of %d triples (%.0f×): peak RSS %d MiB, anon %d MiB; difference: RSS %+d MiB, anon %+d MiB\n",
			resources(cfg.Small)*perResource, rep.SmallLoadRSSKiB>>10, rep.SmallLoadAnonKiB>>10,
			resources(cfg.Triples)*perResource, float64(resources(cfg.Triples))/float64(resources(cfg.Small)), rep.FullLoadRSSKiB>>10, rep.FullLoadAnonKiB>>10,
			(rep.FullLoadRSSKiB-rep.SmallLoadRSSKiB)>>10, (rep.FullLoadAnonKiB-rep.SmallLoadAnonKiB)>>10)
		fmt.Fprintln(w, "  (RSS = VmHWM, includes the pages of bbolt's memory-mapped file that the load touched, which the kernel can drop; anon = peak RssAnon sampled every 10ms, the process's own memory)")
	}
	if rep.VirtuosoRSSKiB > 0 {
		limit := "Virtuoso's default TransactionAfterImageLimit (50 MB)"
		if rep.VirtuosoTxnLimit != 0 {
			limit = fmt.Sprintf("TransactionAfterImageLimit raised to %d bytes (with the default 50 MB the swap of a 1,000,000-triple snapshot aborts: SR325)", rep.VirtuosoTxnLimit)
		}
		fmt.Fprintf(w, "Virtuoso 7 server (sparqltest's configuration: NumberOfBuffers 10000; %s) peak RSS: %d MiB\n", limit, rep.VirtuosoRSSKiB>>10)
	}
	if rep.VirtuosoSkip != "" {
		fmt.Fprintf(w, "Virtuoso steps skipped: %s\n", rep.VirtuosoSkip)
	}
}

// commas formats x rounded, with thousands separators.
func commas(x float64) string {
	s := fmt.Sprintf("%.0f", x)
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
