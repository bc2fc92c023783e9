package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/s3test"
)

// awsCopy copies the objects under loc (s3://BUCKET/PREFIX) into a new
// directory with the independent client and returns it.
func awsCopy(t *testing.T, srv *s3test.Server, loc string) string {
	t.Helper()
	d := t.TempDir()
	srv.AWS(t, nil, "s3", "cp", "--recursive", "--only-show-errors", loc+"/", d)
	return d
}

// readTree reads the files under root, but a mirror's state directory.
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".resourcesync" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func treeDiff(want, got map[string]string) string {
	var diff []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			diff = append(diff, fmt.Sprintf("%s: %d bytes (present %v), want %d", k, len(g), ok, len(v)))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, "extra "+k)
		}
	}
	sort.Strings(diff)
	return strings.Join(diff, "\n")
}
