package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// files lists the regular files below dir but the state directory,
// slash-separated and sorted.
func filesBelow(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".resourcesync" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// TestSyncFilters: sync's --include and --exclude in the order given
// (first match wins, an --include leaves out what no rule names), a
// --filter-from file, the files it leaves out neither fetched nor
// deleted when the Source deletes them, and a bad glob a usage error.
func TestSyncFilters(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	for _, n := range []string{"a.xml", "b.txt", "sub/c.xml", "sub/d.tmp", "private/e.xml"} {
		p := filepath.Join(dir, filepath.FromSlash(n))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base, update := serveDir(t, dir)

	dest := filepath.Join(t.TempDir(), "xml")
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--exclude", "/private/**", "--include", "*.xml", base, dest)
	if code != 0 {
		t.Fatalf("--exclude --include: exit %d\n%s%s", code, out, errOut)
	}
	if got := filesBelow(t, dest); !slices.Equal(got, []string{"a.xml", "sub/c.xml"}) {
		t.Errorf("--exclude /private/** --include *.xml: DEST holds %v", got)
	}
	if !strings.Contains(out+errOut, "excluded 3") {
		t.Errorf("the summary does not say 3 were excluded:\n%s%s", out, errOut)
	}
	// The other order: the include matches private/e.xml first.
	dest2 := filepath.Join(t.TempDir(), "xml2")
	if code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--include", "*.xml", "--exclude", "/private/**", base, dest2); code != 0 {
		t.Fatalf("--include --exclude: exit %d\n%s%s", code, out, errOut)
	}
	if got := filesBelow(t, dest2); !slices.Equal(got, []string{"a.xml", "private/e.xml", "sub/c.xml"}) {
		t.Errorf("--include *.xml --exclude /private/**: DEST holds %v", got)
	}

	// A whole mirror, then the Source deletes two files that a
	// --filter-from file excludes: they stay.
	all := filepath.Join(t.TempDir(), "all")
	if code, out, errOut := runCLI(t, "sync", "--progress", "quiet", base, all); code != 0 {
		t.Fatalf("whole mirror: exit %d\n%s%s", code, out, errOut)
	}
	rules := filepath.Join(t.TempDir(), "rules")
	os.WriteFile(rules, []byte("# not these\n- *.tmp\n- /private/\n"), 0o644)
	os.Remove(filepath.Join(dir, "sub", "d.tmp"))
	os.Remove(filepath.Join(dir, "private", "e.xml"))
	os.Remove(filepath.Join(dir, "b.txt"))
	update()
	for _, mode := range [][]string{nil, {"--baseline"}, {"--audit"}} {
		args := append(append([]string{"sync", "--progress", "quiet", "--filter-from", rules}, mode...), base, all)
		if code, out, errOut := runCLI(t, args...); code != 0 {
			t.Fatalf("%v --filter-from: exit %d\n%s%s", mode, code, out, errOut)
		}
		if got := filesBelow(t, all); !slices.Equal(got, []string{"a.xml", "private/e.xml", "sub/c.xml", "sub/d.tmp"}) {
			t.Errorf("%v --filter-from: DEST holds %v", mode, got)
		}
	}

	for _, args := range [][]string{{"--exclude", "["}, {"--filter-from", filepath.Join(t.TempDir(), "missing")}} {
		if code, out, errOut := runCLI(t, append(append([]string{"sync", "--progress", "quiet"}, args...), base, dest)...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s%s", args, code, exitUsage, out, errOut)
		}
	}
}

// TestSyncForce: a file in DEST the tool did not write is refused, with a
// message naming --force; with --force it is replaced, kept as
// NAME.resourcesync-old, and the summary says so.
func TestSyncForce(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("the Source's"), 0o644)
	base, _ := serveDir(t, dir)
	dest := t.TempDir()
	os.WriteFile(filepath.Join(dest, "a.txt"), []byte("mine"), 0o644)
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", base, dest)
	if code != exitProblems || !strings.Contains(out+errOut, "--force") {
		t.Fatalf("without --force: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "sync", "--progress", "quiet", "--force", base, dest)
	if code != 0 || !strings.Contains(out+errOut, "replaced 1") {
		t.Fatalf("--force: exit %d\n%s%s", code, out, errOut)
	}
	for n, want := range map[string]string{"a.txt": "the Source's", "a.txt.resourcesync-old": "mine"} {
		if b, _ := os.ReadFile(filepath.Join(dest, n)); string(b) != want {
			t.Errorf("%s is %q, want %q", n, b, want)
		}
	}
	if testing.Verbose() {
		t.Log(out + errOut)
	}
}

// TestAggregateLineFilters: an aggregate line's --exclude, --include and
// --filter-from (relative to the sources file) choose its files as sync's
// flags do, excluded files the Source deletes stay, and a line's --force
// replaces a file not written by resourcesync, kept as
// NAME.resourcesync-old.
func TestAggregateLineFilters(t *testing.T) {
	aggCLILoopbackOnly(t)
	dir := t.TempDir()
	for _, n := range []string{"a.xml", "b.txt", "sub/c.xml", "sub/d.tmp", "private/e.xml"} {
		p := filepath.Join(dir, filepath.FromSlash(n))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(n), 0o644)
	}
	base, update := serveDir(t, dir)
	files, root := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(files, "rules"), []byte("- *.tmp\n- /private/\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "forced"), 0o755)
	os.WriteFile(filepath.Join(root, "forced", "b.txt"), []byte("mine"), 0o644)
	sources := filepath.Join(files, "sources.txt")
	os.WriteFile(sources, []byte(base+" xml --exclude /private/** --include *.xml\n"+
		base+" rules --filter-from rules\n"+
		base+" forced --force --exclude *.xml\n"), 0o644)
	run := func() {
		t.Helper()
		if code, out, errOut := runCLI(t, "aggregate", "--once", "--sources", sources, "--root", root); code != 0 {
			t.Fatalf("aggregate --once: exit %d\n%s%s", code, out, errOut)
		}
	}
	run()
	want := map[string][]string{
		"xml":    {"a.xml", "sub/c.xml"},
		"rules":  {"a.xml", "b.txt", "sub/c.xml"},
		"forced": {"b.txt", "b.txt.resourcesync-old", "sub/d.tmp"},
	}
	for d, w := range want {
		if got := filesBelow(t, filepath.Join(root, d)); !slices.Equal(got, w) {
			t.Errorf("%s holds %v, want %v", d, got, w)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "forced", "b.txt.resourcesync-old")); string(b) != "mine" {
		t.Errorf("forced/b.txt.resourcesync-old is %q", b)
	}
	// The Source deletes a file the first line excludes and one it takes.
	os.Remove(filepath.Join(dir, "private", "e.xml"))
	os.Remove(filepath.Join(dir, "sub", "c.xml"))
	os.Remove(filepath.Join(dir, "sub", "d.tmp"))
	update()
	os.WriteFile(filepath.Join(root, "rules", "private-kept.txt"), nil, 0o644) // not the Source's: never deleted either
	run()
	want = map[string][]string{
		"xml":    {"a.xml"},
		"rules":  {"a.xml", "b.txt", "private-kept.txt"},
		"forced": {"b.txt", "b.txt.resourcesync-old"},
	}
	for d, w := range want {
		if got := filesBelow(t, filepath.Join(root, d)); !slices.Equal(got, w) {
			t.Errorf("after the deletions, %s holds %v, want %v", d, got, w)
		}
	}
}
