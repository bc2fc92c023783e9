//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/sparql"
)

// childEnv carries a step's spec (JSON) to the child process that runs it.
const childEnv = "SDSHAREBENCH_STEP"

// Spec is what one child runs.
type Spec struct {
	Step      string
	Dir       string // the run's directory (dataset files, stores)
	Triples   int    // the dataset's size as asked (the files hold resources(Triples)*15)
	Small     int
	Fragments int
	NoSync    bool
	Virtuoso  sparql.Endpoints
	// CPUProfile, if set, is a file the child writes its CPU profile to.
	CPUProfile string
}

// Result is one row of the table.
type Result struct {
	Step      string  `json:"step"`
	What      string  `json:"what"`
	Triples   int64   `json:"triples"`
	Bytes     int64   `json:"bytes,omitempty"`
	Fragments int     `json:"fragments,omitempty"`
	Seconds   float64 `json:"seconds"`
	// TriplesPerSec and FragmentsPerSec are the rates; RatioToParse is
	// TriplesPerSec over the N-Triples parse rate of the same run.
	TriplesPerSec   float64 `json:"triplesPerSec"`
	MBPerSec        float64 `json:"mbPerSec,omitempty"`
	FragmentsPerSec float64 `json:"fragmentsPerSec,omitempty"`
	RatioToParse    float64 `json:"ratioToParse,omitempty"`
	// PeakRSSKiB is the child's VmHWM (each step runs in a process of its
	// own); it counts the pages of mapped files too (bbolt maps its whole
	// file), so PeakAnonKiB, the highest RssAnon sampled every 10ms, is
	// the process's own memory. CPUSec is its user+system time.
	PeakRSSKiB  int64   `json:"peakRSSKiB"`
	PeakAnonKiB int64   `json:"peakAnonKiB"`
	CPUSec      float64 `json:"cpuSec"`
	// ReloadSec (the end-to-end server row) is the server's reload after
	// the collection file changed; Updated is what it journalled.
	ReloadSec float64 `json:"reloadSec,omitempty"`
	Updated   int     `json:"updated,omitempty"`
	Note      string  `json:"note,omitempty"`
}

func (r *Result) finish(d time.Duration) {
	r.Seconds = d.Seconds()
	if r.Seconds > 0 {
		r.TriplesPerSec = float64(r.Triples) / r.Seconds
		r.MBPerSec = float64(r.Bytes) / r.Seconds / 1e6
		r.FragmentsPerSec = float64(r.Fragments) / r.Seconds
	}
}

// childMain runs the step spec (JSON) and writes its results as JSON to
// out; the exit code is for os.Exit.
func childMain(specJSON string, out io.Writer) int {
	var sp Spec
	if err := json.Unmarshal([]byte(specJSON), &sp); err != nil {
		fmt.Fprintln(os.Stderr, "sdsharebench child:", err)
		return 2
	}
	if sp.CPUProfile != "" {
		f, err := os.Create(sp.CPUProfile)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	if sp.Step == stepE2EServer {
		return serverChild(sp, os.Stdin, out)
	}
	anon := sampleAnon()
	rs, err := runStep(context.Background(), sp)
	peakAnon := anon()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sdsharebench step %s: %v\n", sp.Step, err)
		return 1
	}
	hwm := vmHWM()
	for i := range rs {
		rs[i].Step = sp.Step
		if rs[i].PeakRSSKiB == 0 { // else another process's, measured there
			rs[i].PeakRSSKiB, rs[i].PeakAnonKiB = hwm, peakAnon
		}
	}
	if err := json.NewEncoder(out).Encode(rs); err != nil {
		return 1
	}
	return 0
}

// Steps, in the order the parent runs them.
const (
	stepParseNT       = "parse-nt"
	stepParseTurtle   = "parse-ttl"
	stepParseRDFXML   = "parse-rdfxml"
	stepBoltLoadSmall = "bolt-load-small"
	stepBoltLoad      = "bolt-load"
	stepBoltApply     = "bolt-apply"
	stepMemApply      = "mem-apply"
	stepSPARQLLoad    = "virtuoso-load"
	stepSPARQLApply   = "virtuoso-apply"
	stepEndToEnd      = "end-to-end"
)

const graphName = "http://example.org/graph/bench"

func runStep(ctx context.Context, sp Spec) ([]Result, error) {
	in := func(name string) string { return filepath.Join(sp.Dir, name) }
	switch sp.Step {
	case stepParseNT:
		return parseStep(in(fileNT), rdf.NTriples, "parse N-Triples (rdf.Parse)")
	case stepParseTurtle:
		return parseStep(in(fileTurtle), rdf.Turtle, "parse Turtle (rdf.Parse)")
	case stepParseRDFXML:
		return parseStep(in(fileRDFXML), rdf.RDFXML, "parse RDF/XML (rdf.Parse)")
	case stepBoltLoadSmall, stepBoltLoad:
		file := in(fileNT)
		if sp.Step == stepBoltLoadSmall {
			file = in(fileSmallNT)
		}
		s, err := boltstore.OpenDir(in(sp.Step), &boltstore.Options{NoSync: sp.NoSync})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		what := "snapshot load: boltstore.ReplaceGraph"
		if sp.Step == stepBoltLoadSmall {
			what += " (small)"
		}
		r, err := loadStep(ctx, s, file, what)
		if err != nil {
			return nil, err
		}
		st, err := s.Stats(ctx)
		if err == nil && st.Triples != int(r[0].Triples) {
			return nil, fmt.Errorf("boltstore holds %d triples after loading %d", st.Triples, r[0].Triples)
		}
		return r, err
	case stepBoltApply:
		// Into the store the full load left: fragments replace resources
		// that are there, as in a client that follows a server.
		s, err := boltstore.OpenDir(in(stepBoltLoad), &boltstore.Options{NoSync: sp.NoSync})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return applyStep(ctx, s, sp, "fragment apply: boltstore.ApplyFragment")
	case stepMemApply:
		s := memstore.New()
		defer s.Close()
		t := time.Now()
		if err := s.ReplaceGraph(ctx, graphName, parseFile(in(fileNT))); err != nil {
			return nil, err
		}
		loaded := time.Since(t)
		r, err := applyStep(ctx, s, sp, "fragment apply: memstore.ApplyFragment")
		if err == nil {
			r[0].Note = fmt.Sprintf("store preloaded with the snapshot in %.1fs (RSS includes it)", loaded.Seconds())
		}
		return r, err
	case stepSPARQLLoad, stepSPARQLApply:
		if sp.Virtuoso.Update == "" {
			return nil, errors.New("no SPARQL endpoint")
		}
		s := sparql.New(sp.Virtuoso, &http.Client{Transport: &http.Transport{DialContext: loopbackDial}})
		defer s.Close()
		if sp.Step == stepSPARQLLoad {
			return loadStep(ctx, s, in(fileNT), "snapshot load: sparql store (Virtuoso, GSP upload + DROP/ADD)")
		}
		return applyStep(ctx, s, sp, "fragment apply: sparql store (Virtuoso, probe + update)")
	case stepEndToEnd:
		return endToEnd(ctx, sp)
	case stepServeDir:
		return serveDirStep(ctx, sp)
	}
	return nil, fmt.Errorf("unknown step %q", sp.Step)
}

// loopbackDial refuses anything but loopback addresses: the bench never
// talks to the network.
func loopbackDial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("sdsharebench: refusing to dial %s (loopback only)", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// parseFile yields the N-Triples file's triples; a file that cannot be
// opened is the iterator's error.
func parseFile(path string) iter.Seq2[rdf.Triple, error] {
	return func(yield func(rdf.Triple, error) bool) {
		f, err := os.Open(path)
		if err != nil {
			yield(rdf.Triple{}, err)
			return
		}
		defer f.Close()
		for t, err := range rdf.Parse(f, rdf.NTriples, "") {
			if !yield(t, err) || err != nil {
				return
			}
		}
	}
}

func parseStep(path string, f rdf.Format, what string) ([]Result, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	r := Result{What: what, Bytes: fi.Size()}
	t := time.Now()
	for _, err := range rdf.Parse(file, f, "http://example.org/base") {
		if err != nil {
			return nil, err
		}
		r.Triples++
	}
	r.finish(time.Since(t))
	return []Result{r}, nil
}

// loadStep streams the N-Triples file into s.ReplaceGraph: the parse is
// part of the load, as in a client reading a snapshot.
func loadStep(ctx context.Context, s graphstore.Store, path, what string) ([]Result, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	r := Result{What: what, Bytes: fi.Size()}
	counted := func(yield func(rdf.Triple, error) bool) {
		for t, err := range parseFile(path) {
			if err == nil {
				r.Triples++
			}
			if !yield(t, err) {
				return
			}
		}
	}
	t := time.Now()
	if err := s.ReplaceGraph(ctx, graphName, counted); err != nil {
		return nil, err
	}
	r.finish(time.Since(t))
	return []Result{r}, nil
}

// applyStep applies the run's fragments, one ApplyFragment each, to the
// graph loaded from the dataset.
func applyStep(ctx context.Context, s graphstore.Store, sp Spec, what string) ([]Result, error) {
	frags := fragments(fragmentCount(sp.Fragments, resources(sp.Triples)), resources(sp.Triples))
	r := Result{What: what, Fragments: len(frags)}
	t := time.Now()
	for _, ts := range frags {
		if err := s.ApplyFragment(ctx, graphName, ts[0].S, ts); err != nil {
			return nil, err
		}
		r.Triples += int64(len(ts))
	}
	r.finish(time.Since(t))
	// One applied fragment read back: the step fails rather than report
	// the rate of a store that dropped the writes.
	last := frags[len(frags)-1]
	got, err := s.Fragment(ctx, graphName, last[0].S)
	if err != nil {
		return nil, err
	}
	if !rdf.Isomorphic(got, last) {
		return nil, fmt.Errorf("%s: fragment of %s not as applied:\n%s", what, last[0].S.Value, rdf.IsomorphicDiff(got, last))
	}
	return []Result{r}, nil
}

// vmHWM is the process's peak resident set in KiB (0 if unknown).
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return statusKiB(string(b), "VmHWM:")
}

// sampleAnon samples the process's RssAnon every 10ms until the function
// it returns is called, which returns the highest sample. Linux keeps a
// peak only of the whole RSS (VmHWM), which includes mapped file pages.
func sampleAnon() (stop func() int64) {
	done := make(chan struct{})
	result := make(chan int64)
	go func() {
		var peak int64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile("/proc/self/status"); err == nil {
				peak = max(peak, statusKiB(string(b), "RssAnon:"))
			}
			select {
			case <-done:
				result <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 { close(done); return <-result }
}

func statusKiB(status, key string) int64 {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			var kib int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kib)
			return kib
		}
	}
	return 0
}
