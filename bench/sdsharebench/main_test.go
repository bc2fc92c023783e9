//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/sparqltest"
)

// TestMain lets the test binary serve as the bench's step child, as the
// bench binary does.
func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childMain(spec, os.Stdout))
	}
	os.Exit(m.Run())
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// checkResults fails t unless every step in want produced rows whose
// counts match the dataset, with rates, a ratio to the parse rate and a
// peak RSS.
func checkResults(t *testing.T, cfg Config, rep *Report, want []string) {
	t.Helper()
	n := int64(resources(cfg.Triples) * perResource)
	f := fragmentCount(cfg.Fragments, resources(cfg.Triples))
	rows := map[string]int{}
	for _, r := range rep.Results {
		rows[r.Step]++
		if r.Seconds <= 0 || r.TriplesPerSec <= 0 || r.PeakRSSKiB <= 0 || r.PeakAnonKiB <= 0 || r.CPUSec <= 0 {
			t.Errorf("%s: %+v", r.What, r)
		}
		if (r.Step == stepParseNT) != (r.RatioToParse == 0) {
			t.Errorf("%s: ratio to parse %v", r.What, r.RatioToParse)
		}
		wantTriples := n
		switch r.Step {
		case stepBoltLoadSmall:
			wantTriples = int64(resources(cfg.Small) * perResource)
		case stepBoltApply, stepMemApply, stepSPARQLApply:
			wantTriples = int64(f * perResource)
			if r.Fragments != f {
				t.Errorf("%s: %d fragments, want %d", r.What, r.Fragments, f)
			}
		case stepServeDir:
			if strings.Contains(r.What, "reload") && r.Fragments != 1 {
				t.Errorf("%s: %d fragments, want 1", r.What, r.Fragments)
			}
		case stepEndToEnd:
			if strings.Contains(r.What, "fragments") {
				wantTriples = int64(f * perResource)
				if r.Fragments != f {
					t.Errorf("%s: %d fragments, want %d", r.What, r.Fragments, f)
				}
			}
		}
		if r.Triples != wantTriples {
			t.Errorf("%s: %d triples, want %d", r.What, r.Triples, wantTriples)
		}
	}
	for _, s := range want {
		wantRows := 1
		switch s {
		case stepEndToEnd:
			wantRows = 5 // with the one-GET-a-fragment baseline
		case stepServeDir:
			wantRows = 2
		}
		if rows[s] != wantRows {
			t.Errorf("step %s: %d rows, want %d", s, rows[s], wantRows)
		}
	}
}

// TestShort runs every step but Virtuoso's on a small dataset (what -short
// does, smaller still), so the bench keeps compiling and working: a step
// fails when its store does not hold what it was given.
func TestShort(t *testing.T) {
	cfg := Config{Triples: 3000, Small: 300, Fragments: 60, Dir: t.TempDir(), Log: testWriter{t}}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range allSteps {
		if s != stepSPARQLLoad && s != stepSPARQLApply {
			want = append(want, s)
		}
	}
	checkResults(t, cfg, rep, want)
	if rep.SmallLoadRSSKiB <= 0 || rep.FullLoadRSSKiB <= 0 || rep.VirtuosoSkip == "" {
		t.Errorf("report: %+v", rep)
	}
	var out bytes.Buffer
	printReport(&out, cfg, rep)
	for _, s := range []string{"load average", "bounded memory:", "parse N-Triples", "end to end: client fragments", "Virtuoso steps skipped"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
	t.Log("\n" + out.String())
}

// TestVirtuoso runs the sparql store's steps against a real Virtuoso.
func TestVirtuoso(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Virtuoso (10 s or more); run without -short")
	}
	sparqltest.Skip(t)
	cfg := Config{Triples: 600, Small: 60, Fragments: 20, Virtuoso: true, Dir: t.TempDir(), Log: testWriter{t},
		Steps: []string{stepParseNT, stepSPARQLLoad, stepSPARQLApply}}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, cfg, rep, cfg.Steps)
	if rep.VirtuosoRSSKiB <= 0 {
		t.Errorf("Virtuoso's peak RSS not found: %+v", rep)
	}
}

// TestDataset checks the generated data has the shape the bench claims:
// 20% of the triples with a blank-node subject, and changed fragments of
// distinct resources that differ from the snapshot's.
func TestDataset(t *testing.T) {
	for _, tc := range []struct{ triples, fragments int }{{15, 1}, {1500, 7}, {3000, 200}, {300, 1000}} {
		r := resources(tc.triples)
		var all, blank int
		distinct := map[string]bool{}
		for tr := range dataset(r, nil) {
			all++
			distinct[tr.String()] = true
			if tr.S.IsBlank() {
				blank++
			}
		}
		if all != r*perResource || blank*5 != all || len(distinct) != all {
			t.Errorf("%d triples: %d generated, %d distinct, %d with a blank subject", tc.triples, all, len(distinct), blank)
		}
		f := fragmentCount(tc.fragments, r)
		seen := map[string]bool{}
		for k, ts := range fragments(f, r) {
			s := ts[0].S.Value
			if seen[s] {
				t.Errorf("%d triples, %d fragments: %s changed twice", tc.triples, f, s)
			}
			seen[s] = true
			old := resourceTriples(changed(k, f, r), r, 0, "x")
			if old[0].S != ts[0].S || old[4].O == ts[4].O || old[6].O == ts[6].O {
				t.Errorf("fragment %d of %s does not change the description and modified", k, s)
			}
		}
		if len(seen) != f || f > r {
			t.Errorf("%d triples: %d fragments of %d resources", tc.triples, len(seen), r)
		}
	}
}

func TestCommas(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 8130.4: "8,130", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := commas(x); got != want {
			t.Errorf("commas(%v) = %q, want %q", x, got, want)
		}
	}
}
