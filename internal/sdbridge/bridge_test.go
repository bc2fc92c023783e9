package sdbridge

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/store"
	"github.com/resourcesync-go/resourcesync/internal/store/bolt"
	"github.com/resourcesync-go/resourcesync/rs"
)

// coll is a collection whose fragments are held in a map, with its state in
// a real bolt store: the bridge reads both as it reads a server's.
type coll struct {
	st    store.Store
	frags map[string]string
	now   time.Time
}

func (c *coll) Name() string       { return "c" }
func (c *coll) Store() store.Store { return c.st }
func (c *coll) FragmentNT(_ context.Context, iri string) ([]byte, error) {
	return []byte(c.frags[iri]), nil
}

// set changes the collection as a server would: the fragment map and a
// journal record in one step (baseline when first is true).
func (c *coll) set(t *testing.T, iri, frag string, baseline bool) {
	t.Helper()
	c.now = c.now.Add(time.Second)
	_, had := c.frags[iri]
	kind := rs.Created
	switch {
	case frag == "":
		kind = rs.Deleted
		delete(c.frags, iri)
	case had:
		kind = rs.Updated
		c.frags[iri] = frag
	default:
		c.frags[iri] = frag
	}
	b := store.Batch{Baseline: baseline, Changes: []store.Change{{Kind: kind, Time: c.now, Resource: store.Resource{Path: iri, Size: int64(len(frag)), LastMod: c.now}}}}
	if _, _, err := c.st.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

// tree returns the set directory's files and contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return out
}

func want(c *coll) map[string]string {
	out := map[string]string{}
	for iri, f := range c.frags {
		out[Path(iri)] = f
	}
	return out
}

func check(t *testing.T, b *Bridge, c *coll, step string) {
	t.Helper()
	if _, _, err := b.Sync(context.Background(), c); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	got, w := tree(t, b.SetDir("c")), want(c)
	for p, f := range w {
		if got[p] != f {
			t.Errorf("%s: %s = %q, want %q", step, p, got[p], f)
		}
	}
	for p := range got {
		if _, ok := w[p]; !ok {
			t.Errorf("%s: stray file %s", step, p)
		}
	}
}

func TestBridgeFollowsJournal(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, "state.db"), &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := &coll{st: st, frags: map[string]string{}, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := New(filepath.Join(dir, "bridge"))
	c.set(t, "http://ex/a", "<http://ex/a> <http://ex/p> \"1\" .\n", true)
	c.set(t, "http://ex/b?x=1#f", "<http://ex/b?x=1#f> <http://ex/p> \"2\" .\n", true)
	// A stray file from an earlier run must go on the first sync.
	os.MkdirAll(filepath.Join(b.SetDir("c"), "zz"), 0o777)
	os.WriteFile(filepath.Join(b.SetDir("c"), "zz", "old.nt"), []byte("x"), 0o666)
	check(t, b, c, "baseline")
	c.set(t, "http://ex/a", "<http://ex/a> <http://ex/p> \"changed\" .\n", false)
	c.set(t, "http://ex/c", "<http://ex/c> <http://ex/p> _:x .\n_:x <http://ex/q> \"n\" .\n", false)
	c.set(t, "http://ex/b?x=1#f", "", false)
	check(t, b, c, "changes")
	// Deleted and re-created between two syncs: the file is there.
	c.set(t, "http://ex/c", "", false)
	c.set(t, "http://ex/c", "<http://ex/c> <http://ex/p> \"back\" .\n", false)
	check(t, b, c, "delete+create")
	// A lost cursor rebuilds from the inventory.
	if err := st.PutMeta(context.Background(), MetaCursor, nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(b.SetDir("c"), Path("http://ex/gone")), []byte("x"), 0o666)
	check(t, b, c, "rebuild")
	// Nothing left in the temporary directory.
	if left, _ := os.ReadDir(filepath.Join(dir, "bridge", "tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestPath(t *testing.T) {
	long := "http://ex/" + strings.Repeat("x", 300)
	seen := map[string]string{}
	for _, iri := range []string{"http://ex/a", "http://ex/a/", "http://ex/A", "http://ex/a b", "urn:x:1", ".hidden", "", long, long + "y", "http://ex/ü"} {
		p := Path(iri)
		if prev, ok := seen[p]; ok {
			t.Errorf("%q and %q share path %s", prev, iri, p)
		}
		seen[p] = iri
		seg := strings.Split(p, "/")
		if len(seg) != 2 || len(seg[1]) > 255 || strings.HasPrefix(seg[1], ".") || !strings.HasSuffix(p, ".nt") || slices.Contains(seg, "..") {
			t.Errorf("Path(%q) = %q: not one short, visible file name below one directory", iri, p)
		}
	}
}
