package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
)

// filesIn returns the files below dir (not the state directory) with
// their bytes, by slash-separated path.
func filesIn(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == ".resourcesync" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			m[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	return m
}

// TestSyncVanished (issue 30 §1, issue 32 item 8): a file deleted or
// rewritten at the Source while `sync` fetches it (the Source has
// rescanned: its Change Lists say so) is judged against the Source's
// later state: exit 0, DEST equals the Source, and the run reports it as
// vanished, in the summary line and as a --json event. A 404 that the
// Source's state does not explain (it still lists the file, unchanged)
// still exits 1.
func TestSyncVanished(t *testing.T) {
	syncLoopbackOnly(t)
	for _, tc := range []struct {
		name string
		json bool
		act  string // "remove", "rewrite" or "lie" (404, the Source unchanged)
	}{
		{"deleted, summary line", false, "remove"},
		{"rewritten, --json", true, "rewrite"},
		{"404 the Source does not explain", false, "lie"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir, dest := filepath.Join(root, "data"), filepath.Join(root, "mirror")
			putFiles(t, dir, "a.txt", "b.txt", "sub/c.txt")
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			base := "http://" + ln.Addr().String() + "/"
			src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: filepath.Join(root, "state"),
				ChangeListPeriod: time.Hour, Logger: discardLogger(), AllowEmpty: true,
				NoBulk: true}) // the faults are injected into the resources' GETs
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { src.Close() })
			update := func() {
				time.Sleep(5 * time.Millisecond)
				if _, err := src.Update(context.Background()); err != nil {
					t.Error(err)
				}
			}
			update()
			var done atomic.Bool
			h := src.Handler(nil)
			srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/b.txt" && tc.act == "lie" {
					http.NotFound(w, r)
					return
				}
				if r.URL.Path == "/b.txt" && done.CompareAndSwap(false, true) {
					if tc.act == "remove" {
						os.Remove(filepath.Join(dir, "b.txt"))
					} else {
						os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b.txt, rewritten while sync fetched it"), 0o644)
					}
					update()
				}
				h.ServeHTTP(w, r)
			})}}
			srv.Start()
			t.Cleanup(srv.Close)
			args := []string{"sync", "--progress", "quiet"}
			if tc.json {
				args = append(args, "--json")
			}
			code, stdout, stderr := runCLI(t, append(args, base, dest)...)
			if tc.act == "lie" {
				if code != exitProblems || !strings.Contains(stdout, "Not Found") {
					t.Fatalf("exit %d, want %d\n%s%s", code, exitProblems, stdout, stderr)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d, want 0\n%s%s", code, stdout, stderr)
			}
			if got, want := filesIn(t, dest), filesIn(t, dir); len(got) != len(want) || got["b.txt"] != want["b.txt"] {
				t.Fatalf("DEST %v, the Source %v", got, want)
			}
			if !tc.json {
				if !strings.Contains(stdout, "vanished 1") {
					t.Fatalf("no vanished in the summary:\n%s", stdout)
				}
				return
			}
			events, vanished := 0, 0
			for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
				var ev struct {
					Event  string
					Path   string
					Report *struct{ Sets []struct{ Vanished int } }
				}
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("not JSON: %q", line)
				}
				if ev.Event == "vanished" && ev.Path == "b.txt" {
					events++
				}
				if ev.Event == "summary" && ev.Report != nil && len(ev.Report.Sets) == 1 {
					vanished = ev.Report.Sets[0].Vanished
				}
			}
			if events != 1 || vanished != 1 {
				t.Fatalf("%d vanished events, summary vanished %d; want 1, 1\n%s", events, vanished, stdout)
			}
		})
	}
}
