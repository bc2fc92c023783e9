package destination_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
)

// TestForce: a file the tool did not write, which differs from the
// Source's, is refused without Force; with it, it is replaced and kept as
// NAME.resourcesync-old, unless that name is taken (refused, nothing
// lost). The replaced file is the tool's from then on. A second name left
// by a run killed after it made it is taken as done.
func TestForce(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		writeFile(t, dir, n, []byte("the Source's "+n))
	}
	ts := startSource(t, dir, nil, nil)
	dest := t.TempDir()
	writeFile(t, dest, "a.txt", []byte("the user's a"))
	writeFile(t, dest, "b.txt", []byte("the user's b"))
	writeFile(t, dest, "b.txt.resourcesync-old", []byte("an older b"))
	writeFile(t, dest, "c.txt", []byte("the user's c"))
	// c's second name, as a killed --force run leaves it.
	if err := os.Link(filepath.Join(dest, "c.txt"), filepath.Join(dest, "c.txt.resourcesync-old")); err != nil {
		t.Fatal(err)
	}

	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Failed != 3 || sr.Replaced != 0 || !strings.Contains(sr.Failures[0].Error, "--force") {
		t.Fatalf("without --force: %+v", sr)
	}
	user := map[string]string{"a.txt": "the user's a", "b.txt": "the user's b", "b.txt.resourcesync-old": "an older b",
		"c.txt": "the user's c", "c.txt.resourcesync-old": "the user's c"}
	for n, v := range user {
		if b, _ := os.ReadFile(filepath.Join(dest, n)); string(b) != v {
			t.Fatalf("without --force, %s is %q", n, b)
		}
	}

	opt := syncOpts(t, dest)
	opt.Force, opt.DryRun = true, true
	// A dry run says what the real run will do: b is refused (its
	// NAME.resourcesync-old is another file), c's leftover second name is
	// taken as done.
	if sr := one(t, mustSync(t, ts.base, opt)); sr.Replaced != 2 || sr.Failed != 1 || !strings.Contains(sr.Failures[0].Error, "b.txt.resourcesync-old is taken") {
		t.Errorf("dry run: %+v", sr)
	}
	opt.DryRun = false
	sr = one(t, mustSync(t, ts.base, opt))
	if sr.Replaced != 2 || sr.Failed != 1 || !strings.Contains(sr.Failures[0].Error, "b.txt.resourcesync-old is taken") {
		t.Fatalf("--force: %+v", sr)
	}
	if !strings.Contains(sr.Summary(false), "replaced 2") {
		t.Errorf("summary: %s", sr.Summary(false))
	}
	want := map[string]string{"a.txt": "the Source's a.txt", "a.txt.resourcesync-old": "the user's a",
		"b.txt": "the user's b", "b.txt.resourcesync-old": "an older b",
		"c.txt": "the Source's c.txt", "c.txt.resourcesync-old": "the user's c", "d.txt": "the Source's d.txt"}
	got := tree(t, dest)
	for n, v := range want {
		if string(got[n]) != v {
			t.Errorf("--force: %s is %q, want %q", n, got[n], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("--force: DEST holds %v", keys(got))
	}

	// a.txt is the tool's now: deleted with the Source's; its kept copy stays.
	os.Remove(filepath.Join(dir, "a.txt"))
	ts.update(t)
	if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Deleted != 1 {
		t.Errorf("after the Source deleted a.txt: %+v", sr)
	}
	if _, err := os.Stat(filepath.Join(dest, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("a.txt not deleted: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "a.txt.resourcesync-old")); string(b) != "the user's a" {
		t.Errorf("a.txt.resourcesync-old is %q", b)
	}
	_ = destination.ForceSuffix
}

// TestForceFailedDownload: when the download that would replace a file
// fails, the file stays as it was, under its own name only.
func TestForceFailedDownload(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("the Source's"))
	ts := startSource(t, dir, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/a.txt") {
				http.Error(w, "down", http.StatusInternalServerError)
				return
			}
			h.ServeHTTP(w, r)
		})
	}, nil)
	dest := t.TempDir()
	writeFile(t, dest, "a.txt", []byte("mine"))
	opt := syncOpts(t, dest)
	opt.Force, opt.Retries = true, 1
	if sr := one(t, mustSync(t, ts.base, opt)); sr.Failed != 1 || sr.Replaced != 0 {
		t.Fatalf("%+v", sr)
	}
	got := tree(t, dest)
	if len(got) != 1 || string(got["a.txt"]) != "mine" {
		t.Errorf("DEST holds %v, a.txt %q", keys(got), got["a.txt"])
	}
}
