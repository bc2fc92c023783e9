//go:build linux

package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestMain lets the test binary serve as the bench's sync child, as the
// bench binary does.
func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childMain(spec, os.Stdout))
	}
	os.Exit(m.Run())
}

// TestRun runs the whole bench on a few files, so that it keeps compiling
// and working: Run fails unless every sync left DEST identical to the
// Source's directory.
func TestRun(t *testing.T) {
	client, _ := testnet.Client(t)
	res, err := Run(context.Background(), Config{Small: 200, SmallSize: 1024, Large: 3, LargeSize: 1 << 20,
		Runs: 2, Workers: []int{0, 3}, Dir: t.TempDir(), Client: client, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Collection{res.Small, res.Large} {
		if c == nil || len(c.Runs) != 4 || c.Best == nil {
			t.Fatalf("collection: %+v", c)
		}
		for _, r := range c.Runs {
			if r.Fetched != c.Files || r.SyncSec <= 0 || r.Baseline <= 0 || r.Ratio <= 0 || r.PeakRSSKiB <= 0 {
				t.Errorf("%d files × %d bytes: run %+v", c.Files, c.FileSize, r)
			}
		}
	}
	if res.Targets.SmallMet == nil || res.Targets.LargeMet == nil {
		t.Errorf("targets: %+v", res.Targets)
	}
	// -dumps: the baseline comes from the Resource Dump.
	res, err = Run(context.Background(), Config{Small: 200, SmallSize: 1024, Dumps: true, Dir: t.TempDir(), Client: client, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Small.Best; r.Fetched != 200 || !strings.Contains(r.Mode, "dump") {
		t.Errorf("with dumps: %+v", r)
	}
}

func TestCommas(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 8130.4: "8,130", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := commas(x); got != want {
			t.Errorf("commas(%v) = %q, want %q", x, got, want)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
