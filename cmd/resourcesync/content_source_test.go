package main

import (
	"archive/zip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/mem"
)

// TestPublishContent: publish takes a location of a registered storage
// (mem:// here, s3://BUCKET/PREFIX in use) as DIR; without --state its
// state goes under the user's state directory (named after the location,
// said on the first run), never into a DIR/.resourcesync that does not
// exist; an emptied one is refused as an empty DIR is.
func TestPublishContent(t *testing.T) {
	name := "cli-publish"
	mem.Forget(name)
	t.Cleanup(func() { mem.Forget(name) })
	ms := mem.Open(name)
	for _, k := range []string{"a.txt", "sub/b c.txt"} {
		ms.PutObject(k, mem.Object{Data: []byte("bytes of " + k), ModTime: time.Now().Add(-time.Hour)})
	}
	out, state := t.TempDir(), t.TempDir()
	args := []string{"publish", "--dumps", "--base-url", "http://127.0.0.1:1/", "--out", out}

	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	code, _, stderr := runCLI(t, append(args, "mem://"+name)...)
	defState := filepath.Join(xdg, "resourcesync", "sources", storage.FileName("mem://"+name))
	if code != 0 || !strings.Contains(stderr, "kept in "+defState) {
		t.Fatalf("no --state: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(defState, "default")); err != nil {
		t.Fatalf("no state in the default place: %v", err)
	}
	if code, _, stderr = runCLI(t, append(args, "mem://"+name)...); code != 0 || strings.Contains(stderr, "kept in") {
		t.Fatalf("second run without --state: exit %d, %s (the default is said on the first run only)", code, stderr)
	}
	code, _, stderr = runCLI(t, append(args, "--state", state, "mem://"+name)...)
	if code != 0 {
		t.Fatalf("publish: exit %d, %s", code, stderr)
	}
	rl, err := os.ReadFile(filepath.Join(out, ".resourcesync", "default", "resourcelist.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{"http://127.0.0.1:1/a.txt", "http://127.0.0.1:1/sub/b%20c.txt"} {
		if !strings.Contains(string(rl), "<loc>"+loc+"</loc>") {
			t.Errorf("resource list lacks %s:\n%s", loc, rl)
		}
	}
	// The Resource Dump's package is written from the Content's bytes.
	zips, _ := filepath.Glob(filepath.Join(out, ".resourcesync", "default", "resourcedumps", "*", "*.zip"))
	if len(zips) != 1 {
		t.Fatalf("resource dump packages: %q", zips)
	}
	zr, err := zip.OpenReader(zips[0])
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	members := map[string]string{}
	for _, f := range zr.File[1:] {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		members[f.Name] = string(b)
	}
	if len(members) != 2 || members["resources/a.txt"] != "bytes of a.txt" || members["resources/sub/b%20c.txt"] != "bytes of sub/b c.txt" {
		t.Errorf("package members: %q", members)
	}
	if _, err := os.Stat(filepath.Join(state, "default")); err != nil {
		t.Errorf("state not in --state: %v", err)
	}

	for _, k := range ms.Keys() {
		ms.Delete(k)
	}
	code, _, stderr = runCLI(t, append(args, "--state", state, "mem://"+name)...)
	if code != 1 || !strings.Contains(stderr, "--allow-empty") {
		t.Fatalf("emptied: exit %d, %s", code, stderr)
	}
}

// TestServeContent: serve publishes a storage location (mem:// here) as it
// does a DIR, and sync mirrors it byte for byte.
func TestServeContent(t *testing.T) {
	name := "cli-serve"
	mem.Forget(name)
	t.Cleanup(func() { mem.Forget(name) })
	ms := mem.Open(name)
	want := map[string]string{"a.txt": "alpha", "sub/b c.txt": "beta", "ü/x": strings.Repeat("x", 300<<10)}
	for k, v := range want {
		ms.PutObject(k, mem.Object{Data: []byte(v), ModTime: time.Now().Add(-time.Hour)})
	}
	base, _ := startServe(t, "mem://"+name)
	dest := t.TempDir()
	if code, _, stderr := runCLI(t, "sync", base, dest); code != 0 {
		t.Fatalf("sync: exit %d, %s", code, stderr)
	}
	got := map[string]string{}
	filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && d.Name() == ".resourcesync" {
				return filepath.SkipDir
			}
			return err
		}
		b, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(dest, p)
		got[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if len(got) != len(want) {
		t.Fatalf("mirror holds %d files, want %d: %q", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("mirror's %s differs", k)
		}
	}
}
