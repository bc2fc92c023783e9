package scan_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/local"
	"github.com/resourcesync-go/resourcesync/storage/mem"
)

// memContent returns a fresh mem Store and its Content.
func memContent(t *testing.T) (*mem.Store, storage.Content) {
	t.Helper()
	name := "scan-" + t.Name()
	mem.Forget(name)
	t.Cleanup(func() { mem.Forget(name) })
	s := mem.Open(name)
	c, err := storage.OpenContent(context.Background(), s.Location())
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func putOld(t *testing.T, s *mem.Store, key, data string) {
	t.Helper()
	if _, err := s.PutObject(key, mem.Object{Data: []byte(data), ModTime: old}); err != nil {
		t.Fatal(err)
	}
}

// inventory returns "path sha256-prefix" of every record.
func inventory(t *testing.T, db store.Store) []string {
	t.Helper()
	var out []string
	for r, err := range db.ResourcesIn(context.Background(), "", "") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %x", r.Path, r.SHA256[:4]))
	}
	return out
}

func want(kv ...string) []string {
	var out []string
	for i := 0; i < len(kv); i += 2 {
		sum := sha256.Sum256([]byte(kv[i+1]))
		out = append(out, fmt.Sprintf("%s %x", kv[i], sum[:4]))
	}
	slices.Sort(out)
	return out
}

// A Scanner on a Content lists it, merges with the inventory and reads
// only new and changed objects; skip rules apply to keys as to paths.
func TestContentScan(t *testing.T) {
	ctx := context.Background()
	ms, c := memContent(t)
	db := openDB(t, t.TempDir()+"/state.db")
	sc, err := scan.New(scan.Options{Content: c, Store: db, Skip: []string{"*.tmp", "cache"}, RefuseEmptyRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"a.txt", "A"}, {"a/b", "B"}, {"a0", "Z"}, {"x.tmp", "skip"}, {"cache/y", "skip"}, {".hidden", "h"}, {"d/.git/c", "h"}, {"ü/日本.txt", "U"}} {
		putOld(t, ms, kv[0], kv[1])
	}
	st, err := sc.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.BaselineDone || st.Created != 4 || st.Hashed != 4 {
		t.Fatalf("baseline: %+v", st)
	}
	if got, w := inventory(t, db), want("a.txt", "A", "a/b", "B", "a0", "Z", "ü/日本.txt", "U"); !slices.Equal(got, w) {
		t.Fatalf("inventory %q, want %q", got, w)
	}
	r, err := db.Get(ctx, "a.txt")
	if err != nil || r.Type != "text/plain; charset=utf-8" || !r.LastMod.Equal(old) || r.Inode == 0 {
		t.Fatalf("record: %+v, %v", r, err)
	}

	// Unchanged: nothing is opened.
	opens := ms.Opens()
	st, err = sc.Scan(ctx)
	if err != nil || st.Unchanged != 4 || st.Hashed != 0 || ms.Opens() != opens {
		t.Fatalf("rescan: %+v, %v; %d opens", st, err, ms.Opens()-opens)
	}

	// Change, add, delete, and put the same bytes again (a new mtime,
	// the same Version: not even read).
	putOld(t, ms, "a/b", "B2")
	putOld(t, ms, "new", "N")
	ms.Delete("a0")
	if _, err := ms.PutObject("a.txt", mem.Object{Data: []byte("A"), ModTime: old.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	seq := lastSeq(t, db)
	st, err = sc.Scan(ctx)
	if err != nil || st.Created != 1 || st.Updated != 1 || st.Deleted != 1 || st.Hashed != 2 {
		t.Fatalf("changes: %+v, %v", st, err)
	}
	if got, w := journalSince(t, db, seq), []string{"created new", "deleted a0", "updated a/b"}; !slices.Equal(got, w) {
		t.Fatalf("journal %q, want %q", got, w)
	}
	if got, w := inventory(t, db), want("a.txt", "A", "a/b", "B2", "new", "N", "ü/日本.txt", "U"); !slices.Equal(got, w) {
		t.Fatalf("inventory %q, want %q", got, w)
	}

	// An emptied Content is refused: nothing is deleted.
	for _, k := range ms.Keys() {
		if k != "x.tmp" { // a skipped key does not count
			ms.Delete(k)
		}
	}
	_, err = sc.Scan(ctx)
	if !errors.Is(err, scan.ErrEmptyRoot) {
		t.Fatalf("scan of an emptied Content: %v, want ErrEmptyRoot", err)
	}
	if got := inventory(t, db); len(got) != 4 {
		t.Fatalf("inventory after a refused scan: %q", got)
	}
}

// A recent object's Version is not trusted where it is made of the mtime
// (a local file rewritten within its mtime tick keeps it: a Content that
// is storage.MtimeVersioned): it is read again by the next scan, once.
// (A Version made from the bytes is trusted: TestContentFutureMtime.)
func TestContentScanRacy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, err := local.NewContent(dir)
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t, t.TempDir()+"/state.db")
	sc, err := scan.New(scan.Options{Content: c, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "now"), []byte("x"), 0o644); err != nil { // mtime: now
		t.Fatal(err)
	}
	if _, err := sc.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(scan.RacyWindow + 10*time.Millisecond)
	st, err := sc.Scan(ctx)
	if err != nil || st.Hashed != 1 || st.Touched != 1 {
		t.Fatalf("second scan: %+v, %v", st, err)
	}
	st, err = sc.Scan(ctx)
	if err != nil || st.Hashed != 0 || st.Unchanged != 1 {
		t.Fatalf("third scan: %+v, %v", st, err)
	}
}

func lastSeq(t *testing.T, db store.Store) uint64 {
	t.Helper()
	ss, err := db.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ss.LastSeq
}

// Many objects (more than a listing page and an inventory page): the
// rescan opens none, and changes spread over them are all found.
func TestContentScanMany(t *testing.T) {
	ctx := context.Background()
	ms, c := memContent(t)
	db := openDB(t, t.TempDir()+"/state.db")
	sc, err := scan.New(scan.Options{Content: c, Store: db, RefuseEmptyRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	for i := range n {
		putOld(t, ms, fmt.Sprintf("d%d/k%04d", i%7, i), fmt.Sprint(i))
	}
	if st, err := sc.Scan(ctx); err != nil || st.Created != n {
		t.Fatalf("baseline: %+v, %v", st, err)
	}
	opens := ms.Opens()
	if st, err := sc.Scan(ctx); err != nil || st.Unchanged != n || ms.Opens() != opens {
		t.Fatalf("rescan: %+v, %v; %d opens", st, err, ms.Opens()-opens)
	}
	changed, deleted := 0, 0
	for i := 0; i < n; i += 11 {
		putOld(t, ms, fmt.Sprintf("d%d/k%04d", i%7, i), "changed")
	}
	for i := 0; i < n; i++ {
		if i%13 == 5 {
			ms.Delete(fmt.Sprintf("d%d/k%04d", i%7, i))
			deleted++
		} else if i%11 == 0 {
			changed++
		}
	}
	st, err := sc.Scan(ctx)
	if err != nil || st.Deleted != deleted || st.Updated != changed || st.Touched != 0 || ms.Opens()-opens != int64(changed) {
		t.Fatalf("changes: %+v, %v; %d opens for %d changed", st, err, ms.Opens()-opens, changed)
	}
	if got := len(inventory(t, db)); got != n-deleted {
		t.Fatalf("inventory holds %d, want %d", got, n-deleted)
	}
}

// badKeys is a Content that lists keys no Content should (an S3
// directory marker, a traversal) beside a good one.
type badKeys struct{ storage.Content }

func (b badKeys) List(ctx context.Context, after string, fn func(storage.Info) error) error {
	for _, k := range []string{"../up", "a//b", "dir/", "good", "x/../../y"} {
		if k > after {
			if err := fn(storage.Info{Key: k, Size: 1, ModTime: old, Version: "v"}); err != nil {
				return err
			}
		}
	}
	return nil
}

// A key that is not valid is never published, whatever a Content lists.
func TestContentScanInvalidKeys(t *testing.T) {
	ms, c := memContent(t)
	putOld(t, ms, "good", "g")
	db := openDB(t, t.TempDir()+"/state.db")
	sc, err := scan.New(scan.Options{Content: badKeys{c}, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sc.Scan(context.Background())
	if err != nil || st.Created != 1 || st.Skipped != 4 {
		t.Fatalf("scan: %+v, %v", st, err)
	}
	if got, w := inventory(t, db), want("good", "g"); !slices.Equal(got, w) {
		t.Fatalf("inventory %q, want %q", got, w)
	}
}
