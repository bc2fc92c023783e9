package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFileLocations: DIR and DEST written as a plain path, file:///abs or
// file:rel name the same directory (storage.LocalPath), never a directory
// literally called "file:rel".
func TestFileLocations(t *testing.T) {
	tmp := t.TempDir()
	t.Chdir(tmp)
	if err := os.MkdirAll("data", 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("data", "a.txt"), []byte("a\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	for i, loc := range []string{"file:data", "file://" + filepath.ToSlash(filepath.Join(tmp, "data"))} {
		out := filepath.Join(tmp, "out"+string(rune('0'+i)))
		code, stdout, stderr := runCLI(t, "publish", "--base-url", "http://127.0.0.1:1/", "--out", out, loc)
		if code != 0 {
			t.Fatalf("publish %s: exit %d\n%s\n%s", loc, code, stdout, stderr)
		}
		if _, err := os.Stat(filepath.Join(out, ".resourcesync", "default", "resourcelist.xml")); err != nil {
			t.Errorf("publish %s wrote no Resource List: %v", loc, err)
		}
	}
	if _, err := os.Stat("file:data"); err == nil {
		t.Error(`a directory "file:data" was made`)
	}
}
