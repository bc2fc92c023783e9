package simulate

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func snapshot(t *testing.T, dir string) map[string]string {
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			m[rel] = string(b)
		}
		return nil
	})
	return m
}

// TestDeterministic: the same seed gives the same files and operations.
func TestDeterministic(t *testing.T) {
	run := func(seed uint64) ([]Op, map[string]string) {
		dir := t.TempDir()
		c, err := New(dir, 50, seed)
		if err != nil {
			t.Fatal(err)
		}
		var ops []Op
		for i := 0; i < 300; i++ {
			op, err := c.Step()
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, op)
		}
		if got := len(snapshot(t, dir)); got != c.Len() {
			t.Fatalf("%d files on disk, %d live", got, c.Len())
		}
		return ops, snapshot(t, dir)
	}
	ops1, files1 := run(7)
	ops2, files2 := run(7)
	ops3, _ := run(8)
	if !reflect.DeepEqual(ops1, ops2) || !reflect.DeepEqual(files1, files2) {
		t.Error("same seed, different result")
	}
	if reflect.DeepEqual(ops1, ops3) {
		t.Error("different seeds, same operations")
	}
	kinds := map[string]int{}
	for _, op := range ops1 {
		kinds[string(op.Change)]++
	}
	if kinds["created"] == 0 || kinds["updated"] == 0 || kinds["deleted"] == 0 {
		t.Errorf("operations %v lack a kind", kinds)
	}
}
