package publish_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/validate"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// clock is a fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func openStore(t testing.TB, path string) *bolt.DB {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "state.db")
	}
	db, err := bolt.Open(path, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// server serves dir over loopback HTTP and returns its base URL.
func server(t testing.TB, dir string) string {
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// resource returns the inventory record of a file with content b.
func resource(path string, b []byte, mod time.Time) store.Resource {
	return store.Resource{Path: path, Size: int64(len(b)), ModTime: mod,
		MD5: md5.Sum(b), SHA256: sha256.Sum256(b), Type: "text/plain; charset=utf-8", LastMod: mod}
}

// apply applies one change (and writes the file when dir is set).
func apply(t testing.TB, st store.Store, dir string, kind rs.Change, path, content string, at time.Time) {
	t.Helper()
	r := resource(path, []byte(content), at)
	if dir != "" {
		f := filepath.Join(dir, filepath.FromSlash(path))
		if kind == rs.Deleted {
			os.Remove(f)
		} else {
			os.MkdirAll(filepath.Dir(f), 0o755)
			if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if kind == rs.Deleted {
		old, err := st.Get(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		r = old
	}
	if _, _, err := st.Apply(context.Background(), store.Batch{Changes: []store.Change{{Kind: kind, Time: at, Resource: r}}}); err != nil {
		t.Fatal(err)
	}
}

// slowClient dials only loopback, without testnet's 30 s whole-request
// deadline: under -race on a loaded machine, reading a 50,000-entry
// document can take longer (validate.Options.Timeout bounds each request).
func slowClient(t testing.TB) *http.Client {
	_, g := testnet.Client(t)
	return &http.Client{Transport: g.Transport()}
}

// walk validates the whole tree and returns the problems of error severity.
func walk(t testing.TB, base string) []validate.Problem {
	t.Helper()
	client := slowClient(t)
	var mu sync.Mutex
	var errs []validate.Problem
	sum, err := validate.Walk(context.Background(), client, base+".well-known/resourcesync",
		validate.Options{MaxDocs: 5000, Timeout: 5 * time.Minute}, func(p validate.Problem) {
			mu.Lock()
			defer mu.Unlock()
			if p.Severity == rs.SevError {
				errs = append(errs, p)
			} else {
				t.Logf("warning: %s", p)
			}
		})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	if sum.Skipped > 0 {
		t.Errorf("walk skipped %d documents", sum.Skipped)
	}
	t.Logf("walk: %d documents, %d entries", sum.Documents, sum.Entries)
	return errs
}

func mustWalkClean(t testing.TB, base string) {
	t.Helper()
	for _, p := range walk(t, base) {
		t.Errorf("%s", p)
	}
}

// decodeFile reads a whole document, validating it.
func decodeFile(t testing.TB, path string) (rs.Head, []rs.Entry) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := validate.Document(path, bytes.NewReader(b), validate.Options{}, func(p validate.Problem) {
		if p.Severity == rs.SevError {
			t.Errorf("%s", p)
		}
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	d := rs.NewDecoder(bytes.NewReader(b))
	h, err := d.Head()
	if err != nil {
		t.Fatal(err)
	}
	var es []rs.Entry
	for e, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, *e)
	}
	_ = info
	return *h, es
}

func TestPublishSmall(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		files map[string]string
		dumps bool
	}{
		{"empty", nil, false},
		{"empty-dumps", nil, true},
		{"one", map[string]string{"a.txt": "hello"}, false},
		{"one-dumps", map[string]string{"dir/a b#?.txt": "hello"}, true},
		{"several-dumps", map[string]string{"a": "1", "b/c": "22", "d/é.txt": "333", "e%20": "4444"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, dir := t.TempDir(), t.TempDir()
			st := openStore(t, "")
			for p, c := range tc.files {
				apply(t, st, dir, rs.Created, p, c, t0)
			}
			base := server(t, out)
			clk := &clock{t: t0.Add(time.Minute)}
			cfg := publish.Config{BaseURL: base, Out: out, Dumps: tc.dumps, Archives: true, Now: clk.Now, Logger: quiet,
				Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
			rep, err := publish.Publish(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Sets[0].Resources; got != int64(len(tc.files)) {
				t.Errorf("resources = %d, want %d", got, len(tc.files))
			}
			mustWalkClean(t, base)
			_, es := decodeFile(t, filepath.Join(out, ".resourcesync/default/resourcelist.xml"))
			for _, e := range es {
				if e.LastMod.IsZero() || !e.MD.HasLength || e.MD.Type == "" || e.MD.Hashes.Get(rs.MD5) == "" || e.MD.Hashes.Get(rs.SHA256) == "" {
					t.Errorf("entry %s lacks metadata: %+v", e.Loc, e.MD)
				}
			}
			robots, err := os.ReadFile(filepath.Join(out, "robots.txt"))
			if err != nil || !strings.Contains(string(robots), "Sitemap: "+base+".resourcesync/default/resourcelist.xml\n") {
				t.Errorf("robots.txt = %q, %v", robots, err)
			}
			if tc.dumps {
				checkResourceDump(t, out, base, "default", dir, len(tc.files))
			}
			// A second run with nothing changed rewrites no Resource List.
			clk.Set(t0.Add(2 * time.Minute))
			rep, err = publish.Publish(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Sets[0].ResourceList || rep.Sets[0].ResourceDump {
				t.Errorf("rerun rewrote unchanged documents: %+v", rep.Sets[0])
			}
			mustWalkClean(t, base)
		})
	}
}

func TestRobotsKeepsUsersFile(t *testing.T) {
	out := t.TempDir()
	user := "User-agent: *\nDisallow: /private\n"
	os.WriteFile(filepath.Join(out, "robots.txt"), []byte(user), 0o644)
	st := openStore(t, "")
	base := "http://127.0.0.1:1/"
	rep, err := publish.Publish(context.Background(), publish.Config{BaseURL: base, Out: out, Logger: quiet,
		Sets: []publish.Set{{Name: "s", Store: st, ResourceBase: base + "r/"}}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "robots.txt")); string(b) != user || rep.Robots != "" {
		t.Errorf("user's robots.txt replaced: %q (%q)", b, rep.Robots)
	}
	if b, _ := os.ReadFile(filepath.Join(out, ".resourcesync/robots.txt")); !strings.Contains(string(b), "Sitemap: "+base+".resourcesync/s/resourcelist.xml") {
		t.Errorf(".resourcesync/robots.txt = %q", b)
	}
}

func TestConfigErrors(t *testing.T) {
	st := openStore(t, "")
	for _, cfg := range []publish.Config{
		{BaseURL: "relative/", Out: "x"},
		{BaseURL: "http://h/x", Out: "x"},
		{BaseURL: "http://h/", Out: ""},
		{BaseURL: "http://h/", Out: "x", Sets: []publish.Set{{Name: "../x", Store: st, ResourceBase: "http://h/r/"}}},
		{BaseURL: "http://h/", Out: "x", Sets: []publish.Set{{Name: "a", Store: st, ResourceBase: "http://h/r"}}},
		{BaseURL: "http://h/", Out: "x", Sets: []publish.Set{{Name: "a", ResourceBase: "http://h/r/"}}},
		{BaseURL: "http://h/", Out: "x", Dumps: true, Sets: []publish.Set{{Name: "a", Store: st, ResourceBase: "http://h/r/"}}},
	} {
		if _, err := publish.Publish(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func TestNotificationEntry(t *testing.T) {
	out := t.TempDir()
	st := openStore(t, "")
	base := "http://127.0.0.1:1/"
	_, err := publish.Publish(context.Background(), publish.Config{BaseURL: base, Out: out, Logger: quiet,
		Notification: func(set string) (string, string) { return base + "topic/" + set, base + "hub" },
		Sets:         []publish.Set{{Name: "s", Store: st, ResourceBase: base + "r/"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, es := decodeFile(t, filepath.Join(out, ".resourcesync/s/capabilitylist.xml"))
	var found bool
	for _, e := range es {
		if e.MD.Capability == rs.CapChangeNotification && e.Loc == base+"topic/s" && e.Link(rs.RelHub) == base+"hub" {
			found = true
		}
	}
	if !found {
		t.Errorf("no change-notification entry in %+v", es)
	}
}

func TestTwoSets(t *testing.T) {
	out := t.TempDir()
	base := server(t, out)
	a, b := openStore(t, ""), openStore(t, "")
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	apply(t, a, "", rs.Created, "x", "1", t0)
	apply(t, b, "", rs.Created, "y", "2", t0)
	_, err := publish.Publish(context.Background(), publish.Config{BaseURL: base, Out: out, Logger: quiet,
		Now:  func() time.Time { return t0.Add(time.Minute) },
		Sets: []publish.Set{{Name: "a", Store: a, ResourceBase: base + "a/"}, {Name: "b", Store: b, ResourceBase: base + "b/"}}})
	if err != nil {
		t.Fatal(err)
	}
	mustWalkClean(t, base)
	_, es := decodeFile(t, filepath.Join(out, ".well-known/resourcesync"))
	if len(es) != 2 {
		t.Errorf("source description has %d entries", len(es))
	}
}

func TestPublishErrors(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, cfg *publish.Config) context.Context
		want  error
	}{
		{"out is a file", func(t *testing.T, cfg *publish.Config) context.Context {
			f := filepath.Join(t.TempDir(), "file")
			os.WriteFile(f, nil, 0o644)
			cfg.Out = f
			return context.Background()
		}, nil},
		{"closed store", func(t *testing.T, cfg *publish.Config) context.Context {
			cfg.Sets[0].Store.Close()
			return context.Background()
		}, store.ErrClosed},
		{"canceled", func(t *testing.T, cfg *publish.Config) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, "")
			apply(t, st, "", rs.Created, "a", "a", t0)
			cfg := publish.Config{BaseURL: "http://127.0.0.1:1/", Out: t.TempDir(), Logger: quiet,
				Sets: []publish.Set{{Name: "s", Store: st, ResourceBase: "http://127.0.0.1:1/r/"}}}
			ctx := tc.setup(t, &cfg)
			_, err := publish.Publish(ctx, cfg)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDumpSkipsUnsafeAndMissing(t *testing.T) {
	out, dir := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	apply(t, st, dir, rs.Created, "ok.txt", "fine", t0)
	apply(t, st, "", rs.Created, "missing.txt", "gone", t0)
	apply(t, st, "", rs.Created, "a/../b", "unsafe", t0)
	rep, err := publish.Publish(context.Background(), publish.Config{BaseURL: base, Out: out, Dumps: true, Logger: quiet,
		Now:  func() time.Time { return t0.Add(2 * time.Hour) },
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "r/"}}})
	if err != nil {
		t.Fatal(err)
	}
	// The resource dump holds ok.txt; so does the change dump of the
	// closed list (the other two are skipped in each).
	if rep.Sets[0].SkippedBitstreams != 4 {
		t.Errorf("skipped %d, want 4", rep.Sets[0].SkippedBitstreams)
	}
	checkResourceDump(t, out, base, "default", dir, 1)
	mustWalkClean(t, base)
}

// TestKilledRunTempsOutsideDocRoot: the temporary files a killed run left
// beside the Source Description and the root robots.txt are removed; other
// files there are not.
func TestKilledRunTempsOutsideDocRoot(t *testing.T) {
	out := t.TempDir()
	st := openStore(t, "")
	os.MkdirAll(filepath.Join(out, ".well-known"), 0o755)
	left := []string{filepath.Join(out, ".well-known", ".tmp-resourcesync-3qzbc7e49lp36"), filepath.Join(out, ".tmp-robots.txt-abc")}
	users := []string{filepath.Join(out, ".tmp-mine"), filepath.Join(out, ".well-known", "other")}
	for _, f := range append(left, users...) {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := publish.Config{BaseURL: "http://127.0.0.1:1/", Out: out, Logger: quiet,
		Sets: []publish.Set{{Name: "s", Store: st, ResourceBase: "http://127.0.0.1:1/r/"}}}
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, f := range left {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", f, err)
		}
	}
	for _, f := range users {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s removed: %v", f, err)
		}
	}
}
