//go:build linux

package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestBench runs the whole benchmark at a tiny size, so that it keeps
// compiling and working: Bench fails unless every mirror holds every file
// of its Source (a sample compared byte for byte) and every change reached
// its mirror by notification. No timing is asserted.
func TestBench(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts a dozen processes")
	}
	res, err := Bench(context.Background(), Config{Sources: 5, Files: 50, Workers: []int{2}, Rounds: 2,
		Changes: 20, Rate: 20, LagWorkers: 2, Dir: t.TempDir(), Seed: 1, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 4 {
		t.Fatalf("runs: %+v", res.Runs)
	}
	sides := map[string]int{}
	for _, r := range res.Runs {
		sides[r.Side]++
		if r.FilesPerS <= 0 || r.PeakRSSKiB <= 0 {
			t.Errorf("run %+v", r)
		}
	}
	if sides["aggregate"] != 2 || sides["sync"] != 2 || res.Runs[0].Side == res.Runs[2].Side {
		t.Errorf("runs not paired in alternating order: %+v", res.Runs)
	}
	if r := res.Ratio[2]; r <= 0 {
		t.Errorf("ratio %v", r)
	}
	l := res.Lag
	if l == nil || l.Arrived != 20 || !(l.P99 > 0) || l.Max < l.P50 || l.Detected == 0 || l.PeakRSSKiB <= 0 {
		t.Errorf("lag %+v", l)
	}
	md := res.Markdown("-sources 5")
	for _, want := range []string{"aggregate --once --workers 2", "p99", "peak RSS"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestPct(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want float64
	}{{50, 5}, {99, 10}, {100, 10}, {0, 1}} {
		ds := make([]time.Duration, 10)
		for i := range ds {
			ds[9-i] = time.Duration(i+1) * time.Millisecond
		}
		if got := pct(ds, c.p); got != c.want {
			t.Errorf("pct(%v) = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestParsePublished(t *testing.T) {
	p, ok := parsePublished(`time=2026-11-27T07:48:36.043Z level=DEBUG msg="notify: published" set=default entries=1 from=2026-11-27T07:48:34.520Z until=2026-11-27T07:48:36.038Z`)
	if !ok || p.at.Sub(p.until) != 5*time.Millisecond {
		t.Errorf("parsePublished = %+v, %v", p, ok)
	}
	if _, ok := parsePublished(`time=2026-11-27T07:48:36.048Z level=INFO msg="publish: resource list"`); ok {
		t.Error("a publish line taken for a notification")
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
