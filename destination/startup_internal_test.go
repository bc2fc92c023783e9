package destination

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestSeenSetSpills: the set answers the same in memory and once it has
// spilled to its database, which it creates only then, and removes.
func TestSeenSetSpills(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		spill bool
	}{
		{"in memory", 1000, false},
		{"at the bound", seenInMemory - 1, false},
		{"spilled", seenInMemory + seenBatch + 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := newSeen(dir)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.n {
				if err := s.add(fmt.Sprintf("p/%06d", i), fmt.Sprintf("u%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			// A claim of a path named already returns its URI; a
			// released one may be claimed again.
			if prev, err := s.claim("p/000007", "other"); err != nil || prev != "u7" {
				t.Fatalf("claim of a named path: %q, %v", prev, err)
			}
			if err := s.add("p/000008", released); err != nil {
				t.Fatal(err)
			}
			if prev, err := s.claim("p/000008", "again"); err != nil || prev != "" {
				t.Fatalf("claim of a released path: %q, %v", prev, err)
			}
			if err := s.flush(); err != nil {
				t.Fatal(err)
			}
			for _, i := range []int{0, 1, tc.n / 2, tc.n - 1} {
				if want := fmt.Sprintf("u%d", i); i != 8 && s.get(fmt.Sprintf("p/%06d", i)) != want {
					t.Errorf("get p/%06d = %q, want %q", i, s.get(fmt.Sprintf("p/%06d", i)), want)
				}
			}
			if s.has("p/999999") || !s.has("p/000000") || s.get("p/000008") != "again" {
				t.Errorf("has/get wrong after %d adds", tc.n)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*"))
			if spilled := len(files) > 0; spilled != tc.spill {
				t.Errorf("%d paths: files in the scratch directory %q, want a database: %v", tc.n, files, tc.spill)
			}
			s.close()
			if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) > 0 {
				t.Errorf("left after close: %q", files)
			}
		})
	}
}

// TestFreshState: a new state is fresh until its first commit that is
// not setup; an existing state with a record never is, and an existing
// current state's open commits nothing.
func TestFreshState(t *testing.T) {
	dest := t.TempDir()
	st, err := openState(dest, false)
	if err != nil {
		t.Fatal(err)
	}
	syncs := func(setup bool) (nosync bool) {
		t.Helper()
		if err := st.commit(setup, func(tx *bolt.Tx) error {
			nosync = tx.DB().NoSync
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return nosync
	}
	if !st.fresh || !syncs(true) {
		t.Fatal("a new state's setup commit is synced")
	}
	if err := st.setMeta("base", "http://example.org/"); err != nil {
		t.Fatal(err)
	}
	if v, _ := st.meta("base"); v != "http://example.org/" || !st.metaPending("base") {
		t.Fatalf("meta before its commit: %q", v)
	}
	if syncs(false) {
		t.Fatal("a commit that is not setup is not synced")
	}
	if st.fresh || syncs(true) || st.metaPending("base") {
		t.Fatal("setup commit after the first durable one is not synced, or the meta value was not written")
	}
	if err := st.apply([]stateOp{{uri: "http://example.org/a", rec: &Record{Set: "s", Path: "a"}}}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	before := syncedCommits.Load()
	st, err = openState(dest, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := syncedCommits.Load() - before; n != 0 {
		t.Errorf("opening a current state made %d commits", n)
	}
	if v, _ := st.meta("base"); v != "http://example.org/" {
		t.Errorf("meta after reopening: %q", v)
	}
	if st.fresh || syncs(true) {
		t.Error("a state with a record is fresh")
	}
}

// TestCreateState: a state written from the image opens as bbolt wrote
// it, current (nothing to commit); an existing file is never written.
func TestCreateState(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.db")
	createState(p)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no image on this system: %v", err) // only Linux writes one
	}
	db, err := bolt.Open(p, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &state{db: db}
	if !st.current() || !st.empty() {
		t.Errorf("image: current %v, empty %v", st.current(), st.empty())
	}
	db.Close()
	other := filepath.Join(dir, "other.db")
	os.WriteFile(other, nil, 0o600)
	createState(other)
	if fi, _ := os.Stat(other); fi.Size() != 0 {
		t.Errorf("an existing file was written: %d bytes", fi.Size())
	}
}
