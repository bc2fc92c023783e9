package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

func putFiles(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("bytes of "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// publishedLists returns the bytes of every Change List publish wrote.
func publishedLists(t *testing.T, out string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(out, ".resourcesync", "*", "changelists", "*.xml"))
	sort.Strings(files)
	var b bytes.Buffer
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(f + "\n")
		b.Write(data)
	}
	return b.String()
}

var resLocRE = regexp.MustCompile(`<loc>([^<]*)</loc>`)

// resourceLocs returns the <loc>s of a set's Resource List in OUT.
func resourceLocs(t *testing.T, out, set string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, ".resourcesync", set, "resourcelist.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var locs []string
	for _, m := range resLocRE.FindAllStringSubmatch(string(b), -1) {
		locs = append(locs, m[1])
	}
	return locs
}

// TestPublishEmptyDir: publish over a DIR emptied (or renamed away) after
// its baseline records nothing as deleted and leaves the Change Lists as
// they were: exit 1 naming --allow-empty (emptied), exit 2 saying the
// directory does not exist (renamed away). --allow-empty lets a real
// emptying through.
func TestPublishEmptyDir(t *testing.T) {
	root := t.TempDir()
	dir, state, out := filepath.Join(root, "data"), filepath.Join(root, "state"), filepath.Join(root, "out")
	putFiles(t, dir, "a.txt", "b.txt", "sub/c.txt")
	publish := func(extra ...string) (int, string, string) {
		return runCLI(t, append(append([]string{"publish", "--base-url", "http://127.0.0.1:1/", "--out", out, "--state", state}, extra...), dir)...)
	}
	if code, _, stderr := publish(); code != 0 {
		t.Fatalf("baseline: %d %s", code, stderr)
	}
	putFiles(t, dir, "d.txt")
	if code, stdout, stderr := publish(); code != 0 || !strings.Contains(stdout, "1 created") {
		t.Fatalf("change: %d %s %s", code, stdout, stderr)
	}
	lists := publishedLists(t, out)

	// Renamed away (an unmounted share whose mount point is gone too).
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := publish()
	if code != exitUsage || !strings.Contains(stderr, "does not exist") {
		t.Errorf("renamed away: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("publish created %s: %v", dir, err)
	}
	if got := publishedLists(t, out); got != lists {
		t.Errorf("renamed away: Change Lists changed:\n%s", got)
	}

	// Emptied: the files gone, an empty directory left (an empty mount
	// point looks the same).
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := publish()
	if code != exitProblems || !strings.Contains(stderr, "--allow-empty") || !strings.Contains(stderr, "4 resources") {
		t.Errorf("emptied: exit %d, stdout %s, stderr %s", code, stdout, stderr)
	}
	if got := publishedLists(t, out); got != lists {
		t.Errorf("emptied: Change Lists changed:\n%s", got)
	}
	if n := len(resourceLocs(t, out, "default")); n != 4 {
		t.Errorf("emptied: the Resource List lists %d resources, want the last 4", n)
	}

	code, stdout, stderr = publish("--allow-empty")
	if code != 0 || !strings.Contains(stdout, "4 deleted") {
		t.Errorf("--allow-empty: exit %d, stdout %s, stderr %s", code, stdout, stderr)
	}
	if got := publishedLists(t, out); got == lists || strings.Count(got, "<rs:md change=\"deleted\"") != 4 {
		t.Errorf("--allow-empty: the Change Lists do not record the 4 deletions:\n%s", got)
	}
}

// TestServeMissingDir: serve on a DIR that does not exist exits 2 with a
// message and creates nothing (it used to create DIR/.resourcesync and
// serve 0 resources).
func TestServeMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // on a regression serve would run on
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"resourcesync", "serve", "--addr", "127.0.0.1:0", "--no-hub", dir}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), dir+" does not exist") {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, out.String(), errb.String())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("serve created %s: %v", dir, err)
	}
}

// TestPublishOutInsideDir: OUT inside DIR, or DIR itself, and the state
// are never published as resources, nor robots.txt, however the paths
// are spelled (DIR through a symbolic link, OUT by its real path).
func TestPublishOutInsideDir(t *testing.T) {
	for _, tc := range []struct {
		name string
		// dir, out and state as given, relative to a root holding real/
		// (DIR) and link -> real.
		dir, out, state string
	}{
		{"out is DIR", "real", "real", "state"},
		{"out and state inside DIR through a link", "link", "real/site", "real/state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			real := filepath.Join(root, "real")
			putFiles(t, real, "a.txt", "sub/b.txt")
			if err := os.Symlink(real, filepath.Join(root, "link")); err != nil {
				t.Skip("no symbolic links:", err)
			}
			out := filepath.Join(root, tc.out)
			for i := range 2 { // the second run sees the first's output
				code, stdout, stderr := runCLI(t, "publish", "--base-url", "http://127.0.0.1:1/", "--out", out,
					"--state", filepath.Join(root, tc.state), filepath.Join(root, tc.dir))
				if code != 0 {
					t.Fatalf("run %d: exit %d %s %s", i, code, stdout, stderr)
				}
			}
			got := strings.Join(resourceLocs(t, out, "default"), " ")
			if want := "http://127.0.0.1:1/a.txt http://127.0.0.1:1/sub/b.txt"; got != want {
				t.Errorf("published %s, want %s", got, want)
			}
		})
	}
}
