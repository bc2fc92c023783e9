package dump_test

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/dump"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// TestOwnSourcePackages reads the packages our own Source writes (a
// Resource Dump and a Change Dump) and installs every bitstream with
// fetch.Install, verified against the manifest's length and hashes.
func TestOwnSourcePackages(t *testing.T) {
	const base = "http://example.org/"
	dir, out := t.TempDir(), t.TempDir()
	clk := &clock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}},
		StateDir: t.TempDir(), Out: out, ChangeListPeriod: time.Hour, Dumps: true, DumpInterval: time.Hour, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	files := map[string]string{
		"a.txt":                   "alpha",
		"d/b.html":                strings.Repeat("<p>b</p>", 1000),
		"sp ace #1 100%?.txt":     "escaped",
		"caf\u00e9/\u00fcber.txt": "non-ASCII",
		"empty":                   "",
	}
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The first scan is the baseline (no Change List records). A second
	// period with a create, an update and a delete closes the first
	// Change List, which gets a Change Dump package.
	clk.Set(clk.Now().Add(30 * time.Minute))
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha 2"), 0o644)
	os.Remove(filepath.Join(dir, "empty"))
	os.WriteFile(filepath.Join(dir, "caf\u00e9", "neu.txt"), []byte("new non-ASCII"), 0o644)
	files["a.txt"] = "alpha 2"
	files["caf\u00e9/neu.txt"] = "new non-ASCII"
	delete(files, "empty")
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.Set(clk.Now().Add(3 * time.Hour))
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}

	rd, _ := filepath.Glob(filepath.Join(out, ".resourcesync/default/resourcedumps/*/part-*.zip"))
	cd, _ := filepath.Glob(filepath.Join(out, ".resourcesync/default/changedumps/*.zip"))
	if len(rd) == 0 || len(cd) == 0 {
		t.Fatalf("%d resource dump packages, %d change dump packages", len(rd), len(cd))
	}
	install := func(t *testing.T, pkg string, want rs.Capability) (installed map[string]string, deleted []string) {
		t.Helper()
		p, err := dump.Open(pkg, dump.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if p.Head().MD.Capability != want || p.Unlisted() != 0 || p.Entries() == 0 {
			t.Errorf("%s: capability %q, %d entries, %d unlisted", pkg, p.Head().MD.Capability, p.Entries(), p.Unlisted())
		}
		dst := t.TempDir()
		installed = map[string]string{}
		err = p.Each(context.Background(), func(e rs.Entry, r io.Reader) error {
			rel, err := url.PathUnescape(strings.TrimPrefix(e.Loc, base))
			if err != nil {
				return err
			}
			if r == nil {
				deleted = append(deleted, rel)
				return nil
			}
			path := filepath.Join(dst, filepath.FromSlash(rel))
			if _, err := fetch.Install(r, fetch.Request{Path: path, Length: e.MD.Length, HasLength: e.MD.HasLength,
				Hashes: e.MD.Hashes, ModTime: e.LastMod.Time(), NoSync: true}); err != nil {
				return err
			}
			b, err := os.ReadFile(path)
			installed[rel] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return installed, deleted
	}
	t.Run("resource dump", func(t *testing.T) {
		got := map[string]string{}
		for _, pkg := range rd {
			in, del := install(t, pkg, rs.CapResourceDumpManifest)
			if len(del) > 0 {
				t.Errorf("deletions in a resource dump: %v", del)
			}
			for k, v := range in {
				got[k] = v
			}
		}
		if len(got) != len(files) {
			t.Errorf("installed %d files, want %d", len(got), len(files))
		}
		for rel, body := range files {
			if got[rel] != body {
				t.Errorf("%s: installed %q, want %q", rel, got[rel], body)
			}
		}
	})
	t.Run("change dump", func(t *testing.T) {
		all := map[string]string{}
		var deleted []string
		for _, pkg := range cd {
			in, del := install(t, pkg, rs.CapChangeDumpManifest)
			for k, v := range in {
				all[k] = v
			}
			deleted = append(deleted, del...)
		}
		if len(all) != 2 || all["caf\u00e9/neu.txt"] != "new non-ASCII" || all["a.txt"] != "alpha 2" {
			t.Errorf("change dump installed %q", all)
		}
		if strings.Join(deleted, ",") != "empty" {
			t.Errorf("deleted %q, want [empty]", deleted)
		}
	})
}
