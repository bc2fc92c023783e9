//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQuick runs the whole bench end to end on tiny sizes: every row is
// reported, every sync's DEST is verified, and a tool that is not
// installed is reported as such rather than failing the run.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds resourcesync, sdsharebench and hubbench and runs every part: tens of seconds")
	}
	py := os.Getenv("SPEEDBENCH_PYRESYNC")
	if py == "" {
		py = "/tmp/pyresync"
	}
	cfg := Config{NList: 300, NDump: 300, NPy: 100, NPublish: 200, NSide: 200,
		Triples: 3000, Fragments: 20, FragTriples: 1500, Subs: 20, Notes: 2, NOAI: 500,
		Workdir: t.TempDir(), PyResync: py, Log: testWriter{t}}
	_, err := exec.LookPath("strace")
	cfg.Profile = err == nil
	res, err := Run(t.Context(), cfg)
	if !cfg.Profile {
		t.Log("strace is not installed: -profile not exercised")
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Errors {
		t.Errorf("part failed: %s", e)
	}
	pyOK := !strings.HasPrefix(res.PyNote, "not installed") && !strings.HasPrefix(res.PyNote, "cannot")
	if !pyOK {
		t.Logf("py-resync rows and side-by-side row not run: %s (set SPEEDBENCH_PYRESYNC to a py-resync 2.0.1 checkout)", res.PyNote)
	}
	seen := map[string]int{}
	for _, r := range res.Rows {
		seen[r.ID]++
		switch r.Status {
		case "met", "missed":
		case "not run":
			if (r.ID == "c" || r.ID == "d") && !pyOK {
				continue
			}
			if _, err := exec.LookPath("curl"); err != nil && (r.ID == "i" || r.ID == "j") {
				continue
			}
			t.Errorf("row %s (%s) not run: %s", r.ID, r.Workload, r.Note)
		default:
			t.Errorf("row %s: status %q", r.ID, r.Status)
		}
		if cfg.Profile && r.Status == "missed" && r.rerun != nil && !strings.Contains(r.Profile, "% time") {
			t.Errorf("row %s missed, its profile: %q", r.ID, r.Profile)
		}
	}
	for id, want := range map[string]int{"a": 1, "b": 2, "c": 1, "d": 1, "e": 1, "f": 2, "g": 1, "h": 1, "i": 1, "j": 1, "k": 1} {
		if seen[id] != want {
			t.Errorf("row %s reported %d times, want %d", id, seen[id], want)
		}
	}
	for _, tr := range res.Trees {
		if tr.Baselines.Ceiling <= 0 || tr.Baselines.Md5sum <= 0 {
			t.Errorf("tree %s: baselines %+v", tr.Name, tr.Baselines)
		}
		for k, s := range tr.Steps {
			if strings.HasPrefix(k, "sync") && s.Verified != "yes" {
				t.Errorf("tree %s, %s: verified %q", tr.Name, k, s.Verified)
			}
		}
	}
	if len(res.Side) != 7 {
		t.Fatalf("side by side: %d tools, want 7", len(res.Side))
	}
	bins := []string{"", "", "curl", "aria2c", "wget", "", ""}
	for i, tool := range res.Side {
		installed := i < 2 || i == 6 || (i == 5 && pyOK)
		if bins[i] != "" {
			_, err := exec.LookPath(bins[i])
			installed = err == nil
		}
		if !installed {
			if tool.Step != nil || !strings.Contains(tool.Status, "not installed") && !strings.HasPrefix(tool.Status, "cannot") {
				t.Errorf("%s: not installed but status %q", tool.Name, tool.Status)
			}
			t.Logf("skipped %s: %s", tool.Name, tool.Status)
			continue
		}
		if tool.Status != "ok" || tool.Step == nil || tool.Step.Verified != "yes" {
			t.Errorf("%s: status %q %s", tool.Name, tool.Status, tool.Note)
		}
	}
	md := res.Markdown()
	for _, want := range []string{"## Destination", "| a |", "| i |", "| k |", "curl --parallel", "## WebSub hub"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown has no %q:\n%s", want, md)
		}
	}
}

func TestReplaceBlocks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "B.md")
	in := "# B\n\n## Destination\n\nby hand\n\n<!-- speedbench:destination -->\nold\n<!-- /speedbench:destination -->\n\nkept\n\n" +
		"<!-- speedbench:history -->\n" + historyHeader + "| 2026-11-27 | abc | hub | x | y | missed |\n<!-- /speedbench:history -->\n"
	os.WriteFile(p, []byte(in), 0o644)
	if err := replaceBlocks(p, map[string]string{"destination": "new\n", "history": "| 2026-11-29 | def | hub | x | z | met |\n"}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	want := "# B\n\n## Destination\n\nby hand\n\n<!-- speedbench:destination -->\nnew\n<!-- /speedbench:destination -->\n\nkept\n\n" +
		"<!-- speedbench:history -->\n" + historyHeader + "| 2026-11-29 | def | hub | x | z | met |\n| 2026-11-27 | abc | hub | x | y | missed |\n<!-- /speedbench:history -->\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// A block without markers: an error naming it, the file unchanged.
	if err := replaceBlocks(p, map[string]string{"oai": "x"}); err == nil || !strings.Contains(err.Error(), "oai") {
		t.Errorf("missing marker: %v", err)
	}
	if again, _ := os.ReadFile(p); string(again) != want {
		t.Error("file changed although a marker was missing")
	}
}

func TestParseStraceC(t *testing.T) {
	const out = `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 40.00    0.400000          20     20000           write
 30.00    0.300000          15     20000      1000 openat
 30.00    0.300000          30     10000           linkat
------ ----------- ----------- --------- --------- ----------------
100.00    1.000000          20     50000      1000 total
`
	total, kinds := parseStraceC(out)
	if total != 50000 || kinds["write"] != 20000 || kinds["openat"] != 20000 || kinds["linkat"] != 10000 || len(kinds) != 3 {
		t.Errorf("got %d %v", total, kinds)
	}
}

func TestParseOAI(t *testing.T) {
	out := "oaibench: 100000 records, pages of 500, Go go1.26.8\n" +
		"raw ListRecords download:              0.64 s     157337 records/s   95.1 MB/s\n" +
		"harvest + publish (first):            27.93 s       3580 records/s  peak RSS   43 MB  (0.02× the raw download)\n" +
		"incremental, 1000 changed:            10.10 s       9901 records/s  peak RSS   43 MB  (0.06× the raw download)\n" +
		"Destination baseline (sync):          29.98 s       3335 records/s  peak RSS   38 MB  (0.02× the raw download)\n"
	o, err := parseOAI(out)
	if err != nil || o.raw != 157337 || o.harvest != 3580 || o.incremental != 9901 || o.sync != 3335 {
		t.Errorf("got %+v %v", o, err)
	}
	if _, err := parseOAI("nothing"); err == nil {
		t.Error("no rates: no error")
	}
}

func TestParseHub(t *testing.T) {
	md := "Hub fan-out ...\n\n| store | nodes | subscribe + verify | 1 notification: acked / first / last delivery | sustained deliveries/s | note |\n" +
		"|---|---:|---:|---|---:|---|\n| bolt | 1 | 1.2s | 310µs / 1.5ms / 812ms | 53,210 | x |\n"
	h, err := parseHub(md)
	if err != nil {
		t.Fatal(err)
	}
	if h.last != 812*time.Millisecond || h.sustained != 53210 || h.baseline != "" {
		t.Errorf("got %+v", h)
	}
	// With the same-run baseline column bench/hubbench has since issue 23.
	h, err = parseHub("| store | nodes | subscribe + verify | 1 notification: acked / first / last delivery | 1 notification deliveries/s | sustained deliveries/s | baseline: plain client, same POSTs | hub / baseline | note |\n" +
		"|---|---|---|---|---|---|---|---|---|\n| bolt | 1 | 2s | 1ms / 2ms / 150ms | 66,000 | 70,100 | 120ms (83,000/s) | 1.25 | |\n")
	if err != nil {
		t.Fatal(err)
	}
	if h.last != 150*time.Millisecond || h.sustained != 70100 || h.baseline != "120ms (83,000/s)" {
		t.Errorf("got %+v", h)
	}
	if _, err := parseHub("| store | nodes |\n|---|---|\n| pg1 | 1 |\n"); err == nil {
		t.Error("no bolt row: no error")
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
