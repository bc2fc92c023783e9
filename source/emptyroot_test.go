package source

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source/scan"
)

// changeLists returns the bytes of a set's Change Lists in out, by name.
func changeLists(t *testing.T, out, set string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, ".resourcesync", set, "changelists", "*.xml"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(f)] = string(b)
	}
	return m
}

// TestEmptyRootRefused: a set's directory emptied (an empty directory
// left in it) or renamed away after the baseline, seen by a full rescan
// (serve's --rescan-interval, publish) or by the paths of filesystem
// events (serve --watch): nothing is journaled for that set, its Change
// Lists stay as they were, the error says why and names --allow-empty,
// and the other set is still scanned and published.
func TestEmptyRootRefused(t *testing.T) {
	for _, how := range []string{"emptied", "renamed"} {
		for _, paths := range []bool{false, true} {
			name := how + "/full"
			if paths {
				name = how + "/paths"
			}
			t.Run(name, func(t *testing.T) {
				root := t.TempDir()
				dir, other := filepath.Join(root, "data"), filepath.Join(root, "other")
				for i, f := range []string{"a.txt", "b.txt", "sub/c.txt", "sub/deep/d.txt"} {
					write(t, dir, f, strings.Repeat("x", i+1))
				}
				write(t, other, "o.txt", "o")
				out := filepath.Join(root, "out")
				src, err := Open(Config{BaseURL: "http://127.0.0.1:1/", StateDir: filepath.Join(root, "state"), Out: out,
					Sets: []SetConfig{{Name: "data", Dir: dir}, {Name: "other", Dir: other}}})
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				ctx := context.Background()
				if _, err := src.Update(ctx); err != nil { // the baseline
					t.Fatal(err)
				}
				write(t, dir, "e.txt", "e") // one change: a Change List with an entry
				if _, err := src.Update(ctx); err != nil {
					t.Fatal(err)
				}
				before, _ := src.Store("data").Stats(ctx)
				lists := changeLists(t, out, "data")
				if before.LastSeq != 1 || before.Resources != 5 || len(lists) == 0 {
					t.Fatalf("before: %+v, %d Change Lists", before, len(lists))
				}

				var gone []string
				switch how {
				case "emptied": // rm -r DIR/*, an empty directory left
					ents, _ := os.ReadDir(dir)
					for _, e := range ents {
						gone = append(gone, filepath.Join(dir, e.Name()))
						if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
							t.Fatal(err)
						}
					}
					if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
						t.Fatal(err)
					}
				case "renamed":
					if err := os.Rename(dir, dir+".moved"); err != nil {
						t.Fatal(err)
					}
					gone = []string{dir, filepath.Join(dir, "a.txt"), filepath.Join(dir, "sub")}
				}
				write(t, other, "o2.txt", "o2")
				if paths {
					_, err = src.UpdatePaths(ctx, append(gone, filepath.Join(other, "o2.txt")))
				} else {
					_, err = src.Update(ctx)
				}
				if !errors.Is(err, scan.ErrEmptyRoot) || !Refused(err) {
					t.Fatalf("update: %v, want a refusal (scan.ErrEmptyRoot)", err)
				}
				for _, want := range []string{"set data", "--allow-empty", dir, "5 resources"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				after, _ := src.Store("data").Stats(ctx)
				if after != before {
					t.Errorf("journal changed: %+v, was %+v", after, before)
				}
				if got := changeLists(t, out, "data"); len(got) != len(lists) {
					t.Errorf("Change Lists: %d, were %d", len(got), len(lists))
				} else {
					for f, b := range lists {
						if got[f] != b {
							t.Errorf("Change List %s rewritten:\n%s", f, got[f])
						}
					}
				}
				if os, _ := src.Store("other").Stats(ctx); os.LastSeq != 1 {
					t.Errorf("the other set's change was not journaled: %+v", os)
				}
				if !strings.Contains(strings.Join(mapValues(changeLists(t, out, "other")), ""), "o2.txt") {
					t.Error("the other set's change was not published")
				}
				// The status page says it, without the directory's path.
				h := src.Handler(nil)
				var rec *httptest.ResponseRecorder
				for range 200 { // 503 while the first figures are computed
					rec = httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:1/.resourcesync/", nil))
					if rec.Code != http.StatusServiceUnavailable {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				page := rec.Body.String()
				if !strings.Contains(page, "found the directory missing or holding no file") || strings.Count(page, `data-figure="problem"`) != 1 || strings.Contains(page, dir) {
					t.Errorf("status page (%d):\n%s", rec.Code, page)
				}
			})
		}
	}
}

func mapValues(m map[string]string) []string {
	var v []string
	for _, s := range m {
		v = append(v, s)
	}
	return v
}

// TestAllowEmpty: with AllowEmpty an emptied directory is a real
// emptying, journaled as the deletion of every resource; a renamed-away
// directory is still refused.
func TestAllowEmpty(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	write(t, dir, "a.txt", "a")
	write(t, dir, "sub/b.txt", "b")
	src, err := Open(Config{BaseURL: "http://127.0.0.1:1/", StateDir: filepath.Join(root, "state"), AllowEmpty: true,
		Sets: []SetConfig{{Name: "default", Dir: dir}}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Update(ctx); !Refused(err) {
		t.Fatalf("renamed away: %v, want a refusal", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err := src.Update(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := rep.Scans["default"]; st.Deleted != 2 {
		t.Fatalf("scan: %+v, want 2 deleted", st)
	}
}

// TestOpenMissingDir: a set's directory that does not exist is an error
// of Open, which creates nothing (the default state directory lies
// inside it).
func TestOpenMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	_, err := Open(Config{BaseURL: "http://127.0.0.1:1/", StateDir: filepath.Join(dir, ".resourcesync"),
		Sets: []SetConfig{{Name: "default", Dir: dir}}})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Open: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s was created: %v", dir, err)
	}
}
