package publish_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/storage/mem"
)

// TestUploadRecordBoundToTarget: the record lives in the Source's state
// (STATE/out.uploaded), which does not change with --out. A user who
// moves publishing to another bucket (or prefix) keeps the state, so the
// record of the first bucket said every unchanged document was sent: the
// new bucket got only what changed since, a Source with no Source
// Description nor Capability List. And back on the first bucket, the
// objects Upload wrote there are still its own to update. Each Target's
// record is its own.
func TestUploadRecordBoundToTarget(t *testing.T) {
	ctx := context.Background()
	dir, rec := t.TempDir(), filepath.Join(t.TempDir(), "out.uploaded")
	for rel, s := range map[string]string{".well-known/resourcesync": "sd", ".resourcesync/capabilitylist.xml": "cl", ".resourcesync/a.xml": "a1"} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	name := t.Name()
	store := mem.Open(name)
	t.Cleanup(func() { mem.Forget(name) })
	a, b := store.Target("a/"), store.Target("b/")
	if st, err := publish.Upload(ctx, dir, a, rec, nil); err != nil || st.Written != 3 {
		t.Fatalf("into a: %+v %v", st, err)
	}
	st, err := publish.Upload(ctx, dir, b, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{".well-known/resourcesync", ".resourcesync/capabilitylist.xml", ".resourcesync/a.xml"} {
		if _, _, ok := store.Get("b/" + k); !ok {
			t.Errorf("into b, after a (%+v): %s not sent", st, k)
		}
	}
	// Back to a, with a document rewritten: a's object is updated.
	os.WriteFile(filepath.Join(dir, ".resourcesync", "a.xml"), []byte("a2 longer"), 0o644)
	if st, err := publish.Upload(ctx, dir, a, rec, nil); err != nil || st.NotOurs != 0 {
		t.Errorf("back into a: %+v %v", st, err)
	}
	if o, _, _ := store.Get("a/.resourcesync/a.xml"); string(o.Data) != "a2 longer" {
		t.Errorf("back into a: a.xml is %q", o.Data)
	}
}
