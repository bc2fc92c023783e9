package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestSDShareServeUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.nt")
	os.WriteFile(bad, []byte("<http://ex/a> <http://ex/p> .\n"), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no collection", nil, "NAME=PATH"},
		{"not NAME=PATH", []string{"books"}, "NAME=PATH"},
		{"bad name", []string{"a/b=" + dir}, "collection name"},
		{"reserved name", []string{"metrics=" + dir}, "collection name"},
		{"missing path", []string{"c=" + filepath.Join(dir, "nope")}, "nope"},
		{"syntax error at start", []string{"c=" + bad}, "not valid RDF"},
		{"hub without resourcesync", []string{"--hub", "http://127.0.0.1:1/", "c=" + dir}, "--resourcesync"},
	} {
		args := append([]string{"sdshare", "serve", "--addr", "127.0.0.1:0", "--state", t.TempDir()}, c.args...)
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", c.name, code, stderr, exitUsage, c.want)
		}
	}
	code, out, _ := runCLI(t, "sdshare", "serve", "--help")
	for _, want := range []string{"--push", "See also: resourcesync help sdshare-feeds"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--help (exit %d) does not name %s", code, want)
		}
	}
	code, out, _ = runCLI(t, "help", "sdshare-feeds")
	for _, want := range []string{"URLS", "FORMATS", "STATE", "PUSH", "406", "--push"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("help sdshare-feeds (exit %d) does not explain %s", code, want)
		}
	}
}

// TestSDShareServeRuns: the command serves the overview feed and stops
// with exit 0 when its context ends.
func TestSDShareServeRuns(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.nt"), []byte("<http://ex/a> <http://ex/p> \"1\" .\n"), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"resourcesync", "sdshare", "serve", "--addr", addr, "--state", t.TempDir(), "books=" + dir}, &out, &errb)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "serving SDShare") {
		if time.Now().After(deadline) {
			t.Fatalf("not serving: %s %s", out.String(), errb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "http://"+addr+"/books/") {
		t.Errorf("overview: %s\n%s", resp.Status, body)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}

// TestSDShareBridgeMirror: `sdshare serve --resourcesync` publishes the
// collection as a ResourceSync Source that our own Destination mirrors
// (baseline, then incremental after an RDF change, then an audit), each
// file holding exactly the fragment the SDShare side serves for it.
func TestSDShareBridgeMirror(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.ttl")
	write := func(body string) {
		t.Helper()
		tmp := data + ".tmp"
		if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, data); err != nil {
			t.Fatal(err)
		}
	}
	const prefix = "@prefix ex: <http://example.org/> .\n"
	write(prefix + `ex:a ex:p "one" ; ex:q [ ex:r "nested" ] .
ex:B ex:p "two" .
<http://example.org/dir/c?x=1#f> ex:p ex:a .
`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"resourcesync", "sdshare", "serve", "--addr", addr, "--state", t.TempDir(),
			"--resourcesync", "--debounce", "20ms", "--rescan", "100ms", "c=" + data}, &out, &errb)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "serving SDShare") {
		if time.Now().After(deadline) {
			t.Fatalf("not serving: %s %s", out.String(), errb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	base := "http://" + addr + "/"
	dest := t.TempDir()
	syncOnce := func(step string, args ...string) string {
		t.Helper()
		var so, se syncBuffer
		code := run(context.Background(), append(append([]string{"resourcesync", "sync"}, args...), base, dest), &so, &se)
		if code != 0 {
			t.Fatalf("%s: sync exit %d\n%s\n%s", step, code, so.String(), se.String())
		}
		return so.String()
	}
	// check compares every mirrored file with the fragment the SDShare side
	// serves for that resource, and the set of files with the resources.
	check := func(step string, iris ...string) {
		t.Helper()
		files := map[string]string{}
		filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.Contains(p, ".resourcesync") {
				b, _ := os.ReadFile(p)
				files[p] = string(b)
			}
			return err
		})
		if len(files) != len(iris) {
			t.Errorf("%s: %d files, want %d: %v", step, len(files), len(iris), files)
		}
		for _, iri := range iris {
			resp, err := http.Get(base + "c/fragment?resource=" + url.QueryEscape(iri))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			found := false
			for _, got := range files {
				if got == string(want) {
					found = true
				}
			}
			if !found || len(want) == 0 {
				t.Errorf("%s: no mirrored file holds the fragment of %s (%q)", step, iri, want)
			}
		}
	}
	syncOnce("baseline")
	check("baseline", "http://example.org/a", "http://example.org/B", "http://example.org/dir/c?x=1#f")
	// The change must reach the Change List before the incremental sync.
	write(prefix + `ex:a ex:p "one" ; ex:q [ ex:r "nested, changed" ] .
<http://example.org/dir/c?x=1#f> ex:p ex:a .
ex:d ex:p "new" .
`)
	deadline = time.Now().Add(20 * time.Second)
	for {
		// The Change List index, then its parts: three changes in all.
		get := func(u string) string {
			resp, err := http.Get(u)
			if err != nil {
				return ""
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b)
		}
		n := 0
		for _, m := range regexp.MustCompile(`<sitemap><loc>([^<]+)</loc>`).FindAllStringSubmatch(get(base+".resourcesync/c/changelist.xml"), -1) {
			n += strings.Count(get(m[1]), "<url>")
		}
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the change did not reach the Change List")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if o := syncOnce("incremental"); !strings.Contains(o, "incremental") {
		t.Errorf("second sync was not incremental:\n%s", o)
	}
	check("incremental", "http://example.org/a", "http://example.org/d", "http://example.org/dir/c?x=1#f")
	if o := syncOnce("audit", "--audit"); !strings.Contains(o, "3 in sync, 0 missing, 0 changed, 0 extra") {
		t.Errorf("audit:\n%s", o)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exit %d: %s", code, errb.String())
	}
}
