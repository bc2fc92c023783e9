package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/s3test"
)

// TestSyncIntoBucket: `sync SOURCE s3://BUCKET/PREFIX` on versitygw, read
// back by the independent client (aws): every file byte for byte, then a
// deletion and an edit mirrored; an object someone else put under the
// prefix is left alone.
func TestSyncIntoBucket(t *testing.T) {
	srv := s3test.Shared(t)
	s3test.SkipAWS(t)
	srv.SetEnv(t)
	syncLoopbackOnly(t)
	bucket := srv.NewBucket(t)
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 8 {
		files[fmt.Sprintf("d%d/f %d.txt", i%3, i)] = strings.Repeat(fmt.Sprint(i), 100*i+1)
	}
	for k, v := range files {
		p := filepath.Join(dir, filepath.FromSlash(k))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(v), 0o644)
	}
	base, update := serveDir(t, dir)
	srv.Put(t, bucket, "m/theirs.txt", []byte("someone else's"))
	loc, state := "s3://"+bucket+"/m", t.TempDir()
	check := func(what string) {
		t.Helper()
		out := string(srv.AWS(t, nil, "s3", "ls", "--recursive", "s3://"+bucket+"/m/"))
		n := strings.Count(strings.TrimSpace(out), "\n") + 1
		if n != len(files)+1 {
			t.Fatalf("%s: the bucket lists %d objects, want %d:\n%s", what, n, len(files)+1, out)
		}
		for k, v := range files {
			if got := string(srv.AWS(t, nil, "s3", "cp", "s3://"+bucket+"/m/"+k, "-")); got != v {
				t.Errorf("%s: %s holds %d bytes, want %d", what, k, len(got), len(v))
			}
		}
		if got := string(srv.AWS(t, nil, "s3", "cp", "s3://"+bucket+"/m/theirs.txt", "-")); got != "someone else's" {
			t.Errorf("%s: theirs.txt now %q", what, got)
		}
	}
	if code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--state", state, base, loc); code != 0 {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, errOut)
	}
	check("baseline")
	os.Remove(filepath.Join(dir, "d1", "f 1.txt"))
	delete(files, "d1/f 1.txt")
	os.WriteFile(filepath.Join(dir, "d2", "f 2.txt"), []byte("edited"), 0o644)
	files["d2/f 2.txt"] = "edited"
	update()
	if code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--state", state, base, loc); code != 0 {
		t.Fatalf("incremental: exit %d\n%s\n%s", code, out, errOut)
	}
	check("incremental")
	// The audit reads the bucket back: in sync, but for the one extra
	// object, not resourcesync's.
	code, out, errOut := runCLI(t, "sync", "--audit", "--progress", "quiet", "--state", state, base, loc)
	if code != exitProblems || !strings.Contains(out, "7 in sync, 0 missing, 0 changed, 1 extra") || !strings.Contains(out, "extra         theirs.txt") {
		t.Fatalf("audit: exit %d\n%s\n%s", code, out, errOut)
	}

}

// TestSyncForceIntoBucket: into a bucket, an object resourcesync did not
// write is refused; with --force it is copied to KEY.resourcesync-old
// first, then replaced; a KEY.resourcesync-old already there refuses it.
// Read back by aws. --exclude leaves an object out of the mirror.
func TestSyncForceIntoBucket(t *testing.T) {
	srv := s3test.Shared(t)
	s3test.SkipAWS(t)
	srv.SetEnv(t)
	syncLoopbackOnly(t)
	bucket := srv.NewBucket(t)
	dir := t.TempDir()
	for _, n := range []string{"a.txt", "b.txt", "skip.tmp"} {
		os.WriteFile(filepath.Join(dir, n), []byte("the Source's "+n), 0o644)
	}
	base, _ := serveDir(t, dir)
	srv.Put(t, bucket, "m/a.txt", []byte("someone else's a"))
	srv.Put(t, bucket, "m/b.txt", []byte("someone else's b"))
	srv.Put(t, bucket, "m/b.txt.resourcesync-old", []byte("an older b"))
	loc, state := "s3://"+bucket+"/m", t.TempDir()
	sync := func(extra ...string) (int, string) {
		args := append(append([]string{"sync", "--progress", "quiet", "--state", state, "--exclude", "*.tmp"}, extra...), base, loc)
		code, out, errOut := runCLI(t, args...)
		return code, out + errOut
	}
	if code, out := sync(); code != exitProblems || !strings.Contains(out, "--force") {
		t.Fatalf("without --force: exit %d\n%s", code, out)
	}
	code, out := sync("--force")
	if code != exitProblems || !strings.Contains(out, "replaced 1") || !strings.Contains(out, "b.txt.resourcesync-old is taken") {
		t.Fatalf("--force: exit %d\n%s", code, out)
	}
	for k, want := range map[string]string{"a.txt": "the Source's a.txt", "a.txt.resourcesync-old": "someone else's a",
		"b.txt": "someone else's b", "b.txt.resourcesync-old": "an older b"} {
		if got := string(srv.AWS(t, nil, "s3", "cp", "s3://"+bucket+"/m/"+k, "-")); got != want {
			t.Errorf("%s holds %q, want %q", k, got, want)
		}
	}
	if out := string(srv.AWS(t, nil, "s3", "ls", "--recursive", "s3://"+bucket+"/m/")); strings.Contains(out, "skip.tmp") {
		t.Errorf("--exclude *.tmp: skip.tmp in the bucket:\n%s", out)
	}
}
