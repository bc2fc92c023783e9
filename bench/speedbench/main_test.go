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
		Triples: 3000, Fragments: 20, FragTriples: 1500, Subs: 20, Notes: 2,
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
			t.Errorf("row %s (%s) not run: %s", r.ID, r.Workload, r.Note)
		default:
			t.Errorf("row %s: status %q", r.ID, r.Status)
		}
		if cfg.Profile && r.Status == "missed" && r.rerun != nil && !strings.Contains(r.Profile, "% time") {
			t.Errorf("row %s missed, its profile: %q", r.ID, r.Profile)
		}
	}
	for id, want := range map[string]int{"a": 1, "b": 2, "c": 1, "d": 1, "e": 1, "f": 2, "g": 1, "h": 1} {
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
	if len(res.Side) != 6 {
		t.Fatalf("side by side: %d tools, want 6", len(res.Side))
	}
	bins := []string{"", "", "curl", "aria2c", "wget", ""}
	for i, tool := range res.Side {
		installed := i < 2 || (i == 5 && pyOK)
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
	if !strings.HasPrefix(md, sectionTitle+"\n") || !strings.Contains(md, "| a |") || !strings.Contains(md, "curl --parallel") {
		t.Errorf("markdown:\n%s", md)
	}
}

func TestReplaceSection(t *testing.T) {
	const sec = "# Issue 23: new\n\nbody\n"
	for _, c := range []struct{ name, in, want string }{
		{"missing file", "", sec},
		{"append", "# Other\n\ntext\n", "# Other\n\ntext\n\n" + sec},
		{"replace in the middle", "# A\n\na\n\n# Issue 23: old\n\nold\n## sub\n\n# Issue 24\n\nz\n", "# A\n\na\n\n" + sec + "\n# Issue 24\n\nz\n"},
		{"replace at the end", "# A\n\n# Issue 23: old\nold\n", "# A\n\n" + sec},
		{"replace at the start", "# Issue 23: old\nold\n# B\nb\n", sec + "\n# B\nb\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "B.md")
			if c.in != "" {
				os.WriteFile(p, []byte(c.in), 0o644)
			}
			if err := replaceSection(p, sec); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(p)
			if string(got) != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
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
