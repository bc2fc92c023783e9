package fetch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInstallParents: installs sharing a Parents land where they belong
// when the directory held is removed and made again between them, and
// never write through a symbolic link swapped in for it.
func TestInstallParents(t *testing.T) {
	root := t.TempDir()
	dest := filepath.Join(root, "dest")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(dest, "a"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d, err := OpenDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var c Parents
	defer c.Close()
	install := func(rel string) error {
		_, err := Install(strings.NewReader(rel), Request{Path: filepath.Join(dest, rel), Dir: d, NoSync: true, Parents: &c})
		return err
	}
	want := func(rel string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dest, rel))
		if err != nil || string(b) != rel {
			t.Fatalf("%s: %q, %v; want its own name as content", rel, b, err)
		}
	}
	for _, step := range []struct {
		name   string
		before func() error
		rel    string
	}{
		{"first", nil, "a/x"},
		{"same directory", nil, "a/y"},
		{"another directory", func() error { return os.MkdirAll(filepath.Join(dest, "b"), 0o755) }, "b/x"},
		{"back", nil, "a/z"},
		{"directory removed", func() error { return os.RemoveAll(filepath.Join(dest, "a")) }, "a/w"},
		{"held again", nil, "a/s"},
		{"directory removed and made again", func() error {
			if err := os.RemoveAll(filepath.Join(dest, "a")); err != nil {
				return err
			}
			return os.Mkdir(filepath.Join(dest, "a"), 0o755)
		}, "a/v"},
	} {
		if step.before != nil {
			if err := step.before(); err != nil {
				t.Fatal(err)
			}
		}
		if err := install(step.rel); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		want(step.rel)
	}
	// A link swapped in for the directory held: nothing is written
	// outside, whichever way the install goes.
	if err := os.Rename(filepath.Join(dest, "a"), filepath.Join(dest, "a.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dest, "a")); err != nil {
		t.Fatal(err)
	}
	if err := install("a/u"); err != nil && !errors.Is(err, ErrSymlinkInDest) {
		t.Fatalf("through a link: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("written through a symbolic link: %v", ents)
	}
	// The next directory is resolved afresh: the link is refused.
	if err := install("b/y"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := install("a/t"); !errors.Is(err, ErrSymlinkInDest) {
		t.Fatalf("a/t through a link: %v, want ErrSymlinkInDest", err)
	}
}

// TestInstallRacesEmptyParents: an install into directories it has to
// create succeeds while another goroutine removes the empty directories
// on its way (a deletion's RemoveEmptyParents in the same pass, found by
// TestModel as "mkdirat a/b/c d: no such file or directory").
func TestInstallRacesEmptyParents(t *testing.T) {
	dest := t.TempDir()
	d, err := OpenDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			d.RemoveEmptyParents(filepath.Join(dest, "a", "b", "c", "gone"))
			time.Sleep(20 * time.Microsecond)
		}
	}()
	defer func() { close(stop); <-done }()
	for i := range 2000 {
		rel := filepath.Join("a", "b", "c", "f")
		if _, err := Install(strings.NewReader("x"), Request{Path: filepath.Join(dest, rel), Dir: d, NoSync: true}); err != nil {
			t.Fatalf("install %d: %v", i, err)
		}
		if err := os.Remove(filepath.Join(dest, rel)); err != nil {
			t.Fatal(err)
		}
	}
}
